// `lexp analyze`: training runs carry /analysis/geometry; re-analysis against a NoPE reference adds
// the JS divergence and leaves the rest of the run file as it was.
#include "experiments/analyze.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "experiments/trainer.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

TEST(Analyze, TrainingRunsCarryTheGeometryAndAReferenceAddsJs) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"train.steps=20", "probe.lengths=5,9", "probe.stored_samples=2", "probe.samples=2"});
  const auto dir = testing::FreshTempDir("analyze");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "rope", o).state, "completed");
  ASSERT_EQ(TrainAndEvaluate(c, "nope", o).state, "completed");
  const std::string rope = RunFilePath(dir.string(), "rope"),
                    nope = RunFilePath(dir.string(), "nope");
  std::vector<double> acc_before;
  {
    h5::Reader r(rope);
    const h5::Group g = r.root().OpenGroup("analysis").OpenGroup("geometry");
    const h5::Group p = g.OpenGroup("length_9");
    std::vector<uint64_t> dims;
    const auto run = p.ReadDoubles("logit_running_max", &dims);
    // layer, head, distance (T = 2 * 9 + the end token)
    ASSERT_EQ(dims, (std::vector<uint64_t>{2, 2, 19}));
    for (uint64_t lh = 0; lh < 4; ++lh)
      for (uint64_t n = 1; n < 19; ++n) EXPECT_GE(run[lh * 19 + n], run[lh * 19 + n - 1]);
    const auto visible = p.ReadDoubles("visible_keys");
    for (int i = 0; i < 19; ++i) EXPECT_EQ(visible[i], i + 1) << "causal: query i sees i + 1 keys";
    EXPECT_FALSE(p.Has("js_vs_reference"));
    const h5::Group rot = r.root().OpenGroup("analysis").OpenGroup("rotary");
    const auto period = rot.ReadDoubles("pair_period");
    int trained = 0;
    for (double x : period) trained += x <= rot.AttrInt("train_length");
    EXPECT_EQ(rot.AttrInt("d_extra"), 2 * trained);
    acc_before = r.root().OpenGroup("eval").ReadDoubles("token_accuracy");
  }
  const std::string report = AnalyzeRunFile(rope, nope);
  EXPECT_NE(report.find("JS divergence vs reference written"), std::string::npos) << report;
  EXPECT_NE(AnalyzeRunFile(nope).find("not applicable"), std::string::npos);
  h5::Reader r(rope);
  const auto js = r.root()
                      .OpenGroup("analysis")
                      .OpenGroup("geometry")
                      .OpenGroup("length_5")
                      .ReadDoubles("js_vs_reference");
  for (double x : js) EXPECT_TRUE(x >= 0 && x <= std::log(2.0) + 1e-12);
  EXPECT_EQ(r.root().OpenGroup("eval").ReadDoubles("token_accuracy"), acc_before);
  // NoPE against itself: identical rows.
  AnalyzeRunFile(nope, nope);
  h5::Reader rn(nope);
  for (double x : rn.root()
                      .OpenGroup("analysis")
                      .OpenGroup("geometry")
                      .OpenGroup("length_5")
                      .ReadDoubles("js_vs_reference"))
    EXPECT_NEAR(x, 0.0, 1e-12);
  EXPECT_TRUE(std::filesystem::exists(DrawAttentionGeometry(dir.string())));
  std::filesystem::remove_all(dir);
}

TEST(Analyze, ProbeReplayZeroLeavesTheReplaysToLexpAnalyze) {
  const RecipeConfig c =
      testing::TinyCopyRecipe({"model.encodings=rope", "train.steps=10", "probe.replay=0"});
  const auto dir = testing::FreshTempDir("analyze_replay");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "rope", o).state, "completed");
  const std::string rope = RunFilePath(dir.string(), "rope");
  {
    h5::Reader r(rope);
    const h5::Group an = r.root().OpenGroup("analysis");
    EXPECT_TRUE(an.Has("geometry"));
    EXPECT_FALSE(an.Has("rotary"));
    EXPECT_FALSE(an.Has("entropy_variants"));
  }
  AnalyzeRunFile(rope);
  h5::Reader r(rope);
  const h5::Group an = r.root().OpenGroup("analysis");
  EXPECT_TRUE(an.Has("rotary"));
  EXPECT_TRUE(an.Has("entropy_variants"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
