// The gradient receptive field of a trained model (the effective-context measure of the length-
// extrapolation survey, Zhao et al. 2023, arXiv:2312.17044): how much a scored prediction depends
// on the input d positions away. For each evaluation length, over min(eval.samples, 32) sequences
// of the run's evaluation stream (teacher-forced inputs, the sequences /eval scored), at up to
// kRowsPerSequence of each sequence's graded target rows, evenly spaced (for a task with an
// answer: its answer tokens, the end token's row left out, so the reading is about writing the
// answer and not about deciding where it stops; for a language-modelling source: its scored
// tokens): y = ln p(target | inputs) at row i, its gradient with respect to the embedded input at
// every position j (the token embedding plus an absolute encoding's vector), g_j = ||dy/dx_j||_2,
// normalised to shares g_j / sum_k g_k and placed at the distance d = i - j from that row (|i - j|
// for the encoder layout, whose rows also read later positions). A sequence's share curve is the
// mean over its rows; the stored curve is the mean over sequences, with the sd across them. The
// effective context is the smallest D with sum_{d <= D} share_d >= 0.5 (and 0.9), from the mean
// curve, and its sd over sequences from each sequence's own curve.
#pragma once

#include <string>
#include <vector>

#include "nn/io/hdf5.h"

namespace lexp {

struct ReceptiveField {
  static constexpr int kRowsPerSequence = 8;
  int train_tokens = 0, samples = 0;
  bool bidirectional = false;
  bool answer_rows = false;                    // rows are an answer's tokens (end token's left out)
  std::string rows_used;                       // which rows were differentiated, in words
  std::vector<int> lengths, sequence_lengths;  // [E]
  uint64_t max_tokens = 0;
  std::vector<double> rows;             // [E, kRowsPerSequence] of the first sequence (NaN: none)
  std::vector<double> share, share_sd;  // [E, M] by distance d (NaN beyond the length)
  std::vector<double> context50, context90;  // [E] tokens, from the mean curve
  std::vector<double> context50_sd;          // [E] tokens, sd over sequences
  std::vector<double> share_beyond_window;   // [E] share at d >= train_tokens
};

ReceptiveField MeasureReceptiveField(const std::string& run_file);

// Writes /analysis/receptive_field (replacing an earlier one); returns report lines.
std::string WriteReceptiveField(const ReceptiveField& r, const h5::Group& analysis);

}  // namespace lexp
