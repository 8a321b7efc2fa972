// AdamW's global gradient norm (the clipping factor): summed in fixed chunks in parallel, it must
// be the L2 norm of every gradient element, whatever the parameters' sizes, and the same bits on
// any thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nn/optim/adamw.h"
#include "nn/rng.h"

namespace lexp {
namespace {

// Parameters whose sizes cover a chunk boundary with a ragged last chunk (2 kAdamGrain + 13), a
// size under the eight running sums (5), one element, and a size that is a multiple of eight.
struct Params {
  std::vector<std::vector<float>> values, grads;
  std::vector<ParamRef<float>> refs;
  explicit Params(const std::vector<long>& sizes, uint64_t seed) {
    Rng rng(seed);
    for (const long n : sizes) {
      values.emplace_back(static_cast<size_t>(n), 0.f);
      std::vector<float> g(static_cast<size_t>(n));
      for (float& x : g) x = static_cast<float>(rng.Normal() * 3.0);
      grads.push_back(g);
    }
    for (size_t k = 0; k < sizes.size(); ++k) {
      std::string name(1, 'p');
      name += std::to_string(k);
      refs.push_back({name, values[k].data(), grads[k].data(), sizes[k]});
    }
  }
};

const std::vector<long> kSizes = {2 * kAdamGrain + 13, 5, 1, 64};

TEST(AdamW, GradNormIsTheL2NormOfEveryGradientElement) {
  const Params p(kSizes, 3);
  long double ss = 0;
  for (const auto& g : p.grads)
    for (const float x : g) ss += static_cast<long double>(x) * x;
  const double want = static_cast<double>(std::sqrt(ss));
  const double got = AdamW<float>::GradNorm(p.refs);
  EXPECT_NEAR(got, want, 1e-14 * want);
  // Each element counts: doubling the last element of every parameter moves the norm.
  Params q(kSizes, 3);
  for (size_t k = 0; k < q.grads.size(); ++k) {
    q.grads[k].back() *= 2;
    long double s2 = 0;
    for (const auto& g : q.grads)
      for (const float x : g) s2 += static_cast<long double>(x) * x;
    EXPECT_NEAR(AdamW<float>::GradNorm(q.refs), static_cast<double>(std::sqrt(s2)), 1e-14 * want)
        << "parameter " << k;
  }
}

TEST(AdamW, GradNormHasTheSameBitsOnOneAndTwoThreads) {
  const Params p(kSizes, 4);
  double one, two;
  {
    const ThreadLimit limit(1);
    one = AdamW<float>::GradNorm(p.refs);
  }
  {
    const ThreadLimit limit(2);
    two = AdamW<float>::GradNorm(p.refs);
  }
  EXPECT_EQ(one, two);
}

}  // namespace
}  // namespace lexp
