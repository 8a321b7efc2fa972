#include "analysis/attention_stats.h"

#include <cmath>
#include <limits>

namespace lexp {

template <typename S>
AttentionRowStats RowStats(const S* logits, int n) {
  AttentionRowStats r;
  double mx = -std::numeric_limits<double>::infinity(), sum = 0;
  for (int j = 0; j < n; ++j) {
    const double z = logits[j];
    if (!std::isfinite(z)) {
      r.nonfinite += std::isnan(z) || z > 0;
      continue;
    }
    ++r.visible;
    sum += z;
    mx = std::max(mx, z);
  }
  if (r.visible == 0) return r;
  // H = lse(z) - sum_j p_j z_j, computed with the max subtracted.
  double zsum = 0, pz = 0;
  for (int j = 0; j < n; ++j) {
    const double z = logits[j];
    if (!std::isfinite(z)) continue;
    const double e = std::exp(z - mx);
    zsum += e;
    pz += e * (z - mx);
  }
  r.entropy = std::log(zsum) - pz / zsum;
  r.max_logit = mx;
  r.mean_logit = sum / r.visible;
  return r;
}

template <typename S>
AttentionMapStats MapStats(const S* logits, int T, long ld) {
  AttentionMapStats m;
  m.entropy_by_query.resize(T);
  m.max_logit_by_query.resize(T);
  for (int i = 0; i < T; ++i) {
    const AttentionRowStats r = RowStats(logits + i * ld, T);
    m.entropy_by_query[i] = r.entropy;
    m.nonfinite += r.nonfinite;
    m.max_logit_by_query[i] = r.max_logit;
    m.entropy += r.entropy / T;
    m.max_logit += r.max_logit / T;
    m.mean_logit += r.mean_logit / T;
    m.log_visible += std::log(static_cast<double>(std::max(1, r.visible))) / T;
  }
  return m;
}

template AttentionRowStats RowStats<float>(const float*, int);
template AttentionRowStats RowStats<double>(const double*, int);
template AttentionMapStats MapStats<float>(const float*, int, long);
template AttentionMapStats MapStats<double>(const double*, int, long);

}  // namespace lexp
