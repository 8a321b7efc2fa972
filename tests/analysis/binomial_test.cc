// Clopper-Pearson intervals against closed forms: k = 0 gives [0, 1 - (alpha/2)^(1/n)], k = n gives
// [(alpha/2)^(1/n), 1], and the textbook value for 5 of 10.
#include "analysis/binomial.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace lexp {
namespace {

TEST(ClopperPearson, MatchesClosedFormsAndTextbookValues) {
  const Interval none = ClopperPearson(0, 10);
  EXPECT_EQ(none.lo, 0.0);
  EXPECT_NEAR(none.hi, 1 - std::pow(0.025, 0.1), 1e-12);  // 0.3085
  const Interval all = ClopperPearson(10, 10);
  EXPECT_NEAR(all.lo, std::pow(0.025, 0.1), 1e-12);
  EXPECT_EQ(all.hi, 1.0);
  const Interval half = ClopperPearson(5, 10);
  EXPECT_NEAR(half.lo, 0.187086, 1e-6);
  EXPECT_NEAR(half.hi, 0.812914, 1e-6);
  // Narrower with more trials and at lower confidence; always contains the estimate.
  const Interval big = ClopperPearson(500, 1000);
  EXPECT_LT(big.hi - big.lo, half.hi - half.lo);
  const Interval loose = ClopperPearson(5, 10, 0.5);
  EXPECT_LT(loose.hi - loose.lo, half.hi - half.lo);
  EXPECT_TRUE(big.lo < 0.5 && big.hi > 0.5);
  const Interval empty = ClopperPearson(0, 0);
  EXPECT_EQ(empty.lo, 0.0);
  EXPECT_EQ(empty.hi, 1.0);
}

// The t interval's textbook quantiles: t_{0.975, 2} = 4.302653, t_{0.975, 9} = 2.262157.
TEST(MeanInterval, UsesStudentsTQuantiles) {
  const Interval three = MeanInterval({1, 2, 3});  // mean 2, sd 1
  EXPECT_NEAR(three.lo, 2 - 4.302653 / std::sqrt(3.0), 1e-6);
  EXPECT_NEAR(three.hi, 2 + 4.302653 / std::sqrt(3.0), 1e-6);
  std::vector<double> ten;
  for (int i = 0; i < 10; ++i) ten.push_back(i);  // mean 4.5, sd sqrt(55/6)
  const Interval t = MeanInterval(ten);
  EXPECT_NEAR(t.hi - 4.5, 2.262157 * std::sqrt(55.0 / 6) / std::sqrt(10.0), 1e-5);
  const Interval same = MeanInterval({0.5, 0.5});
  EXPECT_EQ(same.lo, 0.5);
  EXPECT_EQ(same.hi, 0.5);
}

}  // namespace
}  // namespace lexp
