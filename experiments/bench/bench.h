// `lexp bench`: times full training steps (forward, backward, AdamW) and evaluation forward passes
// of four reference configurations (T, S: training; E512, E2048: evaluation; sizes in bench.cc)
// with RoPE and ALiBi, and optionally runs the project's PyTorch reference
// (experiments/bench/reference_torch.py) in the same invocation, alternating with lexp, to print
// the speed ratio.
//
// FLOPs (matmuls only, multiply-add = 2): N_mm = L(4C^2 + 2CF) + CV;
// forward = 2 N_mm B T + 4 L B T^2 C (full T x T, as the reference counts it); training = 3 x
// forward.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace lexp {

struct BenchOptions {
  std::vector<std::string> configs = {"T", "S", "E512", "E2048"};
  std::vector<std::string> positions = {"rope", "alibi"};
  int steps = 0;  // timed steps per measurement (0 = per-config default)
  int warmup = 2;
  int rounds = 2;  // alternations of lexp and the reference with --compare
  bool compare = false;
  // fp32, or bf16: lexp's model.precision = "bf16" timed beside its fp32 (each round), and with
  // --compare the reference under PyTorch's bf16 autocast.
  std::string precision = "fp32";
  std::string python = "/usr/bin/python3";
  std::string reference_script;  // default: <source dir>/experiments/bench/reference_torch.py
  std::string out_file;          // HDF5 results (default data/bench/bench-<time>.h5)
  int threads = 0;
  std::function<void(const std::string&)> print;
};

struct BenchResult {
  std::string config, pos, impl;   // impl: lexp | torch
  std::string precision = "fp32";  // fp32 | bf16
  int B = 0, T = 0, steps = 0;
  double median_s = 0, min_s = 0, max_s = 0, tokens_per_s = 0, gflops = 0, peak_rss_mib = 0;
  std::string blas_core;  // torch: the OpenBLAS core its products ran on ("" if not OpenBLAS)
};

std::vector<BenchResult> RunBench(const BenchOptions& opt);

// A speed ratio a / b (tokens/s) of two sides timed in alternating rounds: the headline, each
// side's best median over the rounds against the other's, and the ratio within each round (round
// i: a[i] / b[i], both timed minutes apart at most), whose spread shows how far the headline moves
// with the machine's state.
struct SpeedRatio {
  double best = 0;
  std::vector<double> per_round;
};
SpeedRatio CompareRounds(const std::vector<BenchResult>& a, const std::vector<BenchResult>& b);
// "3.72x (rounds 3.70x 3.49x)": the headline and, with two rounds or more, each round's ratio.
std::string FormatRatio(const SpeedRatio& ratio);

}  // namespace lexp
