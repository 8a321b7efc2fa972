// `lexp theory`: the closed-form side of the analyses without training (analysis/rope_theory.h),
// into one HDF5 file that figure 07 draws: the critical dimension and pair periods for (d, T_train,
// base) with a table over d and T_train, the base-scaling law (T_extra over bases, the base for a
// target length, the small-base critical values), RoFormer's decay bound, and the attention
// expectation proxy for RoPE, xPos and optionally a RoPE scaling rule, with attention resolution.
#pragma once

#include <string>

namespace lexp {

struct TheoryOptions {
  int head_dim = 128;
  double base = 1e4;
  double train_length = 4096;
  long max_distance = 1'000'000;  // of the expectation curves
  double xpos_scale_base = 512;
  double xpos_gamma = 0.4;
  std::string scale;  // optional RoPE rule "RULE[:key=value,...]" for a third expectation curve
  std::string out_file = "data/theory/theory.h5";
};

// Writes the file; *report receives a short text summary (critical dimension, T_extra, timings).
std::string WriteTheory(const TheoryOptions& o, std::string* report);

}  // namespace lexp
