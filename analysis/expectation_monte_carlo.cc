#include "analysis/expectation_monte_carlo.h"

#include <cmath>
#include <complex>

#include "nn/check.h"
#include "nn/parallel.h"
#include "nn/rng.h"

namespace lexp::theory {
namespace {

constexpr long kSamplesPerChunk = 64;

// Pair factor c_k(n) = zeta_k^(n/B) e^{i n theta_k}.
std::complex<double> PairFactor(double theta, double zeta, double scale_base, long n) {
  const double decay = zeta > 0 ? std::pow(zeta, n / scale_base) : 1.0;
  return std::polar(decay, static_cast<double>(n) * theta);
}

double Draw(const ContentDistribution& c, Rng& rng) {
  if (c.family == "uniform") return c.mean + c.sd * std::sqrt(3.0) * (2 * rng.Uniform() - 1);
  return c.mean + c.sd * rng.Normal();
}

void Validate(const std::vector<double>& theta, const std::vector<double>& zeta, double scale_base,
              const ContentDistribution& c) {
  LEXP_INPUT_CHECK(
      c.family == "gaussian" || c.family == "uniform",
      "expectation: content distribution '" + c.family + "' is not known; use gaussian or uniform");
  LEXP_INPUT_CHECK(c.sd >= 0, "expectation: the content standard deviation must be >= 0");
  LEXP_INPUT_CHECK(zeta.empty() || (zeta.size() == theta.size() && scale_base > 0),
                   "expectation: one zeta per pair and a positive scale base needed");
}

}  // namespace

MonteCarloCurve ExpectationMonteCarlo(const std::vector<double>& theta,
                                      const std::vector<double>& zeta, double scale_base,
                                      const std::vector<long>& distances,
                                      const ContentDistribution& content, long samples,
                                      uint64_t seed) {
  Validate(theta, zeta, scale_base, content);
  LEXP_INPUT_CHECK(samples >= 2, "expectation: at least 2 Monte-Carlo samples are needed");
  const int P = static_cast<int>(theta.size());
  const long N = static_cast<long>(distances.size());
  // Pair factors once: [N, P].
  std::vector<std::complex<double>> factor(static_cast<size_t>(N) * P);
  for (long n = 0; n < N; ++n)
    for (int k = 0; k < P; ++k)
      factor[n * P + k] =
          PairFactor(theta[k], zeta.empty() ? 0.0 : zeta[k], scale_base, distances[n]);
  const long chunks = (samples + kSamplesPerChunk - 1) / kSamplesPerChunk;
  std::vector<double> sum(static_cast<size_t>(chunks) * N, 0.0), sum2(sum.size(), 0.0);
  const Rng root(seed);
  ParallelFor(chunks, [&](long c) {
    Rng rng = root.Split(static_cast<uint64_t>(c));
    std::vector<std::complex<double>> h(P);
    double* s1 = sum.data() + c * N;
    double* s2 = sum2.data() + c * N;
    const long end = std::min(samples, (c + 1) * kSamplesPerChunk);
    for (long s = c * kSamplesPerChunk; s < end; ++s) {
      // h_k = q_k conj(k_k) for complex pairs q_k = (q_a, q_b).
      for (int k = 0; k < P; ++k) {
        const std::complex<double> q(Draw(content, rng), Draw(content, rng));
        const std::complex<double> kk =
            content.same_content ? q : std::complex<double>(Draw(content, rng), Draw(content, rng));
        h[k] = q * std::conj(kk);
      }
      for (long n = 0; n < N; ++n) {
        double z = 0;
        const std::complex<double>* f = factor.data() + n * P;
        for (int k = 0; k < P; ++k) z += (h[k] * f[k]).real();
        s1[n] += z;
        s2[n] += z * z;
      }
    }
  });
  MonteCarloCurve out;
  out.samples = samples;
  out.mean.assign(N, 0.0);
  out.standard_error.assign(N, 0.0);
  for (long n = 0; n < N; ++n) {
    double a = 0, b = 0;
    for (long c = 0; c < chunks; ++c) {
      a += sum[c * N + n];
      b += sum2[c * N + n];
    }
    const double m = a / samples;
    const double var = std::max(0.0, (b - samples * m * m) / (samples - 1));
    out.mean[n] = m;
    out.standard_error[n] = std::sqrt(var / samples);
  }
  return out;
}

std::vector<double> ExpectationClosedForm(const std::vector<double>& theta,
                                          const std::vector<double>& zeta, double scale_base,
                                          const std::vector<long>& distances,
                                          const ContentDistribution& content) {
  Validate(theta, zeta, scale_base, content);
  const double m2 = content.mean * content.mean;
  const double scale = content.same_content ? m2 + content.sd * content.sd : m2;
  std::vector<double> out(distances.size(), 0.0);
  for (size_t n = 0; n < distances.size(); ++n) {
    double s = 0;
    for (size_t k = 0; k < theta.size(); ++k)
      s += 2 * PairFactor(theta[k], zeta.empty() ? 0.0 : zeta[k], scale_base, distances[n]).real();
    out[n] = scale * s;
  }
  return out;
}

}  // namespace lexp::theory
