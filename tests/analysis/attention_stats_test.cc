// Attention entropy and logit statistics over visible keys (formulas.md 7.4, 8.16 item 12).
#include "analysis/attention_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "nn/rng.h"

namespace lexp {
namespace {

const double kInf = std::numeric_limits<double>::infinity();

TEST(AttentionStats, UniformLogitsOverVisibleKeysGiveLnN) {
  for (int n : {1, 2, 7, 100, 4096}) {
    std::vector<double> z(n + 5, -kInf);  // five masked keys must not count
    for (int j = 0; j < n; ++j) z[j] = 0.37;
    const auto r = RowStats(z.data(), n + 5);
    EXPECT_EQ(r.visible, n);
    EXPECT_NEAR(r.entropy, std::log(static_cast<double>(n)), 1e-12) << n;
    EXPECT_DOUBLE_EQ(r.max_logit, 0.37);
    EXPECT_NEAR(r.mean_logit, 0.37, 1e-12);  // a sum of n doubles
  }
}

TEST(AttentionStats, BoundedLogitsGiveEntropyWithinLnNMinus2B) {
  Rng rng(3);
  for (auto [n, B] : std::vector<std::pair<int, double>>{{4096, 1.0}, {65536, 2.0}, {10, 0.5}}) {
    std::vector<double> z(n);
    for (int trial = 0; trial < 5; ++trial) {
      for (double& x : z) x = rng.Uniform(-B, B);
      const double H = RowStats(z.data(), n).entropy;
      EXPECT_LE(H, std::log(n) + 1e-12);
      EXPECT_GE(H, std::log(n) - 2 * B - 1e-12);
    }
  }
  // The bound's numbers (formulas.md 7.4).
  EXPECT_NEAR(std::log(4096.0) - 2, 6.31776617, 1e-8);
  EXPECT_NEAR(std::log(65536.0) - 4, 7.09035489, 1e-8);
}

TEST(AttentionStats, OneHotAttentionHasZeroEntropy) {
  std::vector<double> z = {-kInf, 0.0, -1e4, -1e4};
  const auto r = RowStats(z.data(), 4);
  EXPECT_NEAR(r.entropy, 0.0, 1e-12);
  EXPECT_EQ(r.visible, 3);
  EXPECT_EQ(r.max_logit, 0.0);
}

TEST(AttentionStats, MapStatsRespectTheCausalMask) {
  // Uniform causal attention: row i sees i+1 keys, so mean entropy = mean ln(i+1).
  const int T = 6;
  std::vector<double> z(T * T, -kInf);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) z[i * T + j] = 1.5;
  const auto m = MapStats(z.data(), T, T);
  double expect = 0;
  for (int i = 0; i < T; ++i) {
    EXPECT_NEAR(m.entropy_by_query[i], std::log(i + 1.0), 1e-12);
    expect += std::log(i + 1.0) / T;
  }
  EXPECT_NEAR(m.entropy, expect, 1e-12);
  EXPECT_NEAR(m.log_visible, expect, 1e-12);
}

}  // namespace
}  // namespace lexp
