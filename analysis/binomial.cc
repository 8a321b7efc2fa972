#include "analysis/binomial.h"

#include <boost/math/distributions/binomial.hpp>

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

}  // namespace lexp
