// DAPE (Zheng et al. 2024, arXiv:2405.14722) against its equation written out here, and on a
// planted cross-head mechanism: a hand-set MLP that makes head 1 attend by head 0's content, with
// its own logit and bias taken out. The negative control is the zero MLP, which leaves the base
// bias's attention exactly as it is.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "nn/ops/attention.h"
#include "nn/rng.h"
#include "pe/dape.h"
#include "pe/kerple.h"
#include "pe/patterns.h"
#include "pe/registry.h"
#include "tests/testing/attention_gradcheck.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

constexpr int kB = 2, kT = 70, kD = 4;  // 70 queries cross the 64-query block boundary

std::unique_ptr<PositionEncoding<double>> MakeDape(int H, bool causal = true,
                                                   const std::string& base = "kerple_log",
                                                   int width = 5) {
  auto enc = CreateEncoding<double>("dape", {{"base", base}, {"width", std::to_string(width)}},
                                    EncodingShape{H * kD, H, 1, causal, 80, 42, 7});
  Rng rng(4);
  enc->Init(rng);
  return enc;
}

Dape<double>& AsDape(PositionEncoding<double>& enc) { return dynamic_cast<Dape<double>&>(enc); }

struct Inputs {
  MatD q, k, v;
  std::vector<double> pos;
  explicit Inputs(int H, uint64_t seed = 5) : q(kB * kT, H * kD), k(q.rows(), q.cols()), v(q.rows(), q.cols()), pos(kT) {
    Rng rng(seed);
    testing::FillNormal(q, rng);
    testing::FillNormal(k, rng);
    testing::FillNormal(v, rng);
    std::iota(pos.begin(), pos.end(), 0.0);
  }
};

// Forward through the op (materialised, logits captured); out and the cache.
struct ForwardRun {
  MatD out, streamed;
  AttentionCache<double> cache;
};
ForwardRun Forward(PositionEncoding<double>& enc, const Inputs& in, int H, bool causal = true) {
  ForwardRun r;
  AttentionPattern pat(causal);
  const AttentionShape sh{kB, kT, H, kD};
  enc.Prepare(in.pos, static_cast<double>(kT - 1));
  r.cache.capture_logits = true;
  AttentionForward(in.q, in.k, in.v, sh, in.pos, pat, enc, 0, true, r.cache, r.out);
  AttentionCache<double> stream;
  AttentionForward(in.q, in.k, in.v, sh, in.pos, pat, enc, 0, false, stream, r.streamed);
  return r;
}

double Leaky(double t) { return t > 0 ? t : 0.01 * t; }

// The paper's logit, from scratch: x_h = q.k / sqrt(D), b_h = -r1_h ln(1 + r2_h |i - j|) (kerple),
// a_h = x_h + b_h + W2^T LeakyReLU(W1^T [x; b] + c1) + c2.
std::vector<double> NaiveLogits(Dape<double>& dape, const std::vector<double>& r1,
                                const std::vector<double>& r2, const Inputs& in, int H, int b,
                                int i, int j) {
  const int W = dape.width();
  std::vector<double> z(2 * H);
  for (int h = 0; h < H; ++h) {
    double dot = 0;
    for (int c = 0; c < kD; ++c) dot += in.q(b * kT + i, h * kD + c) * in.k(b * kT + j, h * kD + c);
    z[h] = dot / std::sqrt(static_cast<double>(kD));
    z[H + h] = -r1[h] * std::log(1 + r2[h] * std::abs(i - j));
  }
  std::vector<double> a(H);
  for (int h = 0; h < H; ++h) a[h] = z[h] + z[H + h] + dape.C2(0)[h];
  for (int u = 0; u < W; ++u) {
    double pre = dape.C1(0)[u];
    for (int e = 0; e < 2 * H; ++e) pre += z[e] * dape.W1(0)[e * W + u];
    for (int h = 0; h < H; ++h) a[h] += Leaky(pre) * dape.W2(0)[u * H + h];
  }
  return a;
}

TEST(Dape, MatchesItsEquationWrittenOut) {
  const int H = 3;
  for (const bool causal : {true, false}) {
    auto enc = MakeDape(H, causal);
    Dape<double>& dape = AsDape(*enc);
    const std::vector<double> r1 = {0.7, 1.3, 0.2}, r2 = {0.4, 0.05, 0.9};
    auto& kerple = dynamic_cast<Kerple<double>&>(dape.base());
    for (int h = 0; h < H; ++h) kerple.SetParams(h, r1[h], r2[h]);
    const Inputs in(H);
    const ForwardRun r = Forward(*enc, in, H, causal);
    double worst = 0, worst_out = 0;
    for (int b = 0; b < kB; ++b)
      for (int i = 0; i < kT; ++i) {
        std::vector<std::vector<double>> a(kT);
        for (int j = 0; j < kT; ++j) a[j] = NaiveLogits(dape, r1, r2, in, H, b, i, j);
        for (int h = 0; h < H; ++h) {
          const long row = (static_cast<long>(b) * H + h) * kT + i;
          const int visible = causal ? i + 1 : kT;
          double mx = -1e300, sum = 0;
          for (int j = 0; j < visible; ++j) mx = std::max(mx, a[j][h]);
          for (int j = 0; j < visible; ++j) sum += std::exp(a[j][h] - mx);
          for (int j = 0; j < kT; ++j) {
            if (j >= visible) {
              EXPECT_TRUE(std::isinf(r.cache.logits(row, j)));
              EXPECT_EQ(r.cache.probs(row, j), 0.0);
              continue;
            }
            worst = std::max(worst, std::abs(r.cache.logits(row, j) - a[j][h]));
            worst = std::max(worst,
                             std::abs(r.cache.probs(row, j) - std::exp(a[j][h] - mx) / sum));
          }
          for (int c = 0; c < kD; ++c) {
            double o = 0;
            for (int j = 0; j < visible; ++j)
              o += std::exp(a[j][h] - mx) / sum * in.v(b * kT + j, h * kD + c);
            worst_out = std::max(worst_out, std::abs(r.out(b * kT + i, h * kD + c) - o));
          }
        }
      }
    EXPECT_LT(worst, 1e-12) << "causal " << causal;
    EXPECT_LT(worst_out, 1e-12) << "causal " << causal;
    EXPECT_LT((r.out - r.streamed).cwiseAbs().maxCoeff(), 1e-12);
  }
}

// Negative control: with the MLP at zero, DAPE is its base bias, to the last bit of the output.
TEST(Dape, ZeroMlpIsItsBaseBias) {
  const int H = 2;
  for (const std::string base : {"kerple_log", "alibi", "fire"}) {
    auto enc = MakeDape(H, true, base);
    for (auto& p : enc->Parameters())
      if (p.name.rfind("pe.dape.", 0) == 0) std::fill(p.value, p.value + p.size, 0.0);
    auto plain = CreateEncoding<double>(base, {}, EncodingShape{H * kD, H, 1, true, 80, 42, 7});
    // The same base parameters in both.
    auto from = AsDape(*enc).base().Parameters();
    auto to = plain->Parameters();
    ASSERT_EQ(from.size(), to.size());
    for (size_t e = 0; e < from.size(); ++e)
      std::copy(from[e].value, from[e].value + from[e].size, to[e].value);
    const Inputs in(H);
    const ForwardRun a = Forward(*enc, in, H), b = Forward(*plain, in, H);
    EXPECT_LT((a.out - b.out).cwiseAbs().maxCoeff(), 1e-13) << base;
    EXPECT_LT((a.cache.probs - b.cache.probs).cwiseAbs().maxCoeff(), 1e-13) << base;
  }
}

// Planted: LeakyReLU(t) - LeakyReLU(-t) = 1.01 t, so pairs of hidden units make the MLP linear.
// Head 1's correction y_1 = K x_0 - x_1 - b_1 leaves it attending by K times head 0's content
// logit, with no position bias; head 0 is left alone (y_0 = 0).
TEST(Dape, AHandSetMlpMakesOneHeadAttendByAnothersContent) {
  const int H = 2, W = 6;
  const double K = 3.0;
  auto enc = MakeDape(H, true, "kerple_log", W);
  Dape<double>& dape = AsDape(*enc);
  for (auto& p : enc->Parameters())
    if (p.name.rfind("pe.dape.", 0) == 0) std::fill(p.value, p.value + p.size, 0.0);
  // Unit pairs (0,1) carry x_0, (2,3) x_1, (4,5) b_1 (inputs: x_0, x_1, b_0, b_1).
  const int input_of_pair[3] = {0, 1, H + 1};
  const double weight_of_pair[3] = {K, -1.0, -1.0};
  for (int pair = 0; pair < 3; ++pair) {
    dape.W1(0)[input_of_pair[pair] * W + 2 * pair] = 1.0;
    dape.W1(0)[input_of_pair[pair] * W + 2 * pair + 1] = -1.0;
    dape.W2(0)[(2 * pair) * H + 1] = weight_of_pair[pair] / 1.01;
    dape.W2(0)[(2 * pair + 1) * H + 1] = -weight_of_pair[pair] / 1.01;
  }
  const Inputs in(H);
  const ForwardRun r = Forward(*enc, in, H);
  // Control: the same base with the MLP at zero.
  auto control = MakeDape(H, true, "kerple_log", W);
  for (auto& p : control->Parameters())
    if (p.name.rfind("pe.dape.", 0) == 0) std::fill(p.value, p.value + p.size, 0.0);
  const ForwardRun c = Forward(*control, in, H);
  double worst = 0, moved = 0, head0 = 0;
  for (int b = 0; b < kB; ++b)
    for (int i = 0; i < kT; ++i) {
      std::vector<double> a(i + 1);
      double mx = -1e300, sum = 0;
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (int e = 0; e < kD; ++e) dot += in.q(b * kT + i, e) * in.k(b * kT + j, e);
        a[j] = K * dot / std::sqrt(static_cast<double>(kD));
        mx = std::max(mx, a[j]);
      }
      for (int j = 0; j <= i; ++j) sum += std::exp(a[j] - mx);
      const long row1 = (static_cast<long>(b) * H + 1) * kT + i, row0 = row1 - kT;
      for (int j = 0; j <= i; ++j) {
        worst = std::max(worst, std::abs(r.cache.probs(row1, j) - std::exp(a[j] - mx) / sum));
        moved = std::max(moved, std::abs(c.cache.probs(row1, j) - std::exp(a[j] - mx) / sum));
        head0 = std::max(head0, std::abs(r.cache.probs(row0, j) - c.cache.probs(row0, j)));
      }
    }
  EXPECT_LT(worst, 1e-12) << "head 1 does not attend by head 0's content";
  EXPECT_GT(moved, 0.1) << "the control already attends so: the test would not see the mix";
  EXPECT_LT(head0, 1e-12) << "head 0 changed";
}

// Gradients into q, k, v, the MLP and every base's own parameters (kerple's r1, r2; FIRE's MLP,
// c and L multiplier; ALiBi has none), causal and, where the base allows it, bidirectional.
TEST(Dape, GradientsMatchFiniteDifferencesOverEveryBase) {
  for (const std::string base : {"kerple_log", "alibi", "fire"})
    for (const bool causal : {true, false}) {
      if (base == "fire" && !causal) continue;  // FIRE is decoder-only
      auto enc = MakeDape(2, causal, base, 4);
      AttentionPattern pat(causal);
      testing::AttentionGradCase gc;
      gc.shape = AttentionShape{2, kT, 2, kD};
      gc.pattern = &pat;
      gc.encoding = enc.get();
      gc.pos.resize(kT);
      std::iota(gc.pos.begin(), gc.pos.end(), 0.0);
      gc.max_per_tensor = 30;
      SCOPED_TRACE(base + (causal ? " causal" : " bidirectional"));
      const auto result = testing::CheckAttentionGradients(gc);
      EXPECT_GT(result.checked, 3 * 30);
    }
}

// Incremental decoding: the rows of the last queries, computed alone against the cached keys,
// equal the full forward's (the head-mix path splits blocks at first_query).
TEST(Dape, IncrementalRowsEqualTheFullForward) {
  const int H = 2;
  auto enc = MakeDape(H);
  const Inputs in(H);
  const ForwardRun full = Forward(*enc, in, H);
  AttentionPattern pat(true);
  for (const int first : {1, 63, 64, 69}) {
    AttentionShape sh{kB, kT, H, kD};
    sh.first_query = first;
    AttentionCache<double> cache;
    MatD out = MatD::Zero(kB * kT, H * kD);
    AttentionForward(in.q, in.k, in.v, sh, in.pos, pat, *enc, 0, false, cache, out);
    for (int b = 0; b < kB; ++b)
      EXPECT_LT((out.middleRows(b * kT + first, kT - first) -
                 full.out.middleRows(b * kT + first, kT - first))
                    .cwiseAbs()
                    .maxCoeff(),
                1e-12)
          << first;
  }
}

TEST(Dape, RefusesBadOptions) {
  const EncodingShape shape{8, 2, 1, true, 80, 42, 7};
  EXPECT_THROW(CreateEncoding<double>("dape", {{"width", "0"}}, shape), InputError);
  EXPECT_THROW(CreateEncoding<double>("dape", {{"base", "rope"}}, shape), InputError);
  EXPECT_THROW(CreateEncoding<double>("dape", {{"widht", "3"}}, shape), InputError);
}

}  // namespace
}  // namespace lexp
