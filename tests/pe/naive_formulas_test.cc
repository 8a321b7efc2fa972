// Naive-formula tests: each encoding is built through the registry, its learnable tensors are set
// through Parameters(), its hooks are called as nn/ops/attention.h calls them (Prepare, site 6 then
// site 4 on query/key tiles with a padded row stride, site 7 on the same tiles, site 2 on a batch),
// and the result is compared with the paper's equation written out below with plain double loops.
// No lexp helper computes an expected value: a wrong clip index, a missing 1/sqrt(D), min for max
// in FIRE's normaliser or a wrong bucket would all show up as a mismatch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "nn/rng.h"
#include "nn/tensor.h"
#include "pe/registry.h"

namespace lexp {
namespace {

constexpr int kH = 2;        // heads
constexpr int kD = 4;        // head width
constexpr int kC = kH * kD;  // model width
constexpr int kLayers = 2;
constexpr int kMaxLength = 64;
// Tiles smaller than the sequence, so that the hooks see i0 > 0 and j0 > 0 as they do in the
// attention op's query blocks and in the streaming path's key blocks.
constexpr int kQueryTile = 5;
constexpr int kKeyTile = 7;
// Padding past each tile row: a hook that ignores the row stride writes there.
constexpr int kRowPadding = 3;
constexpr double kSentinel = -12345.0;
// The expected values are sums of a few dozen products: double keeps them to ~1e-15 relative.
constexpr double kRelTol = 1e-12;

void ExpectClose(double got, double want, const std::string& where) {
  EXPECT_NEAR(got, want, kRelTol * std::max(1.0, std::abs(want))) << where;
}

std::string At(int layer, int head, int i, int j) {
  return "layer " + std::to_string(layer) + " head " + std::to_string(head) + " (i, j) = (" +
         std::to_string(i) + ", " + std::to_string(j) + ")";
}

std::unique_ptr<PositionEncoding<double>> Make(const std::string& name,
                                               const std::map<std::string, std::string>& options,
                                               bool causal) {
  auto enc =
      CreateEncoding<double>(name, options, EncodingShape{kC, kH, kLayers, causal, kMaxLength, 16});
  Rng rng(7);
  enc->Init(rng);  // every tensor the test reads is overwritten below
  return enc;
}

// The learnable tensor `name`, which must hold `size` values (the layout the test writes into).
ParamRef<double> Param(PositionEncoding<double>& enc, const std::string& name, long size) {
  for (const auto& p : enc.Parameters()) {
    if (p.name != name) continue;
    if (p.size != size)
      throw std::logic_error(name + " holds " + std::to_string(p.size) + " values, expected " +
                             std::to_string(size));
    return p;
  }
  throw std::logic_error("no parameter " + name);
}

void FillUniform(const ParamRef<double>& p, Rng& rng, double lo, double hi) {
  for (long e = 0; e < p.size; ++e) p.value[e] = rng.Uniform(lo, hi);
}

MatD RandomRows(int rows, int cols, Rng& rng) {
  MatD m(rows, cols);
  for (long e = 0; e < m.size(); ++e) m.data()[e] = rng.Normal();
  return m;
}

std::vector<double> Positions(int T, double step) {
  std::vector<double> pos(T);
  for (int t = 0; t < T; ++t) pos[t] = step * t;
  return pos;
}

AttentionContext Ctx(int layer, int head, const std::vector<double>& pos,
                     const AttentionPattern& pattern) {
  const int T = static_cast<int>(pos.size());
  return {layer, head, kH, kD, T, pos.data(), &pattern, pattern.PlainDistance()};
}

// q . k / sqrt(D) of head `head`, q and k rows of [T, C] matrices.
double ScaledDot(const MatD& q, const MatD& k, int head, int i, int j) {
  double dot = 0;
  for (int c = 0; c < kD; ++c) dot += q(i, head * kD + c) * k(j, head * kD + c);
  return dot / std::sqrt(static_cast<double>(kD));
}

// The [T, T] logits of one (sequence, head) task as ComputeLogits in nn/ops/attention.h forms them
// before the mask: scale_i q_i.k_j / sqrt(D) (site 6), then the logit term (site 4) on each tile,
// with q, k the head's columns of [T, C] rows (ld = C) as the op passes them.
MatD OpLogits(const PositionEncoding<double>& enc, const AttentionContext& ctx, const MatD& q,
              const MatD& k) {
  const int T = ctx.T;
  const long col = static_cast<long>(ctx.head) * kD;
  const HeadQK<double> qk{q.data() + col, k.data() + col, kC};
  MatD a(T, T);
  for (int i0 = 0; i0 < T; i0 += kQueryTile) {
    const int i1 = std::min(T, i0 + kQueryTile);
    for (int j0 = 0; j0 < T; j0 += kKeyTile) {
      const int j1 = std::min(T, j0 + kKeyTile), m = j1 - j0;
      const long lds = m + kRowPadding;
      std::vector<double> s(static_cast<size_t>((i1 - i0) * lds), kSentinel);
      for (int i = i0; i < i1; ++i) {
        const double scale = enc.Uses(kSiteLogitScale) ? enc.LogitScale(ctx, i) : 1.0;
        for (int j = j0; j < j1; ++j)
          s[(i - i0) * lds + (j - j0)] = scale * ScaledDot(q, k, ctx.head, i, j);
      }
      if (enc.Uses(kSiteLogitTerm)) enc.AddLogitTerm(ctx, i0, i1, j0, j1, qk, s.data(), lds);
      for (int i = i0; i < i1; ++i) {
        for (int j = j0; j < j1; ++j) a(i, j) = s[(i - i0) * lds + (j - j0)];
        for (int e = m; e < lds; ++e)
          EXPECT_EQ(s[(i - i0) * lds + e], kSentinel) << "wrote past the tile at row " << i;
      }
    }
  }
  return a;
}

// The op's output rows [T, C] of head ctx.head: o_i = sum_j p_ij v_j (its P V product), then the
// value term (site 7) tile by tile, p with row stride T and o with row stride C as the op passes.
MatD OpValues(const PositionEncoding<double>& enc, const AttentionContext& ctx, const MatD& p,
              const MatD& v) {
  const int T = ctx.T;
  const long col = static_cast<long>(ctx.head) * kD;
  MatD o = MatD::Zero(T, kC);
  for (int i = 0; i < T; ++i)
    for (int c = 0; c < kD; ++c)
      for (int j = 0; j < T; ++j) o(i, col + c) += p(i, j) * v(j, col + c);
  for (int i0 = 0; i0 < T; i0 += kQueryTile) {
    const int i1 = std::min(T, i0 + kQueryTile);
    for (int j0 = 0; j0 < T; j0 += kKeyTile) {
      const int j1 = std::min(T, j0 + kKeyTile);
      enc.AddValueTerm(ctx, i0, i1, j0, j1, p.data() + static_cast<long>(i0) * T + j0, T,
                       o.data() + static_cast<long>(i0) * kC + col, kC);
    }
  }
  return o;
}

MatD RowSoftmax(const MatD& a) {
  MatD p(a.rows(), a.cols());
  for (long i = 0; i < a.rows(); ++i) {
    double mx = a(i, 0), sum = 0;
    for (long j = 1; j < a.cols(); ++j) mx = std::max(mx, a(i, j));
    for (long j = 0; j < a.cols(); ++j) {
      p(i, j) = std::exp(a(i, j) - mx);
      sum += p(i, j);
    }
    for (long j = 0; j < a.cols(); ++j) p(i, j) /= sum;
  }
  return p;
}

// Shaw, Uszkoreit & Vaswani 2018, arXiv:1803.02155, section 3, with tensor2tensor's table index.
TEST(NaiveFormula, ShawKeyAndValueTermsEqualThePapersClippedDoubleLoop) {
  constexpr int T = 12, kClip = 3, kRows = 2 * kClip + 1;
  // Bidirectional, so that both ends of the clip (j - i <= -k and j - i >= k) are exercised.
  auto enc = Make("shaw", {{"clip", "3"}}, /*causal=*/false);
  Rng rng(101);
  // One [2k+1, D] table per layer, shared by its heads: row r of layer l at (l (2k+1) + r) D.
  const auto keys = Param(*enc, "pe.shaw.keys", kLayers * kRows * kD);
  const auto values = Param(*enc, "pe.shaw.values", kLayers * kRows * kD);
  FillUniform(keys, rng, -1, 1);
  FillUniform(values, rng, -1, 1);
  const MatD q = RandomRows(T, kC, rng), k = RandomRows(T, kC, rng), v = RandomRows(T, kC, rng);
  const std::vector<double> pos = Positions(T, 1);
  const AttentionPattern pattern(false);
  enc->Prepare(pos, PositionSpan(pos));
  for (int layer = 0; layer < kLayers; ++layer)
    for (int head = 0; head < kH; ++head) {
      const AttentionContext ctx = Ctx(layer, head, pos, pattern);
      const MatD a = OpLogits(*enc, ctx, q, k);
      // e_ij = q_i . (k_j + a^K_ij) / sqrt(d_z),  a^K_ij = w^K_{clip(j - i, k)} at row j - i + k.
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j) {
          const int r = std::clamp(j - i, -kClip, kClip) + kClip;
          const double* a_k = keys.value + (layer * kRows + r) * kD;
          double e = 0;
          for (int c = 0; c < kD; ++c) e += q(i, head * kD + c) * (k(j, head * kD + c) + a_k[c]);
          ExpectClose(a(i, j), e / std::sqrt(static_cast<double>(kD)), At(layer, head, i, j));
        }
      // z_i = sum_j alpha_ij (v_j + a^V_ij), alpha the softmax of the logits above.
      const MatD p = RowSoftmax(a);
      const MatD o = OpValues(*enc, ctx, p, v);
      for (int i = 0; i < T; ++i)
        for (int c = 0; c < kD; ++c) {
          double z = 0;
          for (int j = 0; j < T; ++j) {
            const int r = std::clamp(j - i, -kClip, kClip) + kClip;
            z += p(i, j) * (v(j, head * kD + c) + values.value[(layer * kRows + r) * kD + c]);
          }
          ExpectClose(o(i, head * kD + c), z, At(layer, head, i, c) + " (i, channel)");
        }
    }
}

// Wu, Wu & Huang 2021 (DA-Transformer), arXiv:2010.06925, section 3 as recalled in pe/da.h:
// A = ReLU(Q K^T) * R^ / sqrt(d),  R^ = (1 + e^{v_h}) / (1 + e^{v_h - w_h |i - j|}).
TEST(NaiveFormula, DaLogitIsReluOfContentTimesThePapersSigmoidOfWeightedDistance) {
  constexpr int T = 12;
  auto enc = Make("da", {}, /*causal=*/false);  // both sides: the distance is |i - j|
  // Heads preferring far keys (w > 0) and near keys (w < 0), v of both signs; layout [L, H].
  const double w[kLayers][kH] = {{0.35, -0.6}, {0.8, -0.15}};
  const double v[kLayers][kH] = {{0.5, -1.2}, {1.7, 0.3}};
  const auto w_ref = Param(*enc, "pe.da.w", kLayers * kH);
  const auto v_ref = Param(*enc, "pe.da.v", kLayers * kH);
  for (int l = 0; l < kLayers; ++l)
    for (int h = 0; h < kH; ++h) {
      w_ref.value[l * kH + h] = w[l][h];
      v_ref.value[l * kH + h] = v[l][h];
    }
  Rng rng(202);
  MatD q = RandomRows(T, kC, rng), k = RandomRows(T, kC, rng);
  // Hand-picked rows of head 0: q_6 . k_2 / sqrt(4) = 1 at distance 4, and q_6 . k_10 < 0.
  q.row(6).head(kD) << 2, 0, 0, 0;
  k.row(2).head(kD) << 1, 0, 0, 0;
  k.row(10).head(kD) << -1, 0, 0, 0;
  const std::vector<double> pos = Positions(T, 1);
  const AttentionPattern pattern(false);
  enc->Prepare(pos, PositionSpan(pos));
  int positive = 0, negative = 0;
  for (int layer = 0; layer < kLayers; ++layer)
    for (int head = 0; head < kH; ++head) {
      const MatD a = OpLogits(*enc, Ctx(layer, head, pos, pattern), q, k);
      if (layer == 0 && head == 0) {
        // (1 + e^0.5) / (1 + e^{0.5 - 0.35 * 4}), evaluated outside C++.
        ExpectClose(a(6, 2), 1.8831070699965244, "f(w = 0.35, v = 0.5, d = 4)");
        EXPECT_EQ(a(6, 10), 0.0) << "ReLU clips a negative q.k to exactly 0";
      }
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j) {
          double dot = 0;
          for (int c = 0; c < kD; ++c) dot += q(i, head * kD + c) * k(j, head * kD + c);
          if (dot <= 0) {
            ++negative;
            EXPECT_EQ(a(i, j), 0.0) << At(layer, head, i, j);
            continue;
          }
          ++positive;
          const double r = w[layer][head] * std::abs(i - j);
          const double r_hat = (1 + std::exp(v[layer][head])) / (1 + std::exp(v[layer][head] - r));
          ExpectClose(a(i, j), dot * r_hat / std::sqrt(static_cast<double>(kD)),
                      At(layer, head, i, j));
        }
    }
  // Random q, k give both branches of the ReLU many times.
  EXPECT_GT(positive, 100);
  EXPECT_GT(negative, 100);
}

// Li et al. 2023 (FIRE), arXiv:2310.04418: b(i, j) = f_theta(psi(i - j) / psi(max(L, i))),
// psi(x) = ln(c x + 1), f_theta = Linear(1, 32) -> ReLU -> Linear(32, H) as the replications.
TEST(NaiveFormula, FireBiasIsTheMlpOfLogDistanceOverLogOfMaxOfThresholdAndQuery) {
  constexpr int T = 16, kWidth = 32;
  constexpr double kInitL = 8, kEps = 1e-6;  // eps: the default of option "eps"
  auto enc = Make("fire", {{"init_L", "8"}}, /*causal=*/true);
  // One module per layer: w1, b1 [L, 32]; w2 [L, 32 H] with w2[k, h] at k H + h; b2 [L, H];
  // c and the threshold multiplier m [L, 1].
  const auto w1 = Param(*enc, "pe.fire.w1", kLayers * kWidth);
  const auto b1 = Param(*enc, "pe.fire.b1", kLayers * kWidth);
  const auto w2 = Param(*enc, "pe.fire.w2", kLayers * kWidth * kH);
  const auto b2 = Param(*enc, "pe.fire.b2", kLayers * kH);
  const auto c = Param(*enc, "pe.fire.c", kLayers);
  const auto m = Param(*enc, "pe.fire.L_multiplier", kLayers);
  Rng rng(303);
  // w1 u + b1 changes sign inside u in [0, 1] for some units: both ReLU branches are used.
  FillUniform(w1, rng, -1, 1);
  FillUniform(b1, rng, -1, 1);
  FillUniform(w2, rng, -0.5, 0.5);
  FillUniform(b2, rng, -0.5, 0.5);
  c.value[0] = 0.3;
  c.value[1] = 0.05;
  m.value[0] = 1;     // L = 8
  m.value[1] = -1.5;  // L = |-1.5 * 8| = 12
  const MatD q = RandomRows(T, kC, rng), k = RandomRows(T, kC, rng);
  const std::vector<double> pos = Positions(T, 1);  // queries 0..15: below and above both L
  const AttentionPattern pattern(true);
  enc->Prepare(pos, PositionSpan(pos));
  for (int layer = 0; layer < kLayers; ++layer) {
    const double cl = c.value[layer], L = std::abs(m.value[layer] * kInitL);
    auto psi = [cl](double x) { return std::log(cl * x + 1); };
    for (int head = 0; head < kH; ++head) {
      const MatD a = OpLogits(*enc, Ctx(layer, head, pos, pattern), q, k);
      for (int i = 0; i < T; ++i)
        for (int j = 0; j <= i; ++j) {  // the keys a causal query sees
          const double u = psi(i - j) / (psi(std::max(L, static_cast<double>(i))) + kEps);
          double b = b2.value[layer * kH + head];
          for (int n = 0; n < kWidth; ++n)
            b += w2.value[(layer * kWidth + n) * kH + head] *
                 std::max(0.0, w1.value[layer * kWidth + n] * u + b1.value[layer * kWidth + n]);
          ExpectClose(a(i, j), ScaledDot(q, k, head, i, j) + b, At(layer, head, i, j));
        }
    }
  }
  // With an MLP that passes u through (unit 0 only, to head 0) and q = 0, the logit is u itself:
  // pin it to values evaluated outside C++. Below L the normaliser is psi(L), not psi(i).
  std::fill(w1.value, w1.value + w1.size, 0.0);
  std::fill(b1.value, b1.value + b1.size, 0.0);
  std::fill(w2.value, w2.value + w2.size, 0.0);
  std::fill(b2.value, b2.value + b2.size, 0.0);
  for (int layer = 0; layer < kLayers; ++layer) {
    w1.value[layer * kWidth] = 1;
    w2.value[layer * kWidth * kH] = 1;
    c.value[layer] = 0.3;
  }
  const MatD zero = MatD::Zero(T, kC);
  const MatD u0 = OpLogits(*enc, Ctx(0, 0, pos, pattern), zero, k);  // L = 8
  const MatD u1 = OpLogits(*enc, Ctx(1, 0, pos, pattern), zero, k);  // L = 12
  ExpectClose(u0(4, 0), 0.6442821907586258, "ln(2.2) / ln(3.4): query below L = 8");
  ExpectClose(u1(4, 0), 0.5166630103329067, "ln(2.2) / ln(4.6): query below L = 12");
  ExpectClose(u0(13, 0), 0.9999993707669151, "ln(4.9) / (ln(4.9) + eps): query above L");
  ExpectClose(u0(15, 5), 0.813195541462124, "ln(4) / ln(5.5): query above L");
  EXPECT_EQ(u0(7, 7), 0.0) << "u(i, i) = 0";
}

// T5's bucket of relative position rp = key - query, written from Mesh TensorFlow's
// _relative_position_bucket (Raffel et al. 2020, arXiv:1910.10683): n = query - key; exact buckets
// below num_buckets / 2 (per side when bidirectional), then log-spaced up to max_distance.
int T5BucketByHand(long rp, bool bidirectional, int num_buckets, int max_distance) {
  int bucket = 0;
  long n = -rp;
  if (bidirectional) {
    num_buckets /= 2;
    if (n < 0) bucket += num_buckets;  // keys after the query use the upper half
    n = std::labs(n);
  } else {
    n = std::max(n, 0L);  // every future key shares bucket 0
  }
  const int max_exact = num_buckets / 2;
  if (n < max_exact) return bucket + static_cast<int>(n);
  const int large =
      max_exact + static_cast<int>(std::log(static_cast<double>(n) / max_exact) /
                                   std::log(static_cast<double>(max_distance) / max_exact) *
                                   (num_buckets - max_exact));
  return bucket + std::min(large, num_buckets - 1);
}

// Ke, He & Liu 2021 (TUPE), arXiv:2006.15595, section 3, with TUPE-R's relative term:
// a_ij = (x_i W^Q).(x_j W^K) / sqrt(2d) + (p_i U^Q).(p_j U^K) / sqrt(2d) + b_{bucket(j - i)},
// p = LayerNorm(table[pos]) with its own LayerNorm (reference code guolinke/TUPE).
TEST(NaiveFormula, TupeRLogitIsScaledContentPlusUntiedPositionProductPlusT5Bucket) {
  // The hand-written bucket function against the reference code's table (32 buckets, distance 128).
  EXPECT_EQ(T5BucketByHand(-16, false, 32, 128), 16);
  EXPECT_EQ(T5BucketByHand(-32, false, 32, 128), 21);
  EXPECT_EQ(T5BucketByHand(-64, false, 32, 128), 26);
  EXPECT_EQ(T5BucketByHand(+7, false, 32, 128), 0);
  EXPECT_EQ(T5BucketByHand(-12, true, 32, 128), 9);
  EXPECT_EQ(T5BucketByHand(+1, true, 32, 128), 17);
  EXPECT_EQ(T5BucketByHand(+32, true, 32, 128), 28);
  EXPECT_EQ(T5BucketByHand(-64, true, 32, 128), 14);

  constexpr int T = 16, kBuckets = 32, kBucketDistance = 128;  // TUPE-R's fixed T5 options
  constexpr double kLnEps = 1e-5;                              // PyTorch's LayerNorm default
  // Positions 0, 3, ..., 45: distances reach T5's log buckets, and a table lookup by token index
  // instead of position would read other rows.
  const std::vector<double> pos = Positions(T, 3);
  for (const bool causal : {true, false}) {
    SCOPED_TRACE(causal ? "causal buckets" : "bidirectional buckets");
    auto enc = Make("tupe", {}, causal);  // relative = true (TUPE-R), max_len = 64 rows
    const auto table = Param(*enc, "pe.tupe.table", kMaxLength * kC);  // [rows, C]
    const auto g = Param(*enc, "pe.tupe.ln.g", kC);
    const auto beta = Param(*enc, "pe.tupe.ln.b", kC);
    const auto u_q = Param(*enc, "pe.tupe.u_q", kC * kC);  // [C, C], (p U)[c] = sum_e p[e] U[e, c]
    const auto u_k = Param(*enc, "pe.tupe.u_k", kC * kC);
    const auto bias = Param(*enc, "pe.t5.table", kBuckets * kH);  // [buckets, H], all layers
    Rng rng(causal ? 404 : 405);
    FillUniform(table, rng, -1, 1);
    FillUniform(g, rng, 0.5, 1.5);  // not the identity LayerNorm: its gain and bias must be used
    FillUniform(beta, rng, -0.5, 0.5);
    FillUniform(u_q, rng, -0.5, 0.5);
    FillUniform(u_k, rng, -0.5, 0.5);
    FillUniform(bias, rng, -1, 1);
    const MatD q = RandomRows(T, kC, rng), k = RandomRows(T, kC, rng);
    const AttentionPattern pattern(causal);
    enc->Prepare(pos, PositionSpan(pos));  // after the parameters: the position term is cached

    // p_t = LN(table[pos_t]), then p_t U^Q and p_t U^K.
    MatD pq = MatD::Zero(T, kC), pk = MatD::Zero(T, kC);
    for (int t = 0; t < T; ++t) {
      const double* x = table.value + static_cast<long>(pos[t]) * kC;
      double mean = 0, var = 0;
      for (int e = 0; e < kC; ++e) mean += x[e] / kC;
      for (int e = 0; e < kC; ++e) var += (x[e] - mean) * (x[e] - mean) / kC;
      for (int e = 0; e < kC; ++e) {
        const double p = (x[e] - mean) / std::sqrt(var + kLnEps) * g.value[e] + beta.value[e];
        for (int col = 0; col < kC; ++col) {
          pq(t, col) += p * u_q.value[e * kC + col];
          pk(t, col) += p * u_k.value[e * kC + col];
        }
      }
    }
    const double inv_sqrt_2d = 1 / std::sqrt(2.0 * kD);
    for (int layer = 0; layer < kLayers; ++layer)
      for (int head = 0; head < kH; ++head) {
        const AttentionContext ctx = Ctx(layer, head, pos, pattern);
        // Site 6 times the op's 1/sqrt(D) is the paper's content scale 1/sqrt(2d).
        for (int i = 0; i < T; ++i)
          ExpectClose(enc->LogitScale(ctx, i) / std::sqrt(static_cast<double>(kD)), inv_sqrt_2d,
                      "content scale");
        const MatD a = OpLogits(*enc, ctx, q, k);
        for (int i = 0; i < T; ++i)
          for (int j = 0; j < (causal ? i + 1 : T); ++j) {
            double content = 0, position = 0;
            for (int c = 0; c < kD; ++c) {
              content += q(i, head * kD + c) * k(j, head * kD + c);
              position += pq(i, head * kD + c) * pk(j, head * kD + c);
            }
            const long rp = std::lround(pos[j] - pos[i]);
            const int bucket = T5BucketByHand(rp, !causal, kBuckets, kBucketDistance);
            ExpectClose(a(i, j),
                        (content + position) * inv_sqrt_2d + bias.value[bucket * kH + head],
                        At(layer, head, i, j));
          }
      }
  }
}

// Gehring et al. 2017 (learned positions), arXiv:1705.03122: x_t = E[token_t] + P[pos_t].
TEST(NaiveFormula, LearnedTableAddsRowPosOfTheTokenToEverySequence) {
  constexpr int kRows = 8, B = 3;
  const std::vector<double> pos = {3, 0, 7, 7, 1};  // not the identity, repeated, last row
  const int T = static_cast<int>(pos.size());
  auto enc = Make("learned", {{"max_len", "8"}}, true);
  const auto table = Param(*enc, "pe.learned.table", kRows * kC);  // [rows, C]
  Rng rng(505);
  FillUniform(table, rng, -1, 1);
  const MatD x0 = RandomRows(B * T, kC, rng);  // [B*T, C]: sequence b's token t at row b T + t
  MatD x = x0;
  enc->AddEmbedding(pos, std::vector<int>(B * T, 0), B, x);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < kC; ++c)
        EXPECT_EQ(x(b * T + t, c),
                  x0(b * T + t, c) + table.value[static_cast<int>(pos[t]) * kC + c])
            << "sequence " << b << " token " << t << " channel " << c;
}

// Gehring et al. 2017, arXiv:1705.03122, define no row past the table: lexp must clamp or refuse
// explicitly (Gehring et al. 2017), never wrap.
TEST(NaiveFormula, LearnedTablePastItsEndClampsToTheLastRowOrThrows) {
  constexpr int kRows = 8, B = 2;
  const std::vector<double> pos = {2, 8, 30, 7};  // 8 and 30 lie past rows 0..7
  const int T = static_cast<int>(pos.size());
  const int want_row[] = {2, 7, 7, 7};
  auto clamp = Make("learned", {{"max_len", "8"}, {"beyond", "clamp"}}, true);
  const auto table = Param(*clamp, "pe.learned.table", kRows * kC);
  Rng rng(606);
  FillUniform(table, rng, -1, 1);
  const MatD x0 = RandomRows(B * T, kC, rng);
  MatD x = x0;
  clamp->AddEmbedding(pos, std::vector<int>(B * T, 0), B, x);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < kC; ++c)
        EXPECT_EQ(x(b * T + t, c), x0(b * T + t, c) + table.value[want_row[t] * kC + c])
            << "sequence " << b << " token " << t << " channel " << c;

  auto error = Make("learned", {{"max_len", "8"}, {"beyond", "error"}}, true);
  MatD y = MatD::Zero(1, kC);
  EXPECT_NO_THROW(error->AddEmbedding({7}, {0}, 1, y)) << "row 7 is the table's last";
  y.setZero();
  EXPECT_THROW(error->AddEmbedding({8}, {0}, 1, y), InputError);
  y.setZero();
  EXPECT_THROW(error->AddEmbedding({30}, {0}, 1, y), InputError);
}

}  // namespace
}  // namespace lexp
