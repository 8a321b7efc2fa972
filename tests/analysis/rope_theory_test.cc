// Closed-form rotary analyses against the xPos paper's expectation (Sun et al. 2022) and Liu et
// al. 2023's critical dimension and base law, with reference values computed by hand.
#include "analysis/rope_theory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "nn/parallel.h"

namespace lexp::theory {
namespace {

void ExpectRel(double got, double want, double rel, const std::string& what) {
  EXPECT_NEAR(got, want, rel * std::abs(want)) << what;
}

TEST(RopeTheory, CriticalDimensionTable) {  // Liu et al. 2023
  struct Row {
    int d;
    double T, b, ratio;
    int d_extra;
  };
  const Row rows[] = {
      {128, 4096, 1e4, 45.02688127375455, 92},  {128, 2048, 1e4, 40.21040134313085, 82},
      {128, 8192, 1e4, 49.84336120437825, 100}, {128, 16384, 1e4, 54.65984113500195, 110},
      {64, 2048, 1e4, 20.105200671565424, 42},  {64, 1024, 1e4, 17.696960706253574, 36},
      {64, 512, 1e4, 15.288720740941724, 32},   {32, 256, 1e4, 6.440240387814938, 14},
      {128, 4096, 5e5, 31.603522208045444, 64}, {128, 4096, 1e6, 30.017920849169702, 62}};
  for (const auto& r : rows) {
    const CriticalDimension c = CriticalDim(r.d, r.T, r.b);
    ExpectRel(c.ratio, r.ratio, 1e-12, "ratio d=" + std::to_string(r.d));
    EXPECT_EQ(c.d_extra, r.d_extra) << r.d << " " << r.T << " " << r.b;
  }
  // Periods around the LLaMA2 boundary: pair 45 completes a period within 4096, pair 46 does not.
  EXPECT_NEAR(PairPeriod(128, 1e4, 45), 4080.19, 0.01);
  EXPECT_NEAR(PairPeriod(128, 1e4, 46), 4711.72, 0.01);
  EXPECT_LT(PairPeriod(128, 1e4, 45), 4096);
  EXPECT_GT(PairPeriod(128, 1e4, 46), 4096);
}

TEST(RopeTheory, BaseScalingLawAndCriticalBases) {  // Liu et al. 2023
  const std::pair<double, double> limits[] = {
      {1e4, 4711.72427801674},   {2e4, 7754.346042097083},   {4e4, 12761.75747828279},
      {8e4, 21002.73228075623},  {1.6e5, 34565.36170725569}, {5e5, 78399.72854675821},
      {1e6, 129026.78274161111}, {1e7, 675196.0117888665},   {1e9, 18489700.156596232}};
  for (const auto& [b, T] : limits) ExpectRel(ExtrapolationLimit(b, 92, 128), T, 1e-12, "T_extra");
  EXPECT_NEAR(ExtrapolationLimit(1e4, 92, 128), PairPeriod(128, 1e4, 46), 1e-9)
      << "T_extra at 1e4 is the period of the first untrained pair";
  const std::pair<double, double> inverse[] = {
      {16384, 71738.44}, {32768, 192144.46}, {100000, 938327.21}, {1000000, 24758678.37}};
  for (const auto& [T, b] : inverse) EXPECT_NEAR(BaseForLength(T, 4096), b, 0.01) << T;
  const SmallBaseCriticals s = SmallBaseCriticalValues(4096);
  EXPECT_NEAR(s.quarter, 2607.59, 0.01);
  EXPECT_NEAR(s.half, 1303.80, 0.01);
  EXPECT_NEAR(s.full, 651.90, 0.01);
  EXPECT_NEAR(SmallBaseCriticalValues(512).quarter, 325.95, 0.01);
  EXPECT_NEAR(FullPeriodBase(4096, 128), 722.52, 0.01);
}

TEST(RopeTheory, DecayBoundAndExpectationProxy) {  // Su et al. 2021, section 3.4.3
  const std::vector<double> r = {0, 1, 2, 5, 10, 100, 1000, 8000};
  const std::vector<double> want = {32.5,
                                    31.53816614265808,
                                    28.955988473564464,
                                    20.845357778356764,
                                    17.95413713708483,
                                    10.227329948505133,
                                    4.47076103424874,
                                    3.43229451174951};
  const auto D = DecayBound(128, 1e4, r);
  for (size_t i = 0; i < r.size(); ++i)
    ExpectRel(D[i], want[i], 1e-10, "D(" + std::to_string(r[i]) + ")");
  const auto rope = ExpectationProxy(128, 1e4, 4096);
  const auto xpos = ExpectationProxy(128, 1e4, 4096, 512, 0.4);
  const std::vector<std::tuple<int, double, double>> s = {
      {0, 128, 128},
      {1, 124.18736761153528, 124.06880336522825},
      {10, 85.6400457969942, 85.17953573363462},
      {100, 61.086909402981284, 58.11495493579577},
      {512, 28.08631968769336, 28.24853914333508},
      {1000, 20.355456264421086, 20.825910971441555},
      {2048, 15.268341464439054, 12.548421937682624},
      {4096, -6.765227848964551, 5.358784412189741}};
  for (const auto& [n, a, b] : s) {
    EXPECT_NEAR(rope[n], a, 1e-9) << "RoPE s(" << n << ")";
    EXPECT_NEAR(xpos[n], b, 1e-9) << "xPos s(" << n << ")";
  }
  // The same curve whatever the thread count (chunks restart from exact angles).
  std::vector<double> one;
  {
    ThreadLimit limit(1);
    one = ExpectationProxy(128, 1e4, 20000);
  }
  EXPECT_EQ(one, ExpectationProxy(128, 1e4, 20000));
}

TEST(RopeTheory, AttentionResolution) {  // Sun et al. 2022
  auto linear = [](double m) {
    std::vector<double> s(11);
    for (int i = 0; i <= 10; ++i) s[i] = -m * i;
    return s;
  };
  const auto B = ResolutionConvention::kDropLast;
  EXPECT_NEAR(AttentionResolution(linear(0)), 1.0 / 121, 1e-12);
  EXPECT_NEAR(AttentionResolution(linear(0), B), 0.0, 1e-15);
  EXPECT_NEAR(AttentionResolution(linear(0.1)), 0.0119901463, 1e-10);
  EXPECT_NEAR(AttentionResolution(linear(0.1), B), 0.0092363999, 1e-10);
  EXPECT_NEAR(AttentionResolution(linear(1)), 0.2921235138, 1e-10);
  EXPECT_NEAR(AttentionResolution(linear(1), B), 0.2921235129, 1e-10);
  // All-ones proxies scaled by 1/sqrt(d).
  for (const auto& [N, rope_r, xpos_r] : std::vector<std::tuple<long, double, double>>{
           {256, 0.0677620416, 0.0723335274}, {1024, 0.0606023580, 0.0666895331}}) {
    auto a = ExpectationProxy(128, 1e4, N), b = ExpectationProxy(128, 1e4, N, 512, 0.4);
    for (double& x : a) x /= std::sqrt(128.0);
    for (double& x : b) x /= std::sqrt(128.0);
    EXPECT_NEAR(AttentionResolution(a), rope_r, 1e-9) << N;
    EXPECT_NEAR(AttentionResolution(b), xpos_r, 1e-9) << N;
  }
}

// Gaps (NaN: a distance no visible pair reaches, e.g. between a Lambda window and its global
// tokens) are not joined. Scores 0, -1, gap, -3 (convention A), by hand with e^0 = 1, e^-1, e^-3:
// terms 1 (1 - e^-1) for distance 0; none for 1 (its neighbour is missing) or 2; e^-3 e^-3 for the
// last; normalised by (1 + e^-1 + e^-3)^2. Joining across the gap (the earlier curve, 0, -1, -3)
// would add e^-1 (e^-1 - e^-3).
TEST(RopeTheory, AttentionResolutionLeavesGapsUnjoined) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double e1 = std::exp(-1.0), e3 = std::exp(-3.0);
  const double want = (1 * (1 - e1) + e3 * e3) / std::pow(1 + e1 + e3, 2);
  EXPECT_NEAR(AttentionResolution({0, -1, nan, -3}), want, 1e-14);
  EXPECT_GT(std::abs(AttentionResolution({0, -1, -3}) - want), 1e-3);
  EXPECT_TRUE(std::isnan(AttentionResolution({nan, nan})));
  // Trailing missing distances (a window with no global key): the curve ends at its last score.
  EXPECT_DOUBLE_EQ(AttentionResolution({0, -1, nan, nan}), AttentionResolution({0, -1}));
  // A flat curve of K scores: 1/K^2 whatever its level, so resolution falls with length alone.
  for (int K : {5, 33, 257})
    EXPECT_NEAR(AttentionResolution(std::vector<double>(K, 2.5)), 1.0 / (K * K), 1e-15) << K;
}

// The resolutions reported for a measured curve: A and B over every distance, A over the window,
// and a flat curve's with the same gaps (0, gap, 0, 0: three scores, only the last term of A).
TEST(RopeTheory, ResolutionsOfACurveWithItsWindowAndFlatBaseline) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> s = {0, -1, nan, -3};
  const CurveResolutions r = ResolutionsOf(s, 2);
  EXPECT_EQ(r.a, AttentionResolution(s));
  EXPECT_EQ(r.b, AttentionResolution(s, ResolutionConvention::kDropLast));
  EXPECT_EQ(r.window, AttentionResolution({0, -1}));
  EXPECT_NEAR(r.flat, 1.0 / 9, 1e-15);
  EXPECT_NEAR(r.flat_window, 1.0 / 4, 1e-15);
  EXPECT_EQ(ResolutionsOf(s, 99).window, r.a) << "a window past the curve is the whole curve";
}

}  // namespace
}  // namespace lexp::theory
