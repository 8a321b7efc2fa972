// The gradient receptive field of a trained model (the effective-context measure of the length-
// extrapolation survey, Zhao et al. 2023, arXiv:2312.17044): how much the output at the last
// position i depends on the input at i - d. For each evaluation length, over min(eval.samples, 32)
// sequences of the run's evaluation stream: y = ln p(top token | prefix) at the last position, its
// gradient with respect to the embedded input at every position j (the token embedding plus an
// absolute encoding's vector), g_j = ||dy/dx_j||_2, normalised to shares g_j / sum_k g_k, and
// averaged over sequences against the distance d = i - j. The effective context is the smallest D
// with sum_{d <= D} share_d >= 0.5 (and 0.9): the whole model's reach, where an attention map's
// attended distance covers one layer and head.
#pragma once

#include <string>
#include <vector>

#include "nn/io/hdf5.h"

namespace lexp {

struct ReceptiveField {
  int train_tokens = 0, samples = 0;
  std::vector<int> lengths, sequence_lengths;  // [E]
  uint64_t max_tokens = 0;
  std::vector<double> share;                 // [E, M] by distance d (NaN beyond the length)
  std::vector<double> context50, context90;  // [E] tokens
  std::vector<double> share_beyond_window;   // [E] share at d >= train_tokens
};

ReceptiveField MeasureReceptiveField(const std::string& run_file);

// Writes /analysis/receptive_field (replacing an earlier one); returns report lines.
std::string WriteReceptiveField(const ReceptiveField& r, const h5::Group& analysis);

}  // namespace lexp
