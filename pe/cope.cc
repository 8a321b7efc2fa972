#include "pe/cope.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "nn/check.h"

namespace lexp {

template <typename S>
Cope<S>::Cope(const EncodingShape& shape, const CopeOptions& opt)
    : D_(shape.d_model / shape.n_heads),
      L_(shape.n_layers),
      npos_(opt.npos),
      nodiv_(opt.nodiv),
      init_std_(opt.init_std) {
  if (npos_ == 0) {
    const int n = shape.train_length > 0 ? shape.train_length : shape.max_length;
    LEXP_INPUT_CHECK(n > 0, "encoding 'cope': npos = 0 takes the training length + 1, which this "
                            "model does not know; set npos");
    npos_ = n + 1;
  }
  LEXP_INPUT_CHECK(npos_ >= 2, fmt::format("encoding 'cope': npos must be >= 2, got {}", npos_));
  table_.setZero(static_cast<long>(L_) * npos_, D_);
  d_table_.setZero(table_.rows(), D_);
}

template <typename S>
void Cope<S>::Init(Rng& rng) {
  for (long e = 0; e < table_.size(); ++e)
    table_.data()[e] = static_cast<S>(init_std_ > 0 ? init_std_ * rng.Normal() : 0.0);
}

template <typename S>
std::vector<ParamRef<S>> Cope<S>::Parameters() {
  const std::vector<uint64_t> shape = {static_cast<uint64_t>(L_), static_cast<uint64_t>(npos_),
                                       static_cast<uint64_t>(D_)};
  return {{"pe.cope.table", table_, d_table_, "layer,position,channel", shape}};
}

template <typename S>
std::map<std::string, std::vector<double>> Cope<S>::Describe() const {
  return {{"npos", {static_cast<double>(npos_)}}};
}

template <typename S>
double Cope<S>::TermScale() const {
  return nodiv_ ? 1.0 : 1.0 / std::sqrt(static_cast<double>(D_));
}

template <typename S>
bool Cope<S>::Row::Visible(const AttentionContext& ctx, int j) const {
  if (j < begin || j >= end) return false;
  return ctx.pattern->Contiguous() || ctx.pattern->Visible(i, j, ctx.T);
}

template <typename S>
double Cope<S>::Row::Position(int j) const {
  // Keys j..i (causal) or i..j (a key after the query, encoder layout), both ends included.
  // A query outside its own key bounds counts from the nearest bound.
  const int self = std::clamp(i, begin, end - 1);
  return j <= i ? prefix[self + 1 - begin] - prefix[j - begin]
                : prefix[j + 1 - begin] - prefix[self - begin];
}

template <typename S>
void Cope<S>::Positions(const AttentionContext& ctx, int i, const HeadQK<S>& qk, Row& row) const {
  row.i = i;
  ctx.pattern->KeyBounds(i, ctx.T, &row.begin, &row.end);
  const int n = std::max(0, row.end - row.begin);
  row.gate.assign(n, 0.0);
  row.prefix.assign(n + 1, 0.0);
  const double inv = 1.0 / std::sqrt(static_cast<double>(D_));
  const S* q = qk.q + static_cast<long>(i) * qk.ld;
  for (int t = row.begin; t < row.end; ++t) {
    double g = 0;
    if (row.Visible(ctx, t)) {
      const S* k = qk.k + static_cast<long>(t) * qk.ld;
      double s = 0;
      for (int c = 0; c < D_; ++c) s += static_cast<double>(q[c]) * k[c];
      g = 1.0 / (1.0 + std::exp(-s * inv));
    }
    row.gate[t - row.begin] = g;
    row.prefix[t - row.begin + 1] = row.prefix[t - row.begin] + g;
  }
}

namespace {

// z[p] = q . e[p] for p in [0, top]: the query's logit at every integer position it can reach.
template <typename S>
void IntegerLogits(const S* q, const S* table, int D, int top, std::vector<double>& z) {
  z.assign(top + 1, 0.0);
  for (int p = 0; p <= top; ++p) {
    const S* e = table + static_cast<long>(p) * D;
    double s = 0;
    for (int c = 0; c < D; ++c) s += static_cast<double>(q[c]) * e[c];
    z[p] = s;
  }
}

// The reachable top row of a query: ceil of its largest position, clamped.
inline int TopRow(double largest, int npos) {
  return std::min(npos - 1, static_cast<int>(std::ceil(largest)));
}

}  // namespace

template <typename S>
void Cope<S>::AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                           const HeadQK<S>& qk, S* scores, long lds) const {
  thread_local Row row;
  thread_local std::vector<double> z;
  const double scale = TermScale();
  const double cap = npos_ - 1;
  for (int i = i0; i < i1; ++i) {
    Positions(ctx, i, qk, row);
    if (row.end <= row.begin) continue;
    IntegerLogits(qk.q + static_cast<long>(i) * qk.ld, Table(ctx.layer), D_,
                  TopRow(row.prefix.back(), npos_), z);
    S* out = scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j) {
      if (!row.Visible(ctx, j)) continue;  // masked afterwards
      const double p = std::min(cap, row.Position(j));
      const int f = static_cast<int>(std::floor(p)), c = static_cast<int>(std::ceil(p));
      const double w = p - f;
      out[j - j0] += static_cast<S>(scale * (w * z[c] + (1 - w) * z[f]));
    }
  }
}

template <typename S>
void Cope<S>::BeginBackward(int tasks) {
  tasks_ = tasks;
  slots_.assign(static_cast<size_t>(tasks) * npos_ * D_, 0.0);
}

// With d_ij the gradient of the logit term times its scale:
//   d z[floor] += d (1 - w),  d z[ceil] += d w,  d p_ij = d (z[ceil] - z[floor]) (0 when clamped);
//   d q_i += sum_p d z[p] e[p],  d e[p] += d z[p] q_i;
//   d g_it = sum over the keys j whose count includes t of d p_ij  (t < i: j <= t; t > i: j >= t;
//   t = i: every j);  d s_it = d g_it g (1 - g), s_it = q_i . k_t / sqrt(D).
template <typename S>
void Cope<S>::LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                                const HeadQK<S>& qk, S* d_scores, long lds,
                                const HeadQKGrad<S>& grad, int task) {
  slot_layer_.store(ctx.layer, std::memory_order_relaxed);
  thread_local Row row;
  thread_local std::vector<double> z, dz, dp, suffix;
  const double scale = TermScale();
  const double inv = 1.0 / std::sqrt(static_cast<double>(D_));
  const double cap = npos_ - 1;
  const S* table = Table(ctx.layer);
  double* slot = slots_.data() + static_cast<long>(task) * npos_ * D_;
  for (int i = i0; i < i1; ++i) {
    Positions(ctx, i, qk, row);
    if (row.end <= row.begin) continue;
    const int top = TopRow(row.prefix.back(), npos_);
    const S* q = qk.q + static_cast<long>(i) * qk.ld;
    IntegerLogits(q, table, D_, top, z);
    dz.assign(top + 1, 0.0);
    dp.assign(row.end - row.begin, 0.0);
    const S* d_row = d_scores + static_cast<long>(i - i0) * lds;
    bool any = false;
    for (int j = std::max(j0, row.begin); j < std::min(j1, row.end); ++j) {
      const double d = scale * d_row[j - j0];
      if (d == 0 || !row.Visible(ctx, j)) continue;
      any = true;
      const double raw = row.Position(j);
      const double p = std::min(cap, raw);
      const int f = static_cast<int>(std::floor(p)), c = static_cast<int>(std::ceil(p));
      const double w = p - f;
      dz[f] += d * (1 - w);
      dz[c] += d * w;
      if (raw < cap) dp[j - row.begin] = d * (z[c] - z[f]);
    }
    if (!any) continue;
    S* dq = grad.d_q + static_cast<long>(i) * grad.ld;
    for (int p = 0; p <= top; ++p) {
      if (dz[p] == 0) continue;
      const S* e = table + static_cast<long>(p) * D_;
      double* de = slot + static_cast<long>(p) * D_;
      for (int c = 0; c < D_; ++c) {
        dq[c] += static_cast<S>(dz[p] * e[c]);
        de[c] += dz[p] * q[c];
      }
    }
    // d g_t from the running sums of d p: from the left for t < i, from the right for t > i.
    const int n = row.end - row.begin, ii = std::clamp(i, row.begin, row.end - 1) - row.begin;
    suffix.assign(n + 1, 0.0);
    for (int t = n - 1; t >= 0; --t) suffix[t] = suffix[t + 1] + dp[t];
    double left = 0;
    for (int t = 0; t < n; ++t) {
      left += dp[t];
      const double dg = t < ii ? left : (t == ii ? suffix[0] : suffix[t]);
      const double g = row.gate[t];
      if (dg == 0 || g == 0) continue;
      const double ds = dg * g * (1 - g) * inv;
      const int key = row.begin + t;
      const S* k = qk.k + static_cast<long>(key) * qk.ld;
      S* dk = grad.d_k + static_cast<long>(key) * grad.ld;
      for (int c = 0; c < D_; ++c) {
        dq[c] += static_cast<S>(ds * k[c]);
        dk[c] += static_cast<S>(ds * q[c]);
      }
    }
  }
}

template <typename S>
void Cope<S>::EndBackward() {
  const long n = static_cast<long>(npos_) * D_;
  const long off = static_cast<long>(slot_layer_.load()) * n;
  for (int t = 0; t < tasks_; ++t) {
    const double* s = slots_.data() + static_cast<long>(t) * n;
    for (long e = 0; e < n; ++e) d_table_.data()[off + e] += static_cast<S>(s[e]);
  }
}

template class Cope<float>;
template class Cope<double>;

}  // namespace lexp
