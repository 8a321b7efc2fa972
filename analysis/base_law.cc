#include "analysis/base_law.h"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>

#include "nn/check.h"

namespace lexp {

const char* LimitCriterionName(LimitCriterion c) {
  switch (c) {
    case LimitCriterion::kLoss:
      return "loss";
    case LimitCriterion::kTokenAccuracy:
      return "token_accuracy";
    case LimitCriterion::kExactMatch:
      return "exact_match";
  }
  return "?";
}

double ExtrapolationLimitMeasured(const std::vector<double>& lengths,
                                  const std::vector<double>& scores, double in_distribution,
                                  double tolerance, LimitCriterion criterion) {
  LEXP_CHECK(lengths.size() == scores.size(), "base law: one score per length");
  const bool higher = HigherIsBetter(criterion);
  double limit = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const bool within = higher ? scores[i] >= (1 - tolerance) * in_distribution
                               : scores[i] <= (1 + tolerance) * in_distribution;
    if (!within) break;  // NaN also ends it
    limit = lengths[i];
  }
  return limit;
}

LineFit FitLine(const std::vector<double>& x, const std::vector<double>& y, double confidence) {
  LEXP_CHECK(x.size() == y.size() && x.size() >= 2, "line fit: two or more points needed");
  LineFit f;
  f.n = static_cast<int>(x.size());
  double mx = 0, my = 0;
  for (int i = 0; i < f.n; ++i) {
    mx += x[i] / f.n;
    my += y[i] / f.n;
  }
  double sxx = 0, sxy = 0;
  for (int i = 0; i < f.n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  LEXP_CHECK(sxx > 0, "line fit: the x values are all equal");
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  f.slope_lo = f.slope_hi = f.slope;
  if (f.n >= 3) {
    double sse = 0;
    for (int i = 0; i < f.n; ++i) {
      const double e = y[i] - f.intercept - f.slope * x[i];
      sse += e * e;
    }
    const double se = std::sqrt(sse / (f.n - 2) / sxx);
    const boost::math::students_t t(f.n - 2);
    const double q = boost::math::quantile(boost::math::complement(t, (1 - confidence) / 2));
    f.slope_lo = f.slope - q * se;
    f.slope_hi = f.slope + q * se;
  }
  return f;
}

}  // namespace lexp
