// Randomized positions and PoSE (Ruoss et al. 2023, 4.2) and their use from a recipe.
#include "pe/position_schemes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/core/recipe.h"
#include "experiments/training/trainer.h"
#include "nn/check.h"
#include "pe/registry.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

TEST(RandomizedPositions, AreSortedDistinctInRangeWithTheExpectedGap) {
  Rng rng(3);
  const int T = 40, L = 2048;
  double gap_sum = 0;
  const int draws = 3000;
  for (int d = 0; d < draws; ++d) {
    const auto p = SampleSortedPositions(T, L, rng);
    ASSERT_EQ(static_cast<int>(p.size()), T);
    EXPECT_GE(p.front(), 0);
    EXPECT_LT(p.back(), L);
    for (int t = 1; t < T; ++t) ASSERT_LT(p[t - 1], p[t]) << "strictly increasing, no duplicates";
    gap_sum += (p.back() - p.front()) / (T - 1);
  }
  // For a uniform T-subset of {0..L-1}, E[max - min] = (L - 1)(T - 1)/(T + 1).
  EXPECT_NEAR(gap_sum / draws, (L - 1.0) / (T + 1), 0.02 * (L - 1.0) / (T + 1));
  const auto all = SampleSortedPositions(5, 5, rng);
  EXPECT_EQ(all, (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_THROW(SampleSortedPositions(6, 5, rng), InputError);
  Rng a(9), b(9);
  EXPECT_EQ(SampleSortedPositions(10, 100, a), SampleSortedPositions(10, 100, b));
}

TEST(Pose, GivesTwoContiguousChunksInsideTheTargetLength) {
  Rng rng(4);
  const int T = 33, Lt = 400;
  for (int d = 0; d < 500; ++d) {
    const auto p = PosePositions(T, Lt, rng);
    ASSERT_EQ(static_cast<int>(p.size()), T);
    EXPECT_EQ(p[0], 0);
    EXPECT_LT(p.back(), Lt);
    int jumps = 0, l0 = T;
    for (int t = 1; t < T; ++t) {
      ASSERT_GT(p[t], p[t - 1]);
      if (p[t] != p[t - 1] + 1) {
        ++jumps;
        l0 = t;
      }
    }
    EXPECT_LE(jumps, 1) << "at most two contiguous runs";
    if (jumps == 1) {
      EXPECT_LE(l0, (T + 1) / 2) << "first chunk l0 in 1..ceil(T/2)";
    }
  }
}

// PoSE with N = 2 (Zhu et al. 2023): the first chunk length l0 is uniform on 1..ceil(T/2) and the
// skip u uniform on 0..Lt - T, so over many draws every l0 and both ends of u occur, with the
// frequencies of a uniform law, and the last position reaches Lt - 1 but never passes it. A draw
// with u = 0 has no jump and does not show l0; otherwise l0 is where the jump is and u its size.
TEST(Pose, ChunkLengthAndSkipAreUniformOverTheirRanges) {
  Rng rng(5);
  const int T = 33, Lt = 400, draws = 20000;
  const int l0_max = (T + 1) / 2, u_max = Lt - T;  // 17 and 367
  std::vector<int> l0_count(T + 1, 0), u_count(u_max + 1, 0);
  double last_max = 0;
  for (int d = 0; d < draws; ++d) {
    const auto p = PosePositions(T, Lt, rng);
    ASSERT_EQ(static_cast<int>(p.size()), T);
    ASSERT_LE(p.back(), Lt - 1);
    last_max = std::max(last_max, p.back());
    int l0 = 0;
    for (int t = 1; t < T && l0 == 0; ++t)
      if (p[t] != p[t - 1] + 1) l0 = t;
    const double u = l0 ? p[l0] - l0 : 0.0;
    ASSERT_GE(u, 0);
    ASSERT_LE(u, u_max);
    ++u_count[static_cast<int>(u)];
    if (l0) ++l0_count[l0];
  }
  EXPECT_EQ(last_max, Lt - 1) << "the largest skip puts the last token at Lt - 1";
  EXPECT_GT(u_count[0], 0) << "u = 0: one contiguous chunk";
  EXPECT_GT(u_count[u_max], 0);
  // Counts of a uniform law, within 5 binomial standard deviations.
  const auto expect_uniform = [](int count, double n, double p, const std::string& what) {
    EXPECT_NEAR(count, n * p, 5 * std::sqrt(n * p * (1 - p))) << what;
  };
  const int shown = draws - u_count[0];
  for (int l = 1; l <= T; ++l) {
    if (l <= l0_max)
      expect_uniform(l0_count[l], shown, 1.0 / l0_max, "l0 = " + std::to_string(l));
    else
      EXPECT_EQ(l0_count[l], 0) << "l0 = " << l << " is longer than ceil(T/2)";
  }
  const int bins = 8, width = (u_max + 1) / bins;  // 368 skips in 8 bins of 46
  for (int b = 0; b < bins; ++b) {
    int c = 0;
    for (int u = b * width; u < (b + 1) * width; ++u) c += u_count[u];
    const double share = static_cast<double>(width) / (u_max + 1);
    expect_uniform(c, draws, share, "u bin " + std::to_string(b));
  }
}

TEST(PositionSchemes, WrapAnyEncodingAndSwitchAtEvaluation) {
  auto make = [](const std::string& scheme, bool at_eval) {
    PositionSchemeConfig c;
    c.name = scheme;
    c.max_position = 100;
    c.sample_at_eval = at_eval;
    return std::make_unique<WithPositionScheme<double>>(
        CreateEncoding<double>("learned", {{"max_len", "100"}}, EncodingShape{8, 2, 1, true, 100}),
        c);
  };
  Rng rng(1);
  std::vector<double> pos;
  const std::vector<double> identity = {0, 1, 2, 3, 4, 5, 6, 7};
  auto r = make("randomized", true);
  r->PositionIds(8, true, rng, pos);
  EXPECT_NE(pos, identity);
  r->PositionIds(8, false, rng, pos);
  EXPECT_NE(pos, identity) << "sampled at evaluation too, as the reference code";
  auto r2 = make("randomized", false);
  r2->PositionIds(8, false, rng, pos);
  EXPECT_EQ(pos, identity);
  auto p = make("pose", true);
  p->PositionIds(8, false, rng, pos);
  EXPECT_EQ(pos, identity) << "PoSE is a training scheme";
  auto c = make("clamp", true);
  c->PositionIds(8, true, rng, pos);
  EXPECT_EQ(pos, identity) << "clamp is an evaluation remap";
  PositionSchemeConfig cc;
  cc.name = "clamp";
  cc.max_position = 5;
  WithPositionScheme<double> clamped(
      CreateEncoding<double>("learned", {{"max_len", "100"}}, EncodingShape{8, 2, 1, true, 100}),
      cc);
  clamped.PositionIds(8, false, rng, pos);
  EXPECT_EQ(pos, (std::vector<double>{0, 1, 2, 3, 4, 4, 4, 4})) << "unseen positions read as 4";
  // The wrapped encoding keeps its parameters and sites.
  EXPECT_EQ(r->Parameters().size(), 1u);
  EXPECT_EQ(r->Parameters()[0].name, "pe.learned.table");
  EXPECT_TRUE(r->Uses(kSiteEmbedding));
}

TEST(PositionSchemes, TrainFromARecipeWithLearnedAndRope) {
  const auto dir = testing::FreshTempDir("positions");
  for (const std::string scheme : {"randomized", "pose"}) {
    const RecipeConfig c = testing::TinyCopyRecipe(
        {"model.n_layers=1", "model.encodings=learned,rope", "model.positions_max=64",
         "model.positions=" + scheme, "train.steps=40", "eval.lengths=5,10", "probe.lengths=5",
         "probe.samples=1"});
    for (const auto& e : c.encodings) {
      RunOptions o;
      o.out_dir = dir.string();
      EXPECT_EQ(TrainAndEvaluate(c, e, o).state, "completed") << scheme << " " << e;
    }
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace lexp
