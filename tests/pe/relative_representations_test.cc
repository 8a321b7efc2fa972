// Properties of the relative-representation encodings: Shaw (Shaw et al. 2018: tensor2tensor index,
// saturation beyond the clip) and Transformer-XL (2.2: the logit term equals the naive double loop
// of the paper's formula; with clamp_len every offset past it gives the same logit).
#include <gtest/gtest.h>

#include <cmath>

#include "nn/ops/layernorm.h"
#include "pe/da.h"
#include "pe/patterns.h"
#include "pe/registry.h"
#include "pe/shaw.h"
#include "pe/transformer_xl.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

constexpr int kT = 12, kD = 4, kH = 2;

struct Head {
  MatD q, k;  // [T, D]
  std::vector<double> pos;
  AttentionPattern pat{true};
  AttentionContext Ctx(int head = 0, int layer = 0) const {
    return {layer, head, kH, kD, kT, pos.data(), &pat, true};
  }
  HeadQK<double> QK() const { return {q.data(), k.data(), kD}; }
};

Head RandomHead(uint64_t seed) {
  Head h;
  Rng rng(seed);
  h.q.resize(kT, kD);
  h.k.resize(kT, kD);
  testing::FillNormal(h.q, rng);
  testing::FillNormal(h.k, rng);
  for (int t = 0; t < kT; ++t) h.pos.push_back(t);
  return h;
}

std::unique_ptr<PositionEncoding<double>> Make(const std::string& name,
                                               const std::map<std::string, std::string>& o) {
  auto enc = CreateEncoding<double>(name, o, EncodingShape{kD * kH, kH, 2, true, 64, 16});
  Rng rng(5);
  enc->Init(rng);
  return enc;
}

TEST(Shaw, UsesTheTensor2TensorIndexAndSaturatesBeyondTheClip) {
  auto enc = Make("shaw", {{"clip", "3"}});
  const auto& shaw = dynamic_cast<const Shaw<double>&>(*enc);
  Head h = RandomHead(1);
  const auto ctx = h.Ctx();
  EXPECT_EQ(shaw.Index(ctx, 5, 5), 3);  // offset 0 -> k
  EXPECT_EQ(shaw.Index(ctx, 5, 4), 2);  // j - i = -1
  EXPECT_EQ(shaw.Index(ctx, 5, 0), 0);  // clipped at -k
  EXPECT_EQ(shaw.Index(ctx, 0, 9), 6);  // clipped at +k (bidirectional side)
  // Key term: query 11 sees keys 0..8 (all at clipped offset -3) with the same bias.
  std::vector<double> s(kT, 0.0);
  enc->AddLogitTerm(ctx, 11, 12, 0, kT, h.QK(), s.data(), kT);
  for (int j = 1; j <= 8; ++j) EXPECT_DOUBLE_EQ(s[j], s[0]) << j;
  EXPECT_NE(s[9], s[8]);
  EXPECT_NE(s[10], s[9]);
  // Value term: all the weight on key 0 or on key 5 gives the same output row (both beyond k).
  auto value_row = [&](int j) {
    std::vector<double> p(kT, 0.0), out(kD, 0.0);
    p[j] = 1;
    enc->AddValueTerm(ctx, 11, 12, 0, kT, p.data(), kT, out.data(), kD);
    return out;
  };
  EXPECT_EQ(value_row(0), value_row(5));
  EXPECT_NE(value_row(8), value_row(9));
}

TEST(Shaw, ValuesFalseKeepsOnlyTheKeyTable) {
  auto enc = Make("shaw", {{"values", "false"}});
  EXPECT_FALSE(enc->Uses(kSiteValueTerm));
  ASSERT_EQ(enc->Parameters().size(), 1u);
  EXPECT_EQ(enc->Parameters()[0].name, "pe.shaw.keys");
}

// a_ij += [u.k_j + (q_i + v).(W_R^T R_{i-j})_h] / sqrt(D), written out as the paper's double loop.
// `distance` replaces i - j where a pattern shows the key at another distance.
double NaiveTransformerXL(PositionEncoding<double>& enc, const Head& h, int head, int layer, int i,
                          int j, int clamp, double distance) {
  const auto& txl = dynamic_cast<const TransformerXL<double>&>(enc);
  const auto params = enc.Parameters();
  const int C = kD * kH;
  const double* w_r = params[0].value + static_cast<long>(layer) * C * C;  // [C, C] of this layer
  const double* u = params[1].value + head * kD;                           // shared by layers
  const double* v = params[2].value + head * kD;
  double d = distance;
  if (clamp > 0) d = std::clamp(d, -1.0 * clamp, 1.0 * clamp);
  std::vector<double> R(C);
  txl.Sinusoid(d, R.data());
  double a = 0;
  for (int c = 0; c < kD; ++c) {
    double r = 0;
    for (int e = 0; e < C; ++e) r += R[e] * w_r[e * C + head * kD + c];
    a += u[c] * h.k(j, c) + (h.q(i, c) + v[c]) * r;
  }
  return a / std::sqrt(static_cast<double>(kD));
}
double NaiveTransformerXL(PositionEncoding<double>& enc, const Head& h, int head, int layer, int i,
                          int j, int clamp) {
  return NaiveTransformerXL(enc, h, head, layer, i, j, clamp, i - j);
}

TEST(TransformerXL, LogitTermEqualsThePapersDoubleLoop) {
  auto enc = Make("transformer_xl", {});
  Head h = RandomHead(2);
  enc->Prepare(h.pos, PositionSpan(h.pos));
  for (int layer = 0; layer < 2; ++layer)
    for (int head = 0; head < kH; ++head) {
      Mat<double> s = Mat<double>::Zero(kT, kT);
      enc->AddLogitTerm(h.Ctx(head, layer), 0, kT, 0, kT, h.QK(), s.data(), kT);
      for (int i = 0; i < kT; ++i)
        for (int j = 0; j < kT; ++j)  // bidirectional offsets too
          EXPECT_NEAR(s(i, j), NaiveTransformerXL(*enc, h, head, layer, i, j, 0), 1e-12);
    }
}

TEST(TransformerXL, ClampLenMakesEveryFartherOffsetLookTheSame) {
  auto enc = Make("transformer_xl", {{"clamp_len", "4"}});
  Head h = RandomHead(3);
  h.k.rowwise() = h.k.row(0);  // identical keys: only the offset can change the logit
  enc->Prepare(h.pos, PositionSpan(h.pos));
  Mat<double> s = Mat<double>::Zero(kT, kT);
  enc->AddLogitTerm(h.Ctx(), 0, kT, 0, kT, h.QK(), s.data(), kT);
  for (int j = 0; j <= 7; ++j) EXPECT_NEAR(s(11, j), s(11, 7), 1e-12) << j;  // i - j >= 4
  EXPECT_GT(std::abs(s(11, 8) - s(11, 7)), 1e-6);
  EXPECT_NEAR(s(11, 0), NaiveTransformerXL(*enc, h, 0, 0, 11, 0, 4), 1e-12);
}

// LM-Infinite's Lambda mask shows the global keys outside the window at distance `limit`, which
// may lie beyond every distance of the sequence: the offset table must reach it (it once read
// outside its table there once).
TEST(TransformerXL, LambdaCapBeyondTheSequenceUsesTheSinusoidAtTheCap) {
  auto enc = Make("transformer_xl", {});
  Head h = RandomHead(6);
  const LambdaPattern lambda(2, 4, 64);
  enc->Prepare(h.pos, lambda.MaxDistance(PositionSpan(h.pos)));
  AttentionContext ctx = h.Ctx(1, 1);
  ctx.pattern = &lambda;
  ctx.plain_distance = false;
  Mat<double> s = Mat<double>::Zero(kT, kT);
  enc->AddLogitTerm(ctx, 0, kT, 0, kT, h.QK(), s.data(), kT);
  for (int i = 0; i < kT; ++i)
    for (int j = 0; j <= i; ++j) {
      if (!lambda.Visible(i, j, kT)) continue;
      const double d = lambda.EffectiveDistance(i, j, h.pos.data());
      EXPECT_NEAR(s(i, j), NaiveTransformerXL(*enc, h, 1, 1, i, j, 0, d), 1e-12) << i << "," << j;
    }
  EXPECT_EQ(lambda.EffectiveDistance(11, 0, h.pos.data()), 64.0);
}

TEST(Tupe, PositionTermIsTheUntiedProductSharedByAllLayers) {
  auto enc = Make("tupe", {{"relative", "false"}});
  ASSERT_EQ(enc->Parameters().size(), 5u);
  Head h = RandomHead(4);
  enc->Prepare(h.pos, PositionSpan(h.pos));
  EXPECT_DOUBLE_EQ(enc->LogitScale(h.Ctx(), 3), 1 / std::sqrt(2.0));  // content / sqrt(2D)
  // Naive: p = LN(table[pos]) row by row, then (p_i U^Q)_h . (p_j U^K)_h / sqrt(2D).
  const auto params = enc->Parameters();
  const int C = kD * kH;
  auto P = [&](int t) {
    Eigen::Map<const MatD> table(params[0].value, 64, C);
    RowVec<double> x = table.row(t);
    const double mean = x.mean();
    const double var = (x.array() - mean).square().mean();
    return RowVec<double>((x.array() - mean) / std::sqrt(var + kLayerNormEps));  // g = 1, b = 0
  };
  Eigen::Map<const MatD> uq(params[3].value, C, C), uk(params[4].value, C, C);
  for (int head = 0; head < kH; ++head) {
    MatD s0 = MatD::Zero(kT, kT), s1 = MatD::Zero(kT, kT);
    enc->AddLogitTerm(h.Ctx(head, 0), 0, kT, 0, kT, h.QK(), s0.data(), kT);
    enc->AddLogitTerm(h.Ctx(head, 1), 0, kT, 0, kT, h.QK(), s1.data(), kT);
    EXPECT_EQ(s0, s1) << "the position term is computed once and shared by the layers";
    for (int i = 0; i < kT; i += 3)
      for (int j = 0; j < kT; j += 2) {
        const RowVec<double> a = P(i) * uq, b = P(j) * uk;
        const double want =
            a.segment(head * kD, kD).dot(b.segment(head * kD, kD)) / std::sqrt(2.0 * kD);
        EXPECT_NEAR(s0(i, j), want, 1e-12);
      }
  }
  auto tupe_r = Make("tupe", {});
  EXPECT_EQ(tupe_r->Parameters().back().name, "pe.t5.table");  // TUPE-R adds the T5 buckets
}

TEST(DistanceAware, CoefficientIsOneAtZeroBoundedAndMonotone) {
  auto enc = Make("da", {});
  auto& da = dynamic_cast<DistanceAware<double>&>(*enc);
  da.SetParams(0, 0, 0.3, 0.5);   // prefers far keys
  da.SetParams(0, 1, -0.3, 0.5);  // prefers near keys
  EXPECT_DOUBLE_EQ(da.Coefficient(0, 0, 0), 1.0);
  EXPECT_DOUBLE_EQ(da.Coefficient(0, 1, 0), 1.0);
  const double top = 1 + std::exp(0.5);
  for (double d = 1; d < 60; d *= 1.5) {  // strict until R = 18 (double saturates later)
    EXPECT_GT(da.Coefficient(0, 0, d), da.Coefficient(0, 0, d / 1.5));
    EXPECT_LT(da.Coefficient(0, 1, d), da.Coefficient(0, 1, d / 1.5));
    EXPECT_LT(da.Coefficient(0, 0, d), top);
    EXPECT_GT(da.Coefficient(0, 1, d), 0.0);
  }
  EXPECT_NEAR(da.Coefficient(0, 0, 1e4), top, 1e-9);
  // The transform: ReLU(c) * f(w |i - j|); negative content scores become 0.
  Head h = RandomHead(6);
  std::vector<double> s = {-1.5, 2.0, 0.0, 3.0};
  enc->AddLogitTerm(h.Ctx(0, 0), 5, 6, 0, 4, h.QK(), s.data(), 4);
  EXPECT_EQ(s[0], 0.0);
  EXPECT_DOUBLE_EQ(s[1], 2.0 * da.Coefficient(0, 0, 4));
  EXPECT_EQ(s[2], 0.0);
  EXPECT_DOUBLE_EQ(s[3], 3.0 * da.Coefficient(0, 0, 2));
}

}  // namespace
}  // namespace lexp
