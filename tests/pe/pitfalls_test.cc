// Regression tests for the known pitfalls of positional-encoding code, numbered as lexp's comments
// cite them ("pitfall 9"). Each entry: what goes wrong in public implementations, and what lexp
// does.
//   1  RoPE pairing: interleaved pairs (2k, 2k+1) and half-split pairs (k, k+D/2) are different
//      functions of the same weights; lexp keeps one layout per run (option `pairing`).
//   2  YaRN temperature: applying the factor to both cos and sin scales the logits by its square;
//      lexp scales the logits once by (0.1 ln s + 1)^2.
//   3  With partial rotation the temperature must reach the unrotated dimensions too: it is applied
//      to the logits, not to cos/sin.
//   4  NTK-by-parts/YaRN ramp: the paper ramps linearly in L/lambda, the reference code in the pair
//      index; lexp follows the code and names the paper's variant (ramp = "paper").
//   5  YaRN's beta names: beta_fast = 32 is the low pair index, beta_slow = 1 the high one.
//   6  The training length L of a scaling rule is kept apart from the current sequence length.
//   7  Dynamic rules with a key cache: keys rotated with an old base must be rotated again.
//   8  LongRoPE's short-to-long switch invalidates a cache (not applicable: not implemented).
//   9  ALiBi's row-constant trick equals the explicit -m |i - j| bias only under a causal mask.
//  10  ALiBi slopes for a head count that is not a power of two: the extra slopes are every other
//      slope of the doubled head count, appended unsorted.
//  11  Biases are added after the 1/sqrt(D) scaling and are not scaled themselves.
//  12  T5 buckets: log(0) must not be evaluated, and boundaries at exact powers of two are checked.
//  13  xPos scales overflow far from the centre: positions are centred and scales formed in double.
//  14  S2-Attn's roll wraps the first tokens into the last group; lexp shifts without wrapping.
//  15  Sinusoid variants: the paper's interleaved sin/cos differs from the sin-block/cos-block
//      layout of some libraries; lexp follows the paper.
//  16  Reference vectors computed in float32 differ in the last digits; tolerances say so.
//  17  RoPE angles pos * theta lose precision in low precision at long positions; lexp forms them
//      in double and casts only cos/sin.
//  18  PoSE's "revised" YaRN interpolates wavelengths (harmonic blend); it is an explicit option.
//  19  FIRE's threshold is max(i, L), not min(i, L).
//  20  Randomized positions are sampled at evaluation too in the reference code; lexp makes it a
//      switch (model.positions_at_eval).
//  21  Sandwich: an old implementation summed raw angles without the cosine; b(0) = 0 and b <= 0.
//  22  LM-Infinite: global keys inside the local window are not counted twice, and the distance
//      cap applies only outside the window.
// Covered by tests elsewhere:
//   1 pairing: Rope.HalfSplitEqualsPermutedInterleaved;  2, 6, 7 YaRN temperature, training length,
//   dynamic recompute: RopeScaled.*;  4 ramp: RopeScaling.PaperRampDiffersFromCodeRampMidway;
//   5 beta naming and 16 tolerances: RopeScaling.YarnMatchesReferenceTables;  9 ALiBi trick:
//   Alibi.ExplicitBiasEqualsRowConstantTrickOnlyUnderCausalMask;  10 slopes: Alibi.SlopesMatch...;
//   12 T5 boundaries: T5.BucketsAreMonotoneAndSaturate;  13 xPos scale: XPos.*;  14 S2-Attn leak:
//   Patterns.ShiftedSparseGroupsWithoutWrapAround;  15 sinusoid: Sinusoidal.MatchesPaperVectors;
//   19 FIRE threshold: Fire.NormalizedDistanceMatchesReferenceAndProperties;  20 randomized at
//   evaluation: PositionSchemes.WrapAnyEncodingAndSwitchAtEvaluation;  21 sandwich: Sandwich.*;
//   22 LM-Infinite double counting: Patterns.LambdaMatchesReferenceIndexSetAndCapsDistance.
// Here: 3, 11, 17, 18.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "nn/ops/attention.h"
#include "pe/alibi.h"
#include "pe/registry.h"
#include "pe/rope_scaling.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

// Captured logits [H*T, T] of one sequence, with site 3 applied as the model applies it.
MatD Logits(PositionEncoding<double>& enc, const MatD& q, const MatD& k, int H, int D) {
  const int T = static_cast<int>(q.rows());
  std::vector<double> pos(T);
  std::iota(pos.begin(), pos.end(), 0.0);
  enc.Prepare(pos, PositionSpan(pos));
  AttentionPattern pat(true);
  MatD qr = q, kr = k, v = MatD::Zero(T, H * D), out;
  for (int h = 0; h < H; ++h) {
    AttentionContext ctx{0, h, H, D, T, pos.data(), &pat, true};
    enc.TransformQK(ctx, true, qr.data() + h * D, H * D);
    enc.TransformQK(ctx, false, kr.data() + h * D, H * D);
  }
  AttentionCache<double> c;
  c.capture_logits = true;
  AttentionForward(qr, kr, v, AttentionShape{1, T, H, D}, pos, pat, enc, 0, true, c, out);
  return c.logits;
}

// Pitfall 3: with partial rotation the YaRN temperature must reach the unrotated dimensions too, so
// it is applied to the logits (mscale^2), not to cos and sin.
TEST(Pitfall, YarnTemperatureCoversTheUnrotatedDimensionsOfPartialRope) {
  const EncodingShape es{32, 2, 1, true, 256, 64};
  auto yarn = CreateEncoding<double>(
      "rope_partial", {{"fraction", "0.5"}, {"scaling", "yarn"}, {"factor", "4"}}, es);
  auto parts = CreateEncoding<double>(
      "rope_partial", {{"fraction", "0.5"}, {"scaling", "ntk_by_parts"}, {"factor", "4"}}, es);
  Rng rng(1);
  MatD q(12, 32), k(12, 32);
  testing::FillNormal(q, rng);
  testing::FillNormal(k, rng);
  // Keys with only unrotated dimensions: a temperature put on cos/sin would not touch these logits.
  for (int h = 0; h < 2; ++h) k.middleCols(16 * h, 8).setZero();
  const MatD a = Logits(*yarn, q, k, 2, 16), b = Logits(*parts, q, k, 2, 16);
  const double m2 = std::pow(0.1 * std::log(4.0) + 1, 2);
  for (long i = 0; i < a.rows(); ++i)
    for (long j = 0; j <= i % 12; ++j) EXPECT_NEAR(a(i, j), m2 * b(i, j), 1e-12);
}

// Pitfall 11: biases are added after the 1/sqrt(D) scaling and are not scaled themselves.
TEST(Pitfall, BiasesAreAddedUnscaled) {
  const int H = 2, D = 16, T = 9;
  auto alibi = CreateEncoding<double>("alibi", {}, EncodingShape{H * D, H, 1, true, 64});
  MatD q(T, H * D), k = MatD::Zero(T, H * D);  // zero keys: the content term is 0
  Rng rng(2);
  testing::FillNormal(q, rng);
  const MatD lg = Logits(*alibi, q, k, H, D);
  const auto slopes = AlibiSlopes(H);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < T; ++i)
      for (int j = 0; j <= i; ++j) EXPECT_DOUBLE_EQ(lg(h * T + i, j), -slopes[h] * (i - j));
}

// Pitfall 17: angles pos * theta are formed in double; a float model rotates position 10^6 as the
// double one does (float angles would be off by ~0.06 rad there).
TEST(Pitfall, RopeAnglesAtLongPositionsKeepTheirPrecisionInFloat) {
  const EncodingShape es{16, 1, 1, true, 2'000'000};
  auto f = CreateEncoding<float>("rope", {}, es);
  auto d = CreateEncoding<double>("rope", {}, es);
  const std::vector<double> pos = {1e6 + 3};
  f->Prepare(pos, PositionSpan(pos));
  d->Prepare(pos, PositionSpan(pos));
  AttentionPattern pat(true);
  AttentionContext ctx{0, 0, 1, 16, 1, pos.data(), &pat, true};
  std::vector<float> xf(16);
  std::vector<double> xd(16);
  for (int c = 0; c < 16; ++c) xf[c] = static_cast<float>(xd[c] = std::cos(1.0 + c));
  f->TransformQK(ctx, true, xf.data(), 16);
  d->TransformQK(ctx, true, xd.data(), 16);
  for (int c = 0; c < 16; ++c) EXPECT_NEAR(xf[c], xd[c], 2e-6) << c;
}

// Pitfall 18: the harmonic (PoSE "revised") blend is a named option; it agrees with the linear
// blend at both ends of the ramp and differs inside it.
TEST(Pitfall, HarmonicYarnBlendIsExplicitAndDiffersOnlyInsideTheRamp) {
  RopeScalingConfig c;
  c.rule = "yarn";
  c.factor = 16;
  c.original_length = 4096;
  const ScaledFrequencies lin = ScaleRope(128, 1e4, c, 4096);
  c.blend = "harmonic";
  const ScaledFrequencies har = ScaleRope(128, 1e4, c, 4096);
  int inside = 0;
  for (int k = 0; k < 64; ++k) {
    if (k <= lin.low || k >= lin.high) {
      EXPECT_NEAR(har.inv_freq[k], lin.inv_freq[k], 1e-15 * lin.inv_freq[k]) << k;
    } else {
      inside += std::abs(har.inv_freq[k] / lin.inv_freq[k] - 1) > 1e-3;
    }
  }
  EXPECT_GT(inside, 0);
}

}  // namespace
}  // namespace lexp
