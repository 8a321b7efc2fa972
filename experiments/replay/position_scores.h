// Where in a long sequence a trained model fails, by replaying its evaluation stream
// (experiments/replay/model_replay.h; teacher forcing, the same sequences as /eval) at every
// evaluation length:
//  * loss and token accuracy by absolute position t of the scored target (over eval.samples
//    sequences): failure that starts at the training length points at unseen positions, failure
//    spread over the whole sequence at something else;
//  * the last window of W = train_tokens tokens scored three ways: with the whole sequence before
//    it ("last window"), alone with the position ids the run's scheme gives a W-token sequence
//    ("window only": 0..W-1 for consecutive positions, a fresh draw for randomized ones; seen
//    positions, W keys, in distribution), and alone with its original position ids ("window
//    shifted": the positions of a long sequence, W keys). Last window against window shifted
//    isolates the extra keys (attention dilution); window shifted against window only isolates the
//    unseen positions (nothing for a purely relative encoding). The window alone is a fair input
//    only for a stationary source (Task::Stationary: a language-modelling source, any window of
//    which is distributed like a training sequence); a task whose targets answer a prompt (copy,
//    passkey) or a query that may lie before the window (MQAR) cannot be scored from the window
//    alone, so for it the two window-alone scores are not computed (NaN) and the reason is
//    recorded (window_split_not_applicable).
#pragma once

#include <string>
#include <vector>

#include "nn/io/hdf5.h"

namespace lexp {

struct PositionScores {
  int train_tokens = 0, window = 0;
  std::string window_split_not_applicable;  // why, for a task that is not stationary ("": applies)
  std::vector<int> lengths, sequence_lengths;  // [E]
  uint64_t max_tokens = 0;
  std::vector<double> loss_by_position, accuracy_by_position, scored_by_position;  // [E, M]
  // [E]: every scored target, and the scored targets of the last window under the three inputs.
  std::vector<double> loss, accuracy;
  std::vector<double> last_window_loss, last_window_accuracy;
  std::vector<double> window_only_loss, window_only_accuracy;
  std::vector<double> window_shifted_loss, window_shifted_accuracy;
};

PositionScores MeasurePositionScores(const std::string& run_file);

// Writes /analysis/position_scores (replacing an earlier one); returns report lines.
std::string WritePositionScores(const PositionScores& p, const h5::Group& analysis);

}  // namespace lexp
