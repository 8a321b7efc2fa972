// Monte-Carlo attention expectation: converges to its closed form within the stated standard error
// (RoPE, xPos decay, partial rotation, both content models, both distributions), the error falls
// as 1/sqrt(samples), and the result does not depend on the thread count.
#include "analysis/expectation_monte_carlo.h"

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/rope_theory.h"
#include "nn/parallel.h"
#include "pe/rope.h"
#include "pe/xpos.h"

namespace lexp::theory {
namespace {

const std::vector<long> kDistances = {0, 1, 3, 10, 50, 100, 1000, 4096};

void ExpectWithinErrors(const MonteCarloCurve& mc, const std::vector<double>& closed) {
  ASSERT_EQ(mc.mean.size(), closed.size());
  for (size_t n = 0; n < closed.size(); ++n) {
    EXPECT_GT(mc.standard_error[n], 0.0) << "n index " << n;
    // 4.5 standard errors: a false failure about once in 10^5 distances.
    EXPECT_NEAR(mc.mean[n], closed[n], 4.5 * mc.standard_error[n]) << "distance " << kDistances[n];
  }
}

TEST(ExpectationMonteCarlo, SameContentGaussianConvergesToScaledProxy) {
  const auto theta = RopeInverseFrequencies(32, 1e4);
  ContentDistribution c;  // N(0, 1), q = k
  const auto mc = ExpectationMonteCarlo(theta, {}, 0, kDistances, c, 4000, 7);
  const auto closed = ExpectationClosedForm(theta, {}, 0, kDistances, c);
  ExpectWithinErrors(mc, closed);
  // Closed form = (mu^2 + sigma^2) * the all-ones proxy of Sun et al. 2022, sections 2-3.
  const auto proxy = ExpectationProxy(32, 1e4, 4096);
  for (size_t n = 0; n < kDistances.size(); ++n) EXPECT_NEAR(closed[n], proxy[kDistances[n]], 1e-9);
  EXPECT_NEAR(closed[0], 32.0, 1e-12) << "E|x|^2 = d at distance 0";
}

TEST(ExpectationMonteCarlo, XposDecayUniformAndIndependentContent) {
  const auto theta = RopeInverseFrequencies(16, 1e4);
  const auto zeta = XposZeta(16, 0.4);
  ContentDistribution c;
  c.family = "uniform";
  c.mean = 0.5;
  c.sd = 0.7;
  ExpectWithinErrors(ExpectationMonteCarlo(theta, zeta, 512, kDistances, c, 4000, 3),
                     ExpectationClosedForm(theta, zeta, 512, kDistances, c));
  c.same_content = false;
  const auto closed = ExpectationClosedForm(theta, zeta, 512, kDistances, c);
  ExpectWithinErrors(ExpectationMonteCarlo(theta, zeta, 512, kDistances, c, 4000, 4), closed);
  const auto proxy = ExpectationProxy(16, 1e4, 4096, 512, 0.4);
  EXPECT_NEAR(closed[3], 0.25 * proxy[10], 1e-9) << "independent content: mu^2 * proxy";
}

TEST(ExpectationMonteCarlo, PartialRotationKeepsAConstantFloor) {
  // Half the pairs do not rotate (theta = 0): their mean score is the same at every distance.
  std::vector<double> theta = RopeInverseFrequencies(16, 1e4);
  for (size_t k = 4; k < theta.size(); ++k) theta[k] = 0;
  ContentDistribution c;
  const auto closed = ExpectationClosedForm(theta, {}, 0, kDistances, c);
  EXPECT_NEAR(closed[0], 16.0, 1e-12);
  ExpectWithinErrors(ExpectationMonteCarlo(theta, {}, 0, kDistances, c, 3000, 5), closed);
}

TEST(ExpectationMonteCarlo, ErrorFallsAsOneOverRootSamplesAndIgnoresThreads) {
  const auto theta = RopeInverseFrequencies(16, 1e4);
  ContentDistribution c;
  const auto a = ExpectationMonteCarlo(theta, {}, 0, kDistances, c, 1000, 11);
  const auto b = ExpectationMonteCarlo(theta, {}, 0, kDistances, c, 16000, 11);
  for (size_t n = 0; n < kDistances.size(); ++n)
    EXPECT_NEAR(b.standard_error[n] / a.standard_error[n], 0.25, 0.05) << kDistances[n];
  MonteCarloCurve one;
  {
    ThreadLimit limit(1);
    one = ExpectationMonteCarlo(theta, {}, 0, kDistances, c, 1000, 11);
  }
  EXPECT_EQ(one.mean, a.mean);
  EXPECT_EQ(one.standard_error, a.standard_error);
}

TEST(ExpectationMonteCarlo, BadInputIsRefused) {
  ContentDistribution c;
  c.family = "cauchy";
  EXPECT_THROW(ExpectationMonteCarlo({0.1}, {}, 0, {1}, c, 10, 1), std::exception);
  c.family = "gaussian";
  EXPECT_THROW(ExpectationMonteCarlo({0.1}, {}, 0, {1}, c, 1, 1), std::exception);
}

TEST(RotaryLogitSupremum, BoundsEveryDistanceAndIsApproachedOverLongRanges) {
  // h_k = q_k conj(k_k) for random pairs; logits at every distance stay below sum |q_k||k_k|, and
  // a million distances come within 3% of it (rationally independent frequencies), while the
  // first 64 distances (a short training range) fall clearly short.
  const auto theta = RopeInverseFrequencies(8, 1e4);
  Rng rng(9);
  std::vector<double> qn, kn, hr, hi;
  for (size_t k = 0; k < theta.size(); ++k) {
    const std::complex<double> q(rng.Normal(), rng.Normal()), kk(rng.Normal(), rng.Normal());
    qn.push_back(std::abs(q));
    kn.push_back(std::abs(kk));
    const auto h = q * std::conj(kk);
    hr.push_back(h.real());
    hi.push_back(h.imag());
  }
  const double sup = RotaryLogitSupremum(qn, kn);
  const double long_max = RotaryLogitMaxOver(hr, hi, theta, 1'000'000);
  const double short_max = RotaryLogitMaxOver(hr, hi, theta, 63);
  EXPECT_LE(long_max, sup + 1e-12);
  EXPECT_GT(long_max, 0.97 * sup);
  EXPECT_LT(short_max, 0.9 * sup);
  EXPECT_EQ(RotaryLogitSupremum({1, 2}, {3, 0.5}), 4.0);
}

}  // namespace
}  // namespace lexp::theory
