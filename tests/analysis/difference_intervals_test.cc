// The difference intervals behind a claim's verdict against values computed by hand from tables
// of Student's t and against the published example of Newcombe (1998).
#include "analysis/difference_intervals.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lexp {
namespace {

// t quantiles at 0.975 (any table of Student's t).
constexpr double kT2 = 4.302653, kT4 = 2.776445;

TEST(DifferenceIntervals, WelchWithEqualSpreadsHasTwiceTheDegreesOfFreedomOfOneSide) {
  // Means 2 and 0, variances 1 and 1, n = 3 and 3: nu = 4, se = sqrt(2/3).
  const Interval w = WelchDifference({1, 2, 3}, {-1, 0, 1});
  const double half = kT4 * std::sqrt(2.0 / 3);
  EXPECT_NEAR(w.lo, 2 - half, 1e-5);
  EXPECT_NEAR(w.hi, 2 + half, 1e-5);
}

TEST(DifferenceIntervals, WelchWithOneSideWithoutSpreadTakesTheOthersDegreesOfFreedom) {
  // b has no spread: nu = n_a - 1 = 2, se = sqrt(1/3).
  const Interval w = WelchDifference({1, 2, 3}, {0, 0, 0});
  const double half = kT2 * std::sqrt(1.0 / 3);
  EXPECT_NEAR(w.lo, 2 - half, 1e-5);
  EXPECT_NEAR(w.hi, 2 + half, 1e-5);
  // Neither side spreads: the point difference.
  const Interval p = WelchDifference({1, 1}, {0.25, 0.25});
  EXPECT_EQ(p.lo, 0.75);
  EXPECT_EQ(p.hi, 0.75);
}

TEST(DifferenceIntervals, PairingRemovesTheSpreadTheSidesShare) {
  // Seeds that move both sides together: unpaired the spread hides the difference, paired the
  // constant difference 0.1 is exact.
  const std::vector<double> a = {0.5, 0.7, 0.9}, b = {0.4, 0.6, 0.8};
  const Interval unpaired = WelchDifference(a, b), paired = PairedDifference(a, b);
  EXPECT_LT(unpaired.lo, 0);
  EXPECT_NEAR(paired.lo, 0.1, 1e-12);
  EXPECT_NEAR(paired.hi, 0.1, 1e-12);
  // Differences 0.1, 0.2, 0.3: mean 0.2, sd 0.1, n 3 (t with 2 degrees of freedom).
  const Interval spread = PairedDifference({0.6, 0.8, 1.0}, {0.5, 0.6, 0.7});
  EXPECT_NEAR(spread.lo, 0.2 - kT2 * 0.1 / std::sqrt(3.0), 1e-5);
  EXPECT_NEAR(spread.hi, 0.2 + kT2 * 0.1 / std::sqrt(3.0), 1e-5);
}

// Wilson's score interval (Wilson 1927) at 95%.
Interval Wilson(double k, double n) {
  const double z = 1.959964, p = k / n, z2 = z * z;
  const double centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const double half = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n);
  return {centre - half, centre + half};
}

TEST(DifferenceIntervals, MoverWithWilsonIntervalsIsNewcombesMethodTen) {
  // Newcombe (1998), Statistics in Medicine 17:873-890, table II, example (a): 56/70 against
  // 48/80, difference 0.2000, method 10: [0.0524, 0.3339].
  const Interval d = MoverDifference(56.0 / 70, Wilson(56, 70), 48.0 / 80, Wilson(48, 80));
  EXPECT_NEAR(d.lo, 0.0524, 5e-5);
  EXPECT_NEAR(d.hi, 0.3339, 5e-5);
  // Two sides without width: the point difference.
  const Interval point = MoverDifference(0.7, {0.7, 0.7}, 0.2, {0.2, 0.2});
  EXPECT_DOUBLE_EQ(point.lo, 0.5);
  EXPECT_DOUBLE_EQ(point.hi, 0.5);
}

TEST(DifferenceIntervals, BonferroniSplitsTheLevelOverTheComparisons) {
  EXPECT_DOUBLE_EQ(BonferroniConfidence(1), 0.95);
  EXPECT_DOUBLE_EQ(BonferroniConfidence(4), 1 - 0.0125);
}

}  // namespace
}  // namespace lexp
