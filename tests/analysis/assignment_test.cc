// The least-cost one-to-one matching (analysis/assignment.h) against every permutation of small
// random matrices, and on the case a per-row minimum gets wrong: every row cheapest at the same
// column.
#include "analysis/assignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "nn/rng.h"

namespace lexp {
namespace {

double Total(const std::vector<double>& c, int n, const std::vector<int>& m) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += c[i * n + m[i]];
  return s;
}

TEST(Assignment, MatchesTheBestPermutationOfRandomMatrices) {
  Rng rng(3);
  for (int n = 1; n <= 6; ++n)
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> c(n * n);
      for (double& x : c) x = rng.Uniform();
      const std::vector<int> m = MinCostAssignment(c, n);
      std::vector<int> sorted = m;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int> perm(n);
      std::iota(perm.begin(), perm.end(), 0);
      ASSERT_EQ(sorted, perm) << "a permutation";
      double best = 1e300;
      do best = std::min(best, Total(c, n, perm));
      while (std::next_permutation(perm.begin(), perm.end()));
      EXPECT_NEAR(Total(c, n, m), best, 1e-12) << n << " " << trial;
    }
}

TEST(Assignment, RowsThatAllPreferOneColumnShareIt) {
  // Every row's cheapest column is 2 (a per-row minimum gives 0, 0, 0); one row gets it.
  const std::vector<double> c = {0.5, 0.6, 0.0,  //
                                 0.9, 0.4, 0.0,  //
                                 0.3, 0.8, 0.0};
  const std::vector<int> m = MinCostAssignment(c, 3);
  EXPECT_NEAR(Total(c, 3, m), 0.7, 1e-12);  // 0.3 + 0.4 + 0.0
  EXPECT_EQ(m, (std::vector<int>{2, 1, 0}));
}

}  // namespace
}  // namespace lexp
