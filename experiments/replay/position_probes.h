// Linear probes for position in a trained model's hidden states (the residual stream entering
// each block, and the last block's output), read like with like (analysis/position_probes.h): do
// hidden states carry position in a way that extrapolates (NoPE's implicit position, Kazemnejad et
// al. 2023, Theorem 1), and do they leave their training distribution? From the run's evaluation
// stream (replayed, teacher-forced inputs): the fit set is up to kFitSequences sequences spread
// over the evaluation lengths <= N (so that the separator sits at several positions), the test set
// min(eval.samples, 64) sequences at the longest evaluation length. Each row's segment (input,
// separator, answer; input and output slots for the encoder layout) is its role in the sequence.
#pragma once

#include <string>
#include <vector>

#include "analysis/position_probes.h"
#include "nn/io/hdf5.h"

namespace lexp {

struct PositionProbes {
  static constexpr int kFitSequences = 128;
  int train_length = 0, train_tokens = 0, long_length = 0, long_tokens = 0;
  int fit_sequences = 0, test_sequences = 0;
  std::vector<int> fit_lengths;
  std::vector<PositionProbeReading> residual;  // [L+1]
};

PositionProbes MeasurePositionProbes(const std::string& run_file);

// Writes /analysis/position_probes (replacing an earlier one); returns report lines.
std::string WritePositionProbes(const PositionProbes& p, const h5::Group& analysis);

}  // namespace lexp
