// The measured extrapolation limit and the fitted scaling exponent: hand-built loss curves, an
// exact line, and a noisy line whose interval matches the textbook Student-t quantile.
#include "analysis/base_law.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace lexp {
namespace {

TEST(BaseLaw, LimitIsTheLastLengthBeforeTheLossLeavesTheTolerance) {
  const std::vector<double> len = {16, 32, 64, 128, 256};
  EXPECT_EQ(ExtrapolationLimitMeasured(len, {1.0, 1.05, 1.09, 1.3, 1.05}, 1.0, 0.1), 64);
  EXPECT_EQ(ExtrapolationLimitMeasured(len, {1.0, 1.0, 1.0, 1.0, 1.0}, 1.0, 0.1), 256);
  EXPECT_EQ(ExtrapolationLimitMeasured(len, {1.2, 1.0, 1.0, 1.0, 1.0}, 1.0, 0.1), 0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(ExtrapolationLimitMeasured(len, {1.0, nan, 1.0, 1.0, 1.0}, 1.0, 0.1), 16);
}

// An accuracy stays within the tolerance while it is at least (1 - tol) x its in-distribution
// value: copy's exact match 1.0 at N, 0.95 and 0.92 beyond, then 0.4 has its limit at the third
// length. Read as a loss (at most 1.1 x), the same curve would pass everywhere: the direction
// matters.
TEST(BaseLaw, AnAccuracyLimitIsTheLastLengthBeforeTheAccuracyFallsOutOfTheTolerance) {
  const std::vector<double> len = {16, 32, 64, 128, 256};
  const std::vector<double> acc = {1.0, 0.95, 0.92, 0.4, 0.1};
  EXPECT_EQ(ExtrapolationLimitMeasured(len, acc, 1.0, 0.1, LimitCriterion::kExactMatch), 64);
  EXPECT_EQ(ExtrapolationLimitMeasured(len, acc, 1.0, 0.1, LimitCriterion::kLoss), 256);
  EXPECT_EQ(
      ExtrapolationLimitMeasured(len, {0.85, 1, 1, 1, 1}, 1.0, 0.1, LimitCriterion::kTokenAccuracy),
      0);
  EXPECT_STREQ(LimitCriterionName(LimitCriterion::kTokenAccuracy), "token_accuracy");
}

TEST(BaseLaw, FitRecoversAnExactLineAndGivesAStudentTInterval) {
  const LineFit exact = FitLine({0, 1, 2, 3}, {1, 3, 5, 7});
  EXPECT_NEAR(exact.slope, 2, 1e-12);
  EXPECT_NEAR(exact.intercept, 1, 1e-12);
  EXPECT_NEAR(exact.slope_lo, 2, 1e-12);
  EXPECT_NEAR(exact.slope_hi, 2, 1e-12);
  // y = x + (+1, -1, -1, +1): slope 1, residual variance 4/(n-2) = 2, sxx = 5, se = sqrt(2/5);
  // t quantile (2 dof, 97.5%) = 4.302652729749464.
  const LineFit noisy = FitLine({0, 1, 2, 3}, {1, 0, 1, 4});
  EXPECT_NEAR(noisy.slope, 1.0, 1e-12);
  EXPECT_NEAR(noisy.slope_hi - noisy.slope, 4.302652729749464 * std::sqrt(2.0 / 5.0), 1e-9);
  EXPECT_NEAR(noisy.slope - noisy.slope_lo, noisy.slope_hi - noisy.slope, 1e-12);
}

}  // namespace
}  // namespace lexp
