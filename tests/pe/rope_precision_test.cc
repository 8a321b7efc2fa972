// RoPE's relative property under the rotary transform's precision (Wang et al. 2024, "When
// Precision Meets Position: BFloat16 Breaks Down RoPE in Long-Context Training", arXiv:2411.13476,
// section 3): q_m . k_n depends on m - n only. In fp32 it holds to fp32 rounding at every position
// (angles are formed in double, pitfall 17); with the rotation in bf16 it does not, and position 0
// (cos 1, sin 0) is the one position whose rotation is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "nn/precision.h"
#include "nn/rng.h"
#include "pe/registry.h"

namespace lexp {
namespace {

constexpr int kD = 64;

// q rotated to position m and k to position m - d, for every m of `ms`: their dot products.
std::vector<double> RotatedDots(Precision rotary, const std::vector<double>& ms, int d) {
  const EncodingShape es{kD, 1, 1, true, 4'000'000};
  auto rope = CreateEncoding<float>("rope", {}, es);
  Rng rng(21);
  std::vector<float> q(kD), k(kD);
  for (int c = 0; c < kD; ++c) {
    q[c] = static_cast<float>(rng.Normal());
    k[c] = static_cast<float>(rng.Normal());
  }
  const int T = static_cast<int>(ms.size());
  std::vector<float> qs(static_cast<size_t>(T) * kD), ks(qs.size());
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < kD; ++c) {
      qs[t * kD + c] = q[c];
      ks[t * kD + c] = k[c];
    }
  PrecisionPolicy policy;
  policy.rotary = rotary;
  const PrecisionScope scope(policy);
  AttentionPattern pat(true);
  std::vector<double> kpos(ms.size());
  for (size_t i = 0; i < ms.size(); ++i) kpos[i] = ms[i] - d;
  rope->Prepare(ms, PositionSpan(ms));
  AttentionContext qctx{0, 0, 1, kD, T, ms.data(), &pat, true};
  rope->TransformQK(qctx, true, qs.data(), kD);
  rope->Prepare(kpos, PositionSpan(kpos));
  AttentionContext kctx{0, 0, 1, kD, T, kpos.data(), &pat, true};
  rope->TransformQK(kctx, false, ks.data(), kD);
  std::vector<double> dots(ms.size());
  for (int t = 0; t < T; ++t) {
    double s = 0;
    for (int c = 0; c < kD; ++c) s += double(qs[t * kD + c]) * ks[t * kD + c];
    dots[t] = s;
  }
  return dots;
}

double Spread(const std::vector<double>& x) {
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  return *hi - *lo;
}

TEST(RopePrecision, RelativePropertyHoldsInFp32AndBreaksInBf16AtLongPositions) {
  // Query positions from 100 to about 10^6 at distance 37 from their keys.
  std::vector<double> ms;
  for (double m = 100; m < 1.1e6; m *= 1.05) ms.push_back(std::floor(m));
  const double scale = std::sqrt(double(kD));  // |q . k| of unit-variance vectors, roughly
  const double fp32 = Spread(RotatedDots(Precision::kFp32, ms, 37));
  const double bf16 = Spread(RotatedDots(Precision::kBf16, ms, 37));
  // fp32: each rotated component within a few fp32 ulps, so the dot within ~D 2^-23 of its size.
  EXPECT_LT(fp32, 64 * std::ldexp(scale, -23)) << "fp32 spread " << fp32;
  // bf16: components rounded at up to 2^-8 relative (bf16's unit roundoff), several times over:
  // the dot moves by about 2^-9 of its scale or more.
  EXPECT_GT(bf16, 100 * fp32 + std::ldexp(scale, -10)) << "bf16 spread " << bf16;
}

TEST(RopePrecision, PositionZeroIsTheOneExactRotationInBf16) {
  const std::vector<double> ms = {0, 1, 1000, 100000};
  const EncodingShape es{kD, 1, 1, true, 4'000'000};
  auto rope = CreateEncoding<float>("rope", {}, es);
  PrecisionPolicy policy;
  policy.rotary = Precision::kBf16;
  const PrecisionScope scope(policy);
  Rng rng(4);
  std::vector<float> x(ms.size() * kD), x16(x.size());
  for (size_t i = 0; i < x.size(); ++i) x16[i] = RoundToBf16(x[i] = static_cast<float>(rng.Normal()));
  rope->Prepare(ms, PositionSpan(ms));
  AttentionPattern pat(true);
  AttentionContext ctx{0, 0, 1, kD, 4, ms.data(), &pat, true};
  std::vector<float> r = x;
  rope->TransformQK(ctx, true, r.data(), kD);
  for (int c = 0; c < kD; ++c) EXPECT_EQ(r[c], x16[c]) << "position 0, component " << c;
  // Elsewhere the bf16 rotation is off its exact value (the norm is not kept to fp32 rounding).
  for (int t = 1; t < 4; ++t) {
    double n0 = 0, n1 = 0;
    for (int c = 0; c < kD; ++c) {
      n0 += double(x16[t * kD + c]) * x16[t * kD + c];
      n1 += double(r[t * kD + c]) * r[t * kD + c];
    }
    EXPECT_GT(std::abs(n1 - n0), 1e-5 * n0) << "position " << ms[t];
  }
}

}  // namespace
}  // namespace lexp
