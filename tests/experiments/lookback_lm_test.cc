// The long-range source of the base-scaling recipe: its repeat frequency and measured surprisal
// agree with the closed form within their standard errors, and the first kGap tokens never repeat
// by construction.
#include "experiments/tasks/lookback_lm.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lexp {
namespace {

TEST(LookbackLm, RepeatFrequencyAndEntropyRateMatchTheClosedForm) {
  const int V = 16;
  const LookbackLmTask task(V);
  Rng rng(5);
  const int S = 400, T = 200, g = LookbackLmTask::kGap;
  long repeats = 0, count = 0;
  std::vector<double> per_seq;
  for (int s = 0; s < S; ++s) {
    const Example e = task.Sample(T, rng);
    ASSERT_EQ(static_cast<int>(e.output.size()), T);
    double nll = 0;
    for (int t = g; t < T; ++t) {
      repeats += e.output[t] == e.output[t - g];
      ++count;
      nll -= std::log(task.Conditional(e.output[t], e.output[t - g]));
    }
    per_seq.push_back(nll / (T - g));
  }
  const double a = LookbackLmTask::kRepeat + (1 - LookbackLmTask::kRepeat) / V;
  const double p_hat = static_cast<double>(repeats) / count;
  EXPECT_NEAR(p_hat, a, 4 * std::sqrt(a * (1 - a) / count));
  double m = 0, v = 0;
  for (double x : per_seq) m += x / S;
  for (double x : per_seq) v += (x - m) * (x - m) / (S - 1);
  EXPECT_NEAR(m, task.EntropyRate(), 4 * std::sqrt(v / S));
  // The closed form at the extremes: r = 0 would give ln V; the rate is below ln V and above 0.
  EXPECT_LT(task.EntropyRate(), std::log(V));
  EXPECT_GT(task.EntropyRate(), 0.0);
}

TEST(LookbackLm, ConditionalIsANormalisedDistribution) {
  const LookbackLmTask task(8);
  double total = 0;
  for (int v = 0; v < 8; ++v) total += task.Conditional(v, 3);
  EXPECT_NEAR(total, 1.0, 1e-12);
}

}  // namespace
}  // namespace lexp
