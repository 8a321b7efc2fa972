#include "analysis/rope_theory.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>

#include "nn/check.h"
#include "nn/parallel.h"
#include "pe/rope.h"
#include "pe/xpos.h"

namespace lexp::theory {

namespace {
constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr long kProxyGrain = 4096;  // distances per chunk; each chunk restarts from exact angles
}  // namespace

CriticalDimension CriticalDim(int d, double T_train, double base) {
  LEXP_INPUT_CHECK(d >= 2 && d % 2 == 0, "theory: the head dimension must be even");
  LEXP_INPUT_CHECK(T_train > 0 && base > 1, "theory: training length > 0 and base > 1 needed");
  CriticalDimension c;
  c.ratio = (d / 2.0) * std::log(T_train / kTwoPi) / std::log(base);
  c.d_extra = std::clamp(2 * static_cast<int>(std::ceil(c.ratio)), 0, d);
  return c;
}

double PairPeriod(int d, double base, int k) { return kTwoPi * std::pow(base, 2.0 * k / d); }

double ExtrapolationLimit(double base, int d_extra, int d) {
  return kTwoPi * std::pow(base, static_cast<double>(d_extra) / d);
}

double BaseForLength(double target, double T_train) {
  return std::pow(1e4, std::log(target / kTwoPi) / std::log(T_train / kTwoPi));
}

SmallBaseCriticals SmallBaseCriticalValues(double T) {
  return {2 * T / M_PI, T / M_PI, T / kTwoPi};
}

double FullPeriodBase(double T, int d) { return std::pow(T / kTwoPi, d / (d - 2.0)); }

std::vector<double> DecayBound(int d, double base, const std::vector<double>& distances) {
  const std::vector<double> theta = RopeInverseFrequencies(d, base);
  std::vector<double> out(distances.size());
  for (size_t i = 0; i < distances.size(); ++i) {
    std::complex<double> S = 0;
    double sum = 0;
    for (int j = 1; j <= d / 2; ++j) {
      S += std::polar(1.0, distances[i] * theta[j - 1]);
      sum += std::abs(S);
    }
    out[i] = sum / (d / 2.0);
  }
  return out;
}

std::vector<double> ExpectationProxy(int d, double base, long max_distance, double xpos_scale_base,
                                     double xpos_gamma) {
  const bool xpos = xpos_scale_base > 0;
  return ExpectationProxyFor(RopeInverseFrequencies(d, base),
                             xpos ? XposZeta(d, xpos_gamma) : std::vector<double>{},
                             xpos_scale_base, max_distance);
}

// Chunks of distances in parallel; inside a chunk every pair advances by one rotation (and decay)
// per step from exact values at the chunk's start, so results do not depend on the thread count.
std::vector<double> ExpectationProxyFor(const std::vector<double>& theta,
                                        const std::vector<double>& zeta, double scale_base,
                                        long max_distance) {
  LEXP_INPUT_CHECK(max_distance >= 0, "theory: max_distance must be >= 0");
  const bool decay = !zeta.empty();
  LEXP_CHECK(!decay || (zeta.size() == theta.size() && scale_base > 0),
             "theory: one zeta per pair and a positive scale base needed");
  const int P = static_cast<int>(theta.size());
  std::vector<double> s(max_distance + 1, 0.0);
  ParallelChunks(max_distance + 1, kProxyGrain, [&](long n0, long n1) {
    std::vector<std::complex<double>> z(P), step(P);
    for (int k = 0; k < P; ++k) {
      const double decay0 = decay ? std::pow(zeta[k], n0 / scale_base) : 1.0;
      const double decay1 = decay ? std::pow(zeta[k], 1.0 / scale_base) : 1.0;
      z[k] = std::polar(decay0, n0 * theta[k]);
      step[k] = std::polar(decay1, theta[k]);
    }
    for (long n = n0; n < n1; ++n) {
      double acc = 0;
      for (int k = 0; k < P; ++k) {
        acc += z[k].real();
        z[k] *= step[k];
      }
      s[n] = 2 * acc;
    }
  });
  return s;
}

double RotaryLogitSupremum(const std::vector<double>& q_pair_norm,
                           const std::vector<double>& k_pair_norm) {
  LEXP_INPUT_CHECK(q_pair_norm.size() == k_pair_norm.size(),
                   "theory: one query and one key norm per pair needed");
  double s = 0;
  for (size_t k = 0; k < q_pair_norm.size(); ++k) s += std::abs(q_pair_norm[k] * k_pair_norm[k]);
  return s;
}

double RotaryLogitMaxOver(const std::vector<double>& h_re, const std::vector<double>& h_im,
                          const std::vector<double>& theta, long max_distance) {
  LEXP_INPUT_CHECK(h_re.size() == theta.size() && h_im.size() == theta.size(),
                   "theory: one h and one theta per pair needed");
  const long chunks = (max_distance + kProxyGrain) / kProxyGrain;
  std::vector<double> best(chunks, -std::numeric_limits<double>::infinity());
  ParallelChunks(max_distance + 1, kProxyGrain, [&](long n0, long n1) {
    double m = -std::numeric_limits<double>::infinity();
    for (long n = n0; n < n1; ++n) {
      double z = 0;
      for (size_t k = 0; k < theta.size(); ++k)
        z += (std::complex<double>(h_re[k], h_im[k]) * std::polar(1.0, n * theta[k])).real();
      m = std::max(m, z);
    }
    best[n0 / kProxyGrain] = m;
  });
  return *std::max_element(best.begin(), best.end());
}

double AttentionResolution(const std::vector<double>& s, ResolutionConvention c) {
  LEXP_INPUT_CHECK(!s.empty(), "theory: resolution needs at least one score");
  double mx = -std::numeric_limits<double>::infinity();
  for (double v : s)
    if (!std::isnan(v)) mx = std::max(mx, v);
  if (!std::isfinite(mx)) return std::numeric_limits<double>::quiet_NaN();  // no score at all
  // The curve ends at its last score (missing distances after it are no gap: nothing follows).
  size_t N = s.size() - 1;
  while (std::isnan(s[N])) --N;
  double num = 0, den = 0;
  for (size_t i = 0; i <= N; ++i) {
    if (std::isnan(s[i])) continue;  // a distance with no pair: a gap
    const double e = std::exp(s[i] - mx);
    den += e;
    if (i < N) {
      // A term needs its neighbour; across a gap the curve is not joined.
      if (!std::isnan(s[i + 1])) num += e * (e - std::exp(s[i + 1] - mx));
    } else if (c == ResolutionConvention::kSequenceEnds) {
      num += e * e;
    }
  }
  return num / (den * den);
}

CurveResolutions ResolutionsOf(const std::vector<double>& s, size_t window) {
  const size_t W = std::min(window, s.size());
  std::vector<double> flat(s.size());
  for (size_t d = 0; d < s.size(); ++d)
    flat[d] = std::isnan(s[d]) ? std::numeric_limits<double>::quiet_NaN() : 0.0;
  CurveResolutions r;
  r.a = AttentionResolution(s);
  r.b = AttentionResolution(s, ResolutionConvention::kDropLast);
  r.window = AttentionResolution(std::vector<double>(s.begin(), s.begin() + W));
  r.flat = AttentionResolution(flat);
  r.flat_window = AttentionResolution(std::vector<double>(flat.begin(), flat.begin() + W));
  return r;
}

}  // namespace lexp::theory
