// `lexp bench --gemm` (experiments/bench/gemm_bench.h): every backend, fp32 and bf16, is timed on
// every product shape of a model, and each one's product is checked against Eigen's before it is
// timed (a wrong kernel stops the bench), so the table the backend choice rests on is of right
// products only.
#include "experiments/bench/gemm_bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "nn/io/hdf5.h"
#include "nn/ops/amx_bf16.h"
#include "nn/ops/gemm.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

TEST(GemmBench, TimesEveryKernelThisCpuHasOnEveryShapeOfTheModel) {
  const auto dir = testing::FreshTempDir("gemm_bench");
  GemmBenchOptions opt;
  opt.configs = {"T"};
  opt.seconds_per_point = 0.002;
  opt.peak = false;
  opt.out_file = (dir / "gemm.h5").string();
  const std::vector<GemmBenchPoint> points = RunGemmBench(opt);
  const size_t shapes = LayerGemmShapes("T").size();
  std::map<std::string, size_t> timed;
  for (const auto& p : points)
    if (p.gflops > 0) ++timed[p.backend];
  EXPECT_EQ(timed["lexp"], shapes) << "lexp's own product on every shape";
  EXPECT_EQ(timed["bf16 emulated"], shapes);
  EXPECT_EQ(timed["bf16 amx"], AmxBf16Usable() ? shapes : 0u);
  ForceAmxOff(true);
  const bool avx512_bf16 = Bf16IsNative();
  ForceAmxOff(false);
  EXPECT_EQ(timed["bf16 avx512_bf16"], avx512_bf16 ? shapes : 0u);
  h5::Reader r((dir / "gemm.h5").string());
  const std::string labels = r.root().ReadString("measurement");
  EXPECT_EQ(static_cast<size_t>(std::count(labels.begin(), labels.end(), '\n')), points.size());
  EXPECT_NE(labels.find("T/attn logits q.k/NT/bf16 emulated"), std::string::npos) << labels;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
