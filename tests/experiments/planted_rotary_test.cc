// The post-critical ablation read on planted RoPE models (tests/testing/planted_runs.h) of the
// lookback source (each token repeats the one 24 back with probability 0.8), head width 32, base
// 1e4, trained on 64 tokens: pairs 0..4 complete a period within them (periods 6.3 .. 62.8), so
// the predicted boundary is cut 5. Both models attend to distance 23 from each row, where the
// repeated token is, with pairs 0..4 (B cos((d - 23) theta_k) each):
//  * in the first, pairs 8..15 add -A cos(d theta_k), nearly flat over the trained distances and
//    rising far beyond them, so beyond N attention leaves distance 23 for far keys: the slow pairs
//    carry the failure, and freezing restores the model at the predicted cut and at every cut up to
//    the first failing pair, 8 (whether it also does below 5 depends on how much the model needs
//    pairs 3 and 4, which the plant does not fix), never from 9 on;
//  * in the second (the negative control) no slow pair carries anything, the margin of distance 23
//    is small and the value path weak (gain 0.5), so beyond N the source's share of attention
//    dilutes over the many more keys until the current token outweighs it: no cut can help
//    and there must be no measured boundary (where the old reading, the lowest loss among cuts,
//    took the first of the equal cuts 5..16 and "confirmed" the prediction).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/replay/rotary_pairs.h"
#include "nn/io/hdf5.h"
#include "tests/testing/planted_runs.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

TEST(PlantedRotary, SlowPairsThatCarryTheFailureAreWhereFreezingRestoresTheModel) {
  const auto dir = testing::FreshTempDir("planted_rotary");
  const RotaryPairAnalysis a = AnalyzeRotaryPairs(testing::LookbackReader(dir, "slow", 25, 50));
  ASSERT_EQ(a.pairs, 16);
  EXPECT_EQ(a.predicted_boundary, 5);
  for (int m = 0; m < 2; ++m) {
    const CutAblationVerdict& v = a.verdict[m];
    ASSERT_TRUE(v.applicable);
    // The plant does what it says: freezing the slow pairs removes most of its loss beyond N.
    EXPECT_LT(v.beyond_difference[5], -1.0) << m;
    // Freezing helps from the predicted cut up to the first pair that carries the failure (8),
    // and the best of the cuts that help (the measured boundary) lies there; freezing pairs that
    // find the source (0..2) or leaving a failing pair turning (9 on) is worse by far.
    EXPECT_EQ(v.helps[5], 1) << m;
    EXPECT_EQ(v.helps[8], 1) << m;
    const int b = a.measured_boundary[m];
    EXPECT_GE(b, 3) << m;
    EXPECT_LE(b, 8) << m;
    for (int c : {0, 1, 2, 9, 10, 16})
      EXPECT_GT(v.beyond_loss[c], v.beyond_loss[b] + 0.5) << m << " cut " << c;
    EXPECT_LT(std::abs(v.in_distribution_cost[5]), 0.1)
        << "the frozen pairs barely turn in training";
  }
  // Every logit of this plant is negative (the slow pairs' -A cos(d theta) dominate): the report's
  // largest observed logit is that negative maximum, not 0.
  ASSERT_LT(a.contributions.observed[0], 0.0);
  {
    h5::Writer scratch((dir / "report.h5").string());
    const std::string report = WriteRotaryPairs(a, scratch.root().CreateGroup("analysis"));
    EXPECT_NE(report.find(fmt::format("largest observed {:.2f}", a.contributions.observed[0])),
              std::string::npos)
        << report;
  }
  std::filesystem::remove_all(dir);
}

TEST(PlantedRotary, AFailureByDilutionHasNoMeasuredBoundary) {
  const auto dir = testing::FreshTempDir("planted_rotary_dilution");
  const RotaryPairAnalysis a =
      AnalyzeRotaryPairs(testing::LookbackReader(dir, "dilution", 10, 0, "64,512,1024", 0.5));
  const CutAblationVerdict& v = a.verdict[0];
  ASSERT_TRUE(v.applicable);
  const size_t E = a.eval_lengths.size();  // 64, 512, 1024
  EXPECT_GT(a.ablation_loss[16 * E + 2], a.ablation_loss[16 * E + 1] + 0.1)
      << "the plant degrades with length: its margin at distance 23 drowns in more keys";
  for (int c = 5; c < 16; ++c)
    EXPECT_EQ(v.beyond_difference[c], 0.0) << c << ": freezing pairs that carry nothing";
  for (int c = 0; c <= 16; ++c) EXPECT_EQ(v.helps[c], 0) << c;
  EXPECT_EQ(a.measured_boundary[0], -1);
  EXPECT_EQ(a.measured_boundary[1], -1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
