// Attention-geometry metrics on hand-built maps with known answers: one-hot rows, uniform rows,
// logits linear in distance, and the JS divergence bounds.
#include "analysis/attention_geometry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "nn/rng.h"

namespace lexp {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

TEST(AttentionGeometry, RunningMaxOfLogitsOverDistance) {
  // Causal map with logit(i, j) = (i - j) for i - j <= 2 and -(i - j) beyond: the largest logit at
  // distance n is n for n <= 2, -n after; its running maximum stays at 2.
  const int T = 6;
  std::vector<float> z(T * T, kNegInf);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) z[i * T + j] = static_cast<float>(i - j <= 2 ? i - j : -(i - j));
  const auto m = AllQueriesLogitRunningMax(z.data(), T, T);
  EXPECT_EQ(m, (std::vector<double>{0, 1, 2, 2, 2, 2}));
  std::vector<float> masked(T * T, kNegInf);
  masked[0] = 3;  // only the diagonal of query 0
  const auto mm = AllQueriesLogitRunningMax(masked.data(), T, T);
  EXPECT_EQ(mm[0], 3.0);
  EXPECT_EQ(mm[5], 3.0);
}

TEST(AttentionGeometry, LogitsByDistanceAverageTheDiagonals) {
  const int T = 4;
  std::vector<float> z(T * T, kNegInf);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) z[i * T + j] = static_cast<float>(10 * (i - j) + i);
  std::vector<double> sum(T, 0.0), count(T, 0.0), sq(T, 0.0);
  AccumulateLogitsByDistance(z.data(), T, T, sum, count, &sq);
  EXPECT_EQ(count, (std::vector<double>{4, 3, 2, 1}));
  // Spread at distance 1: logits 11, 12, 13, population sd sqrt(2/3).
  const double m1 = sum[1] / count[1];
  EXPECT_NEAR(std::sqrt(sq[1] / count[1] - m1 * m1), std::sqrt(2.0 / 3.0), 1e-12);
  EXPECT_DOUBLE_EQ(sum[0] / count[0], 1.5);       // i = 0..3
  EXPECT_DOUBLE_EQ(sum[1] / count[1], 10 + 2.0);  // i = 1..3
  EXPECT_DOUBLE_EQ(sum[3] / count[3], 30 + 3.0);
}

TEST(AttentionGeometry, AttendedDistanceOfOneHotAndUniformRows) {
  const int T = 5;
  std::vector<float> p(T * T, 0.f);
  for (int i = 0; i < T; ++i) p[i * T + (i > 0 ? i - 1 : 0)] = 1;  // previous token
  const AttendedDistance one = AttendedDistances(p.data(), T, T);
  for (int i = 1; i < T; ++i) {
    EXPECT_DOUBLE_EQ(one.mean[i], 1.0);
    EXPECT_DOUBLE_EQ(one.argmax[i], 1.0);
  }
  std::fill(p.begin(), p.end(), 0.f);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) p[i * T + j] = 1.f / (i + 1);  // uniform causal
  const AttendedDistance uni = AttendedDistances(p.data(), T, T);
  for (int i = 0; i < T; ++i) EXPECT_NEAR(uni.mean[i], i / 2.0, 1e-6) << i;
}

TEST(AttentionGeometry, JensenShannonBounds) {
  const float a[] = {1, 0}, b[] = {0, 1}, u[] = {0.5f, 0.5f};
  EXPECT_NEAR(JensenShannon(a, b, 2), std::log(2.0), 1e-12);  // disjoint supports: ln 2
  EXPECT_DOUBLE_EQ(JensenShannon(u, u, 2), 0.0);
  EXPECT_NEAR(JensenShannon(a, u, 2), JensenShannon(u, a, 2), 1e-15);  // symmetric
  EXPECT_GT(JensenShannon(a, u, 2), 0.0);
  EXPECT_LT(JensenShannon(a, u, 2), std::log(2.0));
}

TEST(AttentionGeometry, LastQueryBoundIsTheRunningMaxAlongTheLastRow) {
  // Last row (query 4) logits at keys 0..4: 1, 5, -2, 3, 0, so by distance n = 4 - j: 0, 3, -2, 5,
  // 1 and the running maximum 0, 3, 3, 5, 5. The other rows do not matter.
  const int T = 5;
  std::vector<float> z(T * T, 100.0f);
  const float last[T] = {1, 5, -2, 3, 0};
  for (int j = 0; j < T; ++j) z[4 * T + j] = last[j];
  EXPECT_EQ(LastQueryLogitBound(z.data(), T, T), (std::vector<double>{0, 3, 3, 5, 5}));
  // A masked diagonal: NaN until the first visible key.
  z[4 * T + 4] = kNegInf;
  const auto b = LastQueryLogitBound(z.data(), T, T);
  EXPECT_TRUE(std::isnan(b[0]));
  EXPECT_EQ(b[1], 3.0);
}

// i.i.d. N(0, 1) logits: LM-Infinite's statistic at distance 32 does not depend on how long the
// map is (it reads one row), while the maximum over all queries grows with T - n, the number of
// queries that reach that distance (the defect of the earlier statistic: about 3.3 at T = 64 and
// 3.9 at T = 256, against about 2.1 and 2.1 for the last row).
TEST(AttentionGeometry, LastQueryBoundDoesNotGrowWithTheProbeLengthForIidLogits) {
  Rng rng(3);
  auto mean_at_32 = [&](int T, bool last) {
    double sum = 0;
    constexpr int kMaps = 400;
    std::vector<float> z(static_cast<size_t>(T) * T);
    for (int m = 0; m < kMaps; ++m) {
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j)
          z[i * T + j] = j <= i ? static_cast<float>(rng.Normal()) : kNegInf;
      sum += (last ? LastQueryLogitBound(z.data(), T, T)
                   : AllQueriesLogitRunningMax(z.data(), T, T))[32];
    }
    return sum / kMaps;
  };
  const double last64 = mean_at_32(64, true), last256 = mean_at_32(256, true);
  const double all64 = mean_at_32(64, false), all256 = mean_at_32(256, false);
  EXPECT_NEAR(last64, last256, 0.1);  // both estimate E[max of 33 N(0,1)] = 2.07
  EXPECT_NEAR(last64, 2.07, 0.1);
  EXPECT_GT(all256 - all64, 0.4);
}

TEST(AttentionGeometry, NonFiniteLogitsCountNanAndPlusInfNotTheMask) {
  const int T = 3;
  std::vector<float> z = {0, kNegInf, kNegInf, std::numeric_limits<float>::quiet_NaN(),
                          1, kNegInf, 2,       std::numeric_limits<float>::infinity(),
                          3};
  EXPECT_EQ(NonFiniteLogits(z.data(), T, T), 2);
}

}  // namespace
}  // namespace lexp
