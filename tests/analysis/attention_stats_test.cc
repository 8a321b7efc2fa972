// Attention entropy and logit statistics over visible keys (Han et al. 2023, theorem 2).
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
}

// The bound's published numbers (Han et al. 2023, theorem 2): n = 4096, B = 1 gives
// [6.31776617, 8.31776617]; n = 65536, B = 2 gives [7.09035489, 11.09035489]. RowStats must reach
// the upper end on a uniform row and stay above the lower end on the most peaked rows the bound
// allows: k logits at +B and n - k at -B, whose weights are e^{2B}/Z and 1/Z with Z = k e^{2B} + n
// - k, so that
//   H = -k (e^{2B}/Z) ln(e^{2B}/Z) - (n - k) (1/Z) ln(1/Z) = ln Z - 2B k e^{2B} / Z.
// Its minimum over k (k = 842 for n = 4096, k = 3759 for n = 65536, found by scanning every k
// with python3) is 7.843291530451193 and 9.420505259312387: inside the bound, and a wrong entropy
// (another log base, a missing -sum p z term, masked keys counted) misses these values.
TEST(AttentionStats, EntropyOfExtremeBoundedRowsMatchesTheClosedFormAboveLnNMinus2B) {
  struct Case {
    int n;
    double B, lower, upper;
    int k_min;
    double h_min;
  };
  for (const Case& c : {Case{4096, 1.0, 6.31776617, 8.31776617, 842, 7.843291530451193},
                        Case{65536, 2.0, 7.09035489, 11.09035489, 3759, 9.420505259312387}}) {
    std::vector<double> z(c.n + 3, -kInf);  // three masked keys that must not count
    for (int j = 0; j < c.n; ++j) z[j] = c.B / 2;
    EXPECT_NEAR(RowStats(z.data(), c.n + 3).entropy, c.upper, 1e-8) << "uniform row, n " << c.n;
    for (int k : {1, c.k_min, c.n / 2, c.n - 1}) {
      // The +B keys spread through the row (every stride-th key), the masked keys at the end.
      const int stride = c.n / k;
      for (int j = 0; j < c.n; ++j) z[j] = (j % stride == 0 && j / stride < k) ? c.B : -c.B;
      const double Z = k * std::exp(2 * c.B) + (c.n - k);
      const double closed = std::log(Z) - 2 * c.B * k * std::exp(2 * c.B) / Z;
      const AttentionRowStats r = RowStats(z.data(), c.n + 3);
      EXPECT_EQ(r.visible, c.n);
      EXPECT_NEAR(r.entropy, closed, 1e-9) << "n " << c.n << " k " << k;
      EXPECT_GT(r.entropy, c.lower) << "n " << c.n << " k " << k;
      EXPECT_LT(r.entropy, c.upper) << "n " << c.n << " k " << k;
      if (k == c.k_min) {
        EXPECT_NEAR(r.entropy, c.h_min, 1e-9) << "n " << c.n;
      }
    }
  }
}

TEST(AttentionStats, OneHotAttentionHasZeroEntropy) {
  std::vector<double> z = {-kInf, 0.0, -1e4, -1e4};
  const auto r = RowStats(z.data(), 4);
  EXPECT_NEAR(r.entropy, 0.0, 1e-12);
  EXPECT_EQ(r.visible, 3);
  EXPECT_EQ(r.max_logit, 0.0);
}

// NaN and +inf logits (a diverged model) are skipped like masked keys, but counted, so a caller can
// say its entropies left them out; -inf is the mask and is not counted.
TEST(AttentionStats, NonFiniteLogitsAreCountedNotSilentlySkipped) {
  std::vector<double> z = {-kInf, std::nan(""), 1.0, kInf, 1.0};
  const auto r = RowStats(z.data(), 5);
  EXPECT_EQ(r.nonfinite, 2);
  EXPECT_EQ(r.visible, 2);
  EXPECT_NEAR(r.entropy, std::log(2.0), 1e-12);
  const std::vector<double> map = {std::nan(""), -kInf, 1.0, kInf};  // 2 x 2
  EXPECT_EQ(MapStats(map.data(), 2, 2).nonfinite, 2);
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
