// `lexp theory`: the closed-form side of the analyses without training (analysis/rope_theory.h),
// into one HDF5 file that figure 07 draws: the critical dimension and pair periods for (d, T_train,
// base) with a table over d and T_train, the base-scaling law (T_extra over bases, the base for a
// target length, the small-base critical values), RoFormer's decay bound, and the attention
// expectation proxy for RoPE, xPos and optionally a RoPE scaling rule, with attention resolution,
// and the Monte-Carlo expectation with standard errors next to its closed form.
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
  // Monte-Carlo expectation (analysis/expectation_monte_carlo.h) at every distance
  // 0..mc_max_distance.
  long mc_samples = 1000;
  long mc_max_distance = 2048;
  std::string mc_distribution = "gaussian";  // gaussian | uniform
  double mc_mean = 0, mc_sd = 1;
  bool mc_independent = false;  // q and k independent instead of q = k
  uint64_t mc_seed = 1;
  std::string out_file = "data/theory/theory.h5";
};

// Writes the file; *report receives a short text summary (critical dimension, T_extra, timings).
std::string WriteTheory(const TheoryOptions& o, std::string* report);

}  // namespace lexp
