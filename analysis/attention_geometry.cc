#include "analysis/attention_geometry.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lexp {

std::vector<double> LastQueryLogitBound(const float* logits, int T, long ld) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> bound(T, nan);
  const float* row = logits + static_cast<long>(T - 1) * ld;
  double run = -std::numeric_limits<double>::infinity();
  for (int n = 0; n < T; ++n) {
    const double z = row[T - 1 - n];
    if (std::isfinite(z)) run = std::max(run, z);
    bound[n] = std::isfinite(run) ? run : nan;
  }
  return bound;
}

long NonFiniteLogits(const float* logits, int T, long ld) {
  long bad = 0;
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j) {
      const float z = logits[static_cast<long>(i) * ld + j];
      bad += std::isnan(z) || z == std::numeric_limits<float>::infinity();
    }
  return bad;
}

std::vector<double> AllQueriesLogitRunningMax(const float* logits, int T, long ld) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double neg_inf = -std::numeric_limits<double>::infinity();
  std::vector<double> m(T, neg_inf);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) {
      const double z = logits[static_cast<long>(i) * ld + j];
      if (std::isfinite(z) && z > m[i - j]) m[i - j] = z;
    }
  double run = neg_inf;
  for (int n = 0; n < T; ++n) {
    run = std::max(run, m[n]);
    m[n] = std::isfinite(run) ? run : nan;
  }
  return m;
}

void AccumulateLogitsByDistance(const float* logits, int T, long ld, std::vector<double>& sum,
                                std::vector<double>& count, std::vector<double>* sum_sq) {
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) {
      const double z = logits[static_cast<long>(i) * ld + j];
      if (!std::isfinite(z)) continue;
      sum[i - j] += z;
      count[i - j] += 1;
      if (sum_sq) (*sum_sq)[i - j] += z * z;
    }
}

AttendedDistance AttendedDistances(const float* probs, int T, long ld) {
  AttendedDistance d;
  d.mean.assign(T, 0.0);
  d.argmax.assign(T, 0.0);
  for (int i = 0; i < T; ++i) {
    const float* row = probs + static_cast<long>(i) * ld;
    double mean = 0, best = -1;
    int arg = i;
    for (int j = 0; j < T; ++j) {
      mean += static_cast<double>(row[j]) * (i - j);
      if (row[j] > best) {
        best = row[j];
        arg = j;
      }
    }
    d.mean[i] = mean;
    d.argmax[i] = i - arg;
  }
  return d;
}

double JensenShannon(const float* p, const float* q, int n) {
  auto kl_to_mix = [](double a, double m) { return a > 0 ? a * std::log(a / m) : 0.0; };
  double js = 0;
  for (int j = 0; j < n; ++j) {
    const double a = p[j], b = q[j], m = 0.5 * (a + b);
    js += 0.5 * kl_to_mix(a, m) + 0.5 * kl_to_mix(b, m);
  }
  return js;
}

}  // namespace lexp
