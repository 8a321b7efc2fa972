#include "analysis/binomial.h"

#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

#include "nn/check.h"

namespace lexp {

Interval ClopperPearson(long successes, long trials, double confidence) {
  LEXP_CHECK(successes >= 0 && successes <= trials,
             "binomial interval: successes outside 0..trials");
  LEXP_CHECK(confidence > 0 && confidence < 1, "binomial interval: confidence outside (0, 1)");
  if (trials == 0) return {};
  using boost::math::binomial_distribution;
  const double alpha = (1 - confidence) / 2;
  const auto n = static_cast<double>(trials), k = static_cast<double>(successes);
  Interval r;
  r.lo = binomial_distribution<>::find_lower_bound_on_p(
      n, k, alpha, binomial_distribution<>::clopper_pearson_exact_interval);
  r.hi = binomial_distribution<>::find_upper_bound_on_p(
      n, k, alpha, binomial_distribution<>::clopper_pearson_exact_interval);
  return r;
}

Interval MeanInterval(const std::vector<double>& xs, double confidence) {
  LEXP_CHECK(xs.size() >= 2, "mean interval: fewer than 2 values");
  LEXP_CHECK(confidence > 0 && confidence < 1, "mean interval: confidence outside (0, 1)");
  const double n = static_cast<double>(xs.size());
  double mean = 0;
  for (const double x : xs) mean += x;
  mean /= n;
  double ss = 0;
  for (const double x : xs) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / (n - 1));
  const boost::math::students_t t(n - 1);
  const double half = boost::math::quantile(t, (1 + confidence) / 2) * sd / std::sqrt(n);
  return {mean - half, mean + half};
}

}  // namespace lexp
