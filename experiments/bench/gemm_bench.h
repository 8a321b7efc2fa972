// `lexp bench --gemm`: single-thread GFLOP/s of every matrix-product shape lexp's layers call
// (T, S and E configurations), for each GEMM backend this machine has, beside its measured sgemm
// peak. This is the measurement the choice of lexp's GEMM backend rests on (nn/ops/gemm.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace lexp {

struct GemmBenchOptions {
  std::vector<std::string> configs = {"T", "S", "E2048"};
  double seconds_per_point = 0.2;  // timing budget of one (shape, backend) point
  bool peak = true;                // also time a 2048^3 sgemm (the machine's peak)
  std::string out_file;            // HDF5 results (default data/bench/gemm-<time>.h5)
  std::function<void(const std::string&)> print;
};

// One product C[m, n] (+)= op(A) op(B) of a layer, as lexp calls it (one task's chunk).
struct GemmShape {
  std::string config;  // T, S, E2048, or "peak"
  std::string site;    // e.g. "mlp.fc1 forward", "attn logits"
  int m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  bool accumulate = false;  // C += instead of C =
};

struct GemmBenchPoint {
  GemmShape shape;
  std::string backend;
  double gflops = 0;  // best of the timed repetitions; 0 = backend cannot do this shape
};

std::vector<GemmShape> LayerGemmShapes(const std::string& config);
std::vector<GemmBenchPoint> RunGemmBench(const GemmBenchOptions& opt);

}  // namespace lexp
