// The judgement of a cut-ablation sweep (analysis/cut_ablation.h) on planted tables whose right
// reading is known: a cut that lowers the loss beyond N below chance for every sequence is the
// boundary; the lowest of cuts that all stay worse than a uniform guess is not (the default run's
// RoPE model: freezing from cut 2 lowered the loss beyond N from 5.7 to 3.8 nats, still above ln 19
// = 2.94, and raised it in distribution from 0.002 to 1.2); differences that are noise around zero
// are no boundary; without a length beyond N nothing is judged.
#include "analysis/cut_ablation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace lexp {
namespace {

// lengths 8 (within N = 8) and 16, 32 (beyond); S sequences; loss[c][e][s] = f(c, e, s).
template <typename F>
CutAblationInput Table(int cuts, int S, double chance, F f) {
  CutAblationInput in;
  in.lengths = {8, 16, 32};
  in.train_length = 8;
  in.chance_loss = chance;
  in.loss.assign(cuts, std::vector<std::vector<double>>(3, std::vector<double>(S)));
  for (int c = 0; c < cuts; ++c)
    for (int e = 0; e < 3; ++e)
      for (int s = 0; s < S; ++s) in.loss[c][e][s] = f(c, e, s);
  return in;
}

// A small per-sequence wobble (deterministic), so that intervals have a width.
double Wobble(int s) { return 0.05 * std::sin(1.7 * s + 0.3); }

TEST(CutAblation, ACutThatRestoresTheModelBeyondNIsTheBoundary) {
  // 5 cuts (4 = nothing ablated). Cuts 0, 1 break the model everywhere (loss 4); cut 2 and later
  // ones up to 3 restore it beyond N (0.5) at no cost within N; unablated fails beyond (3.5).
  const auto in = Table(5, 32, std::log(19.0), [](int c, int e, int s) {
    if (c < 2) return 4.0 + Wobble(s);
    if (e == 0) return 0.1 + Wobble(s);
    return (c == 4 ? 3.5 : 0.5) + Wobble(s + e);
  });
  const CutAblationVerdict v = JudgeCutAblation(in);
  ASSERT_TRUE(v.applicable);
  EXPECT_EQ(v.boundary, 2) << "the first of the equally good cuts";
  EXPECT_EQ(v.lowest, 2);
  EXPECT_EQ(v.helps, (std::vector<int>{0, 0, 1, 1, 0}));
  EXPECT_EQ(v.better_than_chance, (std::vector<int>{0, 0, 1, 1, 0}));
  EXPECT_NEAR(v.beyond_difference[2], -3.0, 1e-12);
  EXPECT_LT(v.difference_hi[2], 0);
  EXPECT_NEAR(v.in_distribution_cost[2], 0.0, 1e-12);
  EXPECT_NEAR(v.in_distribution_cost[0], 3.9, 1e-12);
  EXPECT_NEAR(v.beyond_difference[4], 0.0, 1e-12) << "the unablated cut against itself";
}

TEST(CutAblation, TheLowestOfCutsThatAllFailIsNoBoundary) {
  // The default run's shape: every cut's loss beyond N stays above chance; cut 2 is lowest and
  // significantly below the unablated loss, but costs 1.2 nats in distribution.
  const double chance = std::log(19.0);
  const auto in = Table(9, 64, chance, [](int c, int e, int s) {
    const double beyond[9] = {5.74, 4.76, 3.83, 4.75, 5.0, 5.3, 5.5, 5.6, 5.7};
    const double within[9] = {2.9, 2.0, 1.21, 0.6, 0.2, 0.05, 0.01, 0.003, 0.002};
    return (e == 0 ? within[c] : beyond[c]) + Wobble(s + 3 * c);
  });
  const CutAblationVerdict v = JudgeCutAblation(in);
  ASSERT_TRUE(v.applicable);
  EXPECT_EQ(v.lowest, 2);
  EXPECT_EQ(v.boundary, -1) << "no cut is better than a uniform guess beyond N";
  EXPECT_LT(v.difference_hi[2], 0) << "lower than unablated, significantly";
  EXPECT_EQ(v.better_than_chance[2], 0);
  EXPECT_NEAR(v.in_distribution_cost[2], 1.208, 0.02);
  EXPECT_GT(v.cost_lo[2], 0);
}

TEST(CutAblation, DifferencesThatAreNoiseAroundZeroAreNoBoundary) {
  // Every cut equals the unablated model up to a per-sequence noise of mean zero (alternating
  // signs), below chance: none differs significantly, so none is a boundary, though one is lowest.
  const auto in = Table(4, 40, 3.0, [](int c, int e, int s) {
    const double noise = c == 3 ? 0.0 : 0.2 * ((s + c) % 2 == 0 ? 1 : -1) + 0.001 * c;
    return (e == 0 ? 0.2 : 1.0) + noise;
  });
  const CutAblationVerdict v = JudgeCutAblation(in);
  EXPECT_EQ(v.boundary, -1);
  for (int c = 0; c < 3; ++c) {
    EXPECT_LT(v.difference_lo[c], 0) << c;
    EXPECT_GT(v.difference_hi[c], 0) << c;
    EXPECT_EQ(v.better_than_chance[c], 1) << c;
  }
}

TEST(CutAblation, NoLengthBeyondTrainingIsNotJudged) {
  auto in = Table(3, 8, 3.0, [](int, int, int s) { return 1.0 + Wobble(s); });
  in.train_length = 32;
  const CutAblationVerdict v = JudgeCutAblation(in);
  EXPECT_FALSE(v.applicable);
  EXPECT_EQ(v.boundary, -1);
  EXPECT_EQ(v.lowest, -1);
  EXPECT_TRUE(std::isnan(v.beyond_loss[0]));
}

}  // namespace
}  // namespace lexp
