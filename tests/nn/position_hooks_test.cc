// The hook interface in full, on hand-written encodings: a content-dependent logit term (reads q_i,
// as Transformer-XL and TUPE do), a per-query logit scale (as log-n scaling and YaRN do), a
// non-contiguous pattern with its own effective distance (as LM-Infinite and ReRoPE use), and
// position ids that differ between training and evaluation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "nn/ops/attention.h"
#include "tests/testing/attention_gradcheck.h"
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
  testing::AttentionGradCase gc;
  gc.shape = sh;
  gc.pattern = &pat;
  gc.encoding = &enc;
  gc.pos = pos;
  gc.max_per_tensor = 60;
  AttentionCache<double> cache;
  const auto res = testing::CheckAttentionGradients(gc, &cache);
  EXPECT_EQ(res.checked, 60 * 3 + 8);
  // The pattern decides visibility: masked logits are -inf, probabilities 0.
  for (int i = 0; i < sh.T; ++i)
    for (int j = 0; j < sh.T; ++j) {
      const bool visible = j <= i && i - j <= 8 && (i - j) % 3 != 2;
      EXPECT_EQ(std::isinf(cache.logits(i, j)), !visible) << i << "," << j;
      if (!visible) {
        EXPECT_EQ(cache.probs(i, j), 0.0);
      }
    }
}

// The attention op hands the logit and value terms the distance the pattern defines, computed from
// the position ids it is given: with q_i = (10, 0), k_j = 0 and w = (1, 0), ContentProbe's term is
// b(i, j) = 10 d(i, j) / 10 = d(i, j) and the q.k product is 0, so the captured logit of every
// visible (i, j) is the distance the term saw: min(p_i - p_j, 4) under GappedWindow, i.e.
// min(2 (i - j), 4) for the training ids p_t = 2t and min(i - j, 4) for the evaluation ids p_t = t.
// With v = 0 the output is the value term alone, o_i = (sum_j p_ij d(i, j) / 10) w, on both the
// materialised and the streaming path.
TEST(PositionHooks, EffectiveDistanceAndPositionIdsReachTheLogitTerm) {
  const AttentionShape sh{1, 12, 1, 2};
  ContentProbe enc(sh.H, sh.D);
  auto params = enc.Parameters();
  params[0].value[0] = 1;
  params[0].value[1] = 0;
  GappedWindow pat;
  Rng rng(1);
  MatD q = MatD::Zero(sh.T, sh.D), k = MatD::Zero(sh.T, sh.D), v = MatD::Zero(sh.T, sh.D);
  q.col(0).setConstant(10);
  const double inf = std::numeric_limits<double>::infinity();
  // Query 5 written out (keys 0..5): key 0 and key 3 are at offsets 5 and 2 (= 2 mod 3, skipped).
  const std::vector<double> train_row5 = {-inf, 4, 4, -inf, 2, 0};  // 2(i - j) = 8, 6 capped at 4
  const std::vector<double> eval_row5 = {-inf, 4, 3, -inf, 1, 0};
  for (const bool training : {true, false}) {
    std::vector<double> pos;
    enc.PositionIds(sh.T, training, rng, pos);
    const double step = training ? 2 : 1;  // p_i - p_j = step (i - j)
    AttentionCache<double> cache;
    cache.capture_logits = true;
    MatD out, streamed;
    AttentionForward(q, k, v, sh, pos, pat, enc, 0, true, cache, out);
    for (int j = 0; j <= 5; ++j)
      EXPECT_EQ(cache.logits(5, j), (training ? train_row5 : eval_row5)[j]) << training << " " << j;
    for (int i = 0; i < sh.T; ++i) {
      double z = 0, zd = 0;  // softmax of the expected logits, and its mean distance
      for (int j = 0; j < sh.T; ++j) {
        const int r = i - j;
        if (r < 0 || r > 8 || r % 3 == 2) continue;
        const double d = std::min(step * r, 4.0);
        EXPECT_DOUBLE_EQ(cache.logits(i, j), d) << "training " << training << " " << i << "," << j;
        z += std::exp(d);
        zd += std::exp(d) * d;
      }
      EXPECT_NEAR(out(i, 0), zd / z / 10, 1e-12) << "value term, query " << i;
      EXPECT_EQ(out(i, 1), 0.0);
    }
    AttentionCache<double> stream_cache;
    AttentionForward(q, k, v, sh, pos, pat, enc, 0, false, stream_cache, streamed);
    EXPECT_LT((streamed - out).cwiseAbs().maxCoeff(), 1e-12) << "the streaming path sees them too";
  }
}

}  // namespace
}  // namespace lexp
