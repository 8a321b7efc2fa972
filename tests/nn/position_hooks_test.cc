// The hook interface in full, with sites that no skeleton encoding uses yet: a content-dependent
// logit term (reads q_i, as Transformer-XL and TUPE will), a per-query logit scale (as log-n
// scaling and YaRN will), a non-contiguous pattern with its own effective distance (as LM-Infinite
// and ReRoPE will), and position ids that differ between training and evaluation.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/ops/attention.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

// b_h(i, j) = (w_h . q_i) * d(i, j) / 10 + (w_h . k_j) / 5 with a learnable w_h; value term
// r_h(i, j) = w_h d(i, j) / 10; scale_i = 1 + 0.1 ln(1 + i); training positions are 2t, evaluation
// t.
class ContentProbe final : public PositionEncoding<double> {
 public:
  ContentProbe(int H, int D) : H_(H), D_(D), w_(H, D), d_w_(MatD::Zero(H, D)) {}
  std::string Name() const override { return "content_probe"; }
  unsigned Sites() const override {
    return kSitePositionIds | kSiteLogitTerm | kSiteLogitScale | kSiteValueTerm;
  }
  void Init(Rng& rng) override { testing::FillNormal(w_, rng, 0.5); }
  void PositionIds(int T, bool training, Rng&, std::vector<double>& pos) const override {
    pos.resize(T);
    for (int t = 0; t < T; ++t) pos[t] = training ? 2.0 * t : t;
  }
  RowVec<double> Row(const double* x, long ld, int t) const {
    return Eigen::Map<const RowVec<double>>(x + t * ld, D_);
  }
  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<double>& qk, double* s, long lds) const override {
    for (int i = i0; i < i1; ++i) {
      const double wq = Row(qk.q, qk.ld, i).dot(w_.row(ctx.head));
      for (int j = j0; j < j1; ++j)
        s[(i - i0) * lds + (j - j0)] +=
            wq * ctx.Distance(i, j) / 10 + Row(qk.k, qk.ld, j).dot(w_.row(ctx.head)) / 5;
    }
  }
  void BeginBackward(int tasks) override { slots_.setZero(tasks, D_); }
  // Forward: a_ij += (w . q_i) d_ij / 10 + (w . k_j) / 5.
  // Backward: d_w += sum_ij d_a_ij (q_i d_ij / 10 + k_j / 5); d_q_i += sum_j d_a_ij w d_ij / 10;
  // d_k_j += sum_i d_a_ij w / 5.
  void LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const HeadQK<double>& qk, double* d_s, long lds,
                         const HeadQKGrad<double>& grad, int task) override {
    for (int i = i0; i < i1; ++i) {
      double g = 0;
      for (int j = j0; j < j1; ++j) {
        const double a = d_s[(i - i0) * lds + (j - j0)];
        g += a * ctx.Distance(i, j) / 10;
        slots_.row(task) += a / 5 * Row(qk.k, qk.ld, j);
        Eigen::Map<RowVec<double>>(grad.d_k + j * grad.ld, D_) += a / 5 * w_.row(ctx.head);
      }
      slots_.row(task) += g * Row(qk.q, qk.ld, i);
      Eigen::Map<RowVec<double>>(grad.d_q + i * grad.ld, D_) += g * w_.row(ctx.head);
    }
    Remember(task, ctx.head);
  }
  // Forward: o_i += sum_j p_ij d_ij / 10 w.  Backward: d_p_ij += d_o_i . w d_ij / 10;
  // d_w += sum_ij p_ij d_ij / 10 d_o_i.
  void AddValueTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1, const double* p,
                    long ldp, double* out, long ldo) const override {
    for (int i = i0; i < i1; ++i) {
      double a = 0;
      for (int j = j0; j < j1; ++j) a += p[(i - i0) * ldp + (j - j0)] * ctx.Distance(i, j) / 10;
      Eigen::Map<RowVec<double>>(out + (i - i0) * ldo, D_) += a * w_.row(ctx.head);
    }
  }
  void ValueTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const double* p, long ldp, const double* d_out, long ldo, double* d_p,
                         long ldd, int task) override {
    for (int i = i0; i < i1; ++i) {
      const RowVec<double> d_o = Row(d_out, ldo, i - i0);
      const double dw = d_o.dot(w_.row(ctx.head));
      double a = 0;
      for (int j = j0; j < j1; ++j) {
        const double d = ctx.Distance(i, j) / 10;
        d_p[(i - i0) * ldd + (j - j0)] += dw * d;
        a += p[(i - i0) * ldp + (j - j0)] * d;
      }
      slots_.row(task) += a * d_o;
    }
    Remember(task, ctx.head);
  }
  void Remember(int task, int head) {
    task_head_.resize(std::max<size_t>(task_head_.size(), task + 1));
    task_head_[task] = head;
  }
  void EndBackward() override {
    for (long t = 0; t < slots_.rows(); ++t) d_w_.row(task_head_[t]) += slots_.row(t);
  }
  double LogitScale(const AttentionContext&, int i) const override {
    return 1 + 0.1 * std::log1p(i);
  }
  std::vector<ParamRef<double>> Parameters() override {
    return {{"pe.probe.w", w_.data(), d_w_.data(), static_cast<long>(w_.size())}};
  }

 private:
  int H_, D_;
  MatD w_, d_w_, slots_;
  std::vector<int> task_head_;
};

// Causal window of 9 keys that skips keys at offset = 2 mod 3, seen at distance min(i - j, 4).
class GappedWindow final : public AttentionPattern {
 public:
  GappedWindow() : AttentionPattern(true) {}
  std::string Name() const override { return "gapped_window"; }
  void KeyBounds(int i, int, int* b, int* e) const override {
    *b = std::max(0, i - 8);
    *e = i + 1;
  }
  bool Contiguous() const override { return false; }
  bool Visible(int i, int j, int) const override { return (i - j) % 3 != 2; }
  double EffectiveDistance(int i, int j, const double* pos) const override {
    return std::min(pos[i] - pos[j], 4.0);
  }
  bool PlainDistance() const override { return false; }
};

TEST(PositionHooks, ContentTermScaleAndPatternHaveCorrectGradients) {
  const AttentionShape sh{2, 75, 2, 4};
  ContentProbe enc(sh.H, sh.D);
  Rng rng(3);
  enc.Init(rng);
  GappedWindow pat;
  std::vector<double> pos;
  enc.PositionIds(sh.T, true, rng, pos);
  const long N = static_cast<long>(sh.B) * sh.T, C = sh.C();
  MatD q(N, C), k(N, C), v(N, C), w(N, C);
  testing::FillNormal(q, rng);
  testing::FillNormal(k, rng);
  testing::FillNormal(v, rng);
  testing::FillNormal(w, rng);
  auto loss = [&] {
    MatD out;
    AttentionCache<double> c;
    AttentionForward(q, k, v, sh, pos, pat, enc, 0, false, c, out);  // streaming path
    return out.cwiseProduct(w).sum();
  };
  MatD out, d_q = MatD::Zero(N, C), d_k = MatD::Zero(N, C), d_v = MatD::Zero(N, C);
  AttentionCache<double> cache;
  cache.capture_logits = true;
  AttentionForward(q, k, v, sh, pos, pat, enc, 0, true, cache, out);
  EXPECT_NEAR(out.cwiseProduct(w).sum(), loss(), 1e-12) << "streaming equals materialised";
  // The pattern decides visibility: masked logits are -inf, probabilities 0.
  for (int i = 0; i < sh.T; ++i)
    for (int j = 0; j < sh.T; ++j) {
      const bool visible = j <= i && i - j <= 8 && (i - j) % 3 != 2;
      EXPECT_EQ(std::isinf(cache.logits(i, j)), !visible) << i << "," << j;
      if (!visible) {
        EXPECT_EQ(cache.probs(i, j), 0.0);
      }
    }
  AttentionBackward(q, k, v, sh, pos, pat, enc, 0, cache, w, d_q, d_k, d_v);
  std::vector<ParamRef<double>> params = {{"q", q.data(), d_q.data(), q.size()},
                                          {"k", k.data(), d_k.data(), k.size()},
                                          {"v", v.data(), d_v.data(), v.size()}};
  for (auto& p : enc.Parameters()) params.push_back(p);
  const auto res = testing::CheckGradients(loss, params, testing::CopyGrads(params), 60);
  EXPECT_EQ(res.checked, 60 * 3 + 8);
}

TEST(PositionHooks, EffectiveDistanceAndPositionIdsReachTheLogitTerm) {
  ContentProbe enc(1, 2);
  GappedWindow pat;
  Rng rng(1);
  std::vector<double> train_pos, eval_pos;
  enc.PositionIds(6, true, rng, train_pos);
  enc.PositionIds(6, false, rng, eval_pos);
  EXPECT_EQ(train_pos[5], 10.0);
  EXPECT_EQ(eval_pos[5], 5.0);
  // With q = (10, 0) and w = (1, 0): b(i, j) = d(i, j), capped at 4 by the pattern.
  auto params = enc.Parameters();
  params[0].value[0] = 1;
  params[0].value[1] = 0;
  std::vector<double> q(6 * 2, 0.0), k(6 * 2, 0.0);  // [T, D]; only query 5 is read
  q[5 * 2] = 10;
  for (const auto* pos : {&train_pos, &eval_pos}) {
    AttentionContext ctx{0, 0, 1, 2, 6, pos->data(), &pat, pat.PlainDistance()};
    double s = 0;
    enc.AddLogitTerm(ctx, 5, 6, 0, 1, HeadQK<double>{q.data(), k.data(), 2}, &s, 1);
    EXPECT_DOUBLE_EQ(s, 4.0);
    s = 0;
    enc.AddLogitTerm(ctx, 5, 6, 4, 5, HeadQK<double>{q.data(), k.data(), 2}, &s, 1);
    EXPECT_DOUBLE_EQ(s, (*pos)[5] - (*pos)[4]);
  }
}

}  // namespace
}  // namespace lexp
