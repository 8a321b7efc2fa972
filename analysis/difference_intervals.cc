#include "analysis/difference_intervals.h"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>

#include "nn/check.h"

namespace lexp {
namespace {

struct Moments {
  double mean = 0, variance = 0, n = 0;
};

Moments MomentsOf(const std::vector<double>& xs) {
  Moments m;
  m.n = static_cast<double>(xs.size());
  for (const double x : xs) m.mean += x;
  m.mean /= m.n;
  for (const double x : xs) m.variance += (x - m.mean) * (x - m.mean);
  m.variance /= m.n - 1;
  return m;
}

}  // namespace

Interval WelchDifference(const std::vector<double>& a, const std::vector<double>& b,
                         double confidence) {
  LEXP_CHECK(a.size() >= 2 && b.size() >= 2, "Welch interval: fewer than 2 values on a side");
  LEXP_CHECK(confidence > 0 && confidence < 1, "Welch interval: confidence outside (0, 1)");
  const Moments x = MomentsOf(a), y = MomentsOf(b);
  const double d = x.mean - y.mean;
  const double va = x.variance / x.n, vb = y.variance / y.n, se2 = va + vb;
  if (se2 == 0) return {d, d};
  // Welch-Satterthwaite degrees of freedom.
  const double nu = se2 * se2 / (va * va / (x.n - 1) + vb * vb / (y.n - 1));
  const boost::math::students_t t(nu);
  const double half = boost::math::quantile(t, (1 + confidence) / 2) * std::sqrt(se2);
  return {d - half, d + half};
}

Interval PairedDifference(const std::vector<double>& a, const std::vector<double>& b,
                          double confidence) {
  LEXP_CHECK(a.size() == b.size() && a.size() >= 2, "paired interval: fewer than 2 pairs");
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return MeanInterval(d, confidence);
}

Interval MoverDifference(double a, Interval ia, double b, Interval ib) {
  const double d = a - b;
  return {d - std::sqrt((a - ia.lo) * (a - ia.lo) + (ib.hi - b) * (ib.hi - b)),
          d + std::sqrt((ia.hi - a) * (ia.hi - a) + (b - ib.lo) * (b - ib.lo))};
}

double BonferroniConfidence(int m, double alpha) {
  LEXP_CHECK(m >= 1 && alpha > 0 && alpha < 1, "Bonferroni: m >= 1 and alpha in (0, 1)");
  return 1 - alpha / m;
}

}  // namespace lexp
