#include "pe/shaw.h"

#include <algorithm>
#include <cmath>

#include "nn/check.h"

namespace lexp {

template <typename S>
Shaw<S>::Shaw(const EncodingShape& shape, const ShawOptions& opt)
    : k_(opt.clip), D_(shape.d_model / shape.n_heads), L_(shape.n_layers), values_(opt.values) {
  wk_.setZero(static_cast<long>(L_) * Rows(), D_);
  wv_.setZero(static_cast<long>(L_) * Rows(), D_);
  d_wk_.setZero(wk_.rows(), D_);
  d_wv_.setZero(wv_.rows(), D_);
}

template <typename S>
void Shaw<S>::Init(Rng& rng) {
  const double sd = 1.0 / std::sqrt(static_cast<double>(D_));
  for (long i = 0; i < wk_.size(); ++i) wk_.data()[i] = static_cast<S>(sd * rng.Normal());
  for (long i = 0; i < wv_.size(); ++i) wv_.data()[i] = static_cast<S>(sd * rng.Normal());
}

template <typename S>
std::vector<ParamRef<S>> Shaw<S>::Parameters() {
  const std::vector<uint64_t> shape = {static_cast<uint64_t>(L_), static_cast<uint64_t>(Rows()),
                                       static_cast<uint64_t>(D_)};
  const std::string axes = "layer,offset,channel";  // offset -clip..clip
  std::vector<ParamRef<S>> p = {{"pe.shaw.keys", wk_, d_wk_, axes, shape}};
  if (values_) p.push_back({"pe.shaw.values", wv_, d_wv_, axes, shape});
  return p;
}

template <typename S>
int Shaw<S>::Index(const AttentionContext& ctx, int i, int j) const {
  const long r = std::lround(-ctx.Distance(i, j));  // j - i in positions
  return static_cast<int>(std::clamp<long>(r, -k_, k_)) + k_;
}

// a_ij += q_i . w^K_r / sqrt(D): the 2k+1 products of each query are formed once.
template <typename S>
void Shaw<S>::AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                           const HeadQK<S>& qk, S* scores, long lds) const {
  thread_local std::vector<S> qw;
  qw.resize(Rows());
  const S inv = S(1) / std::sqrt(S(D_));
  ConstStridedMap<S> W(KeyTable(ctx.layer), Rows(), D_, Eigen::OuterStride<>(D_));
  for (int i = i0; i < i1; ++i) {
    Eigen::Map<const RowVec<S>> q(qk.q + i * qk.ld, D_);
    Eigen::Map<RowVec<S>>(qw.data(), Rows()).noalias() = (q * W.transpose()) * inv;
    S* row = scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j) row[j - j0] += qw[Index(ctx, i, j)];
  }
}

template <typename S>
void Shaw<S>::BeginBackward(int tasks) {
  tasks_ = tasks;
  slots_.assign(static_cast<size_t>(tasks) * 2 * Rows() * D_, 0.0);
}

// Backward of the key term: g_r = sum_{j: r(i,j) = r} d_a_ij;  d_q_i += sum_r g_r w^K_r / sqrt(D);
// d_w^K_r += g_r q_i / sqrt(D).
template <typename S>
void Shaw<S>::LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                                const HeadQK<S>& qk, S* d_scores, long lds,
                                const HeadQKGrad<S>& grad, int task) {
  slot_layer_.store(ctx.layer, std::memory_order_relaxed);
  thread_local std::vector<double> g;
  g.resize(Rows());
  const double inv = 1.0 / std::sqrt(static_cast<double>(D_));
  const S* W = KeyTable(ctx.layer);
  double* slot = slots_.data() + static_cast<long>(task) * 2 * Rows() * D_;
  for (int i = i0; i < i1; ++i) {
    std::fill(g.begin(), g.end(), 0.0);
    const S* row = d_scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j) g[Index(ctx, i, j)] += row[j - j0];
    const S* q = qk.q + i * qk.ld;
    S* dq = grad.d_q + i * grad.ld;
    for (int r = 0; r < Rows(); ++r) {
      if (g[r] == 0) continue;
      const double a = g[r] * inv;
      for (int c = 0; c < D_; ++c) {
        dq[c] += static_cast<S>(a * W[r * D_ + c]);
        slot[r * D_ + c] += a * q[c];
      }
    }
  }
}

// o_i += sum_r (sum_{j: r(i,j) = r} p_ij) w^V_r.
template <typename S>
void Shaw<S>::AddValueTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1, const S* p,
                           long ldp, S* out, long ldo) const {
  thread_local std::vector<double> a;
  a.resize(Rows());
  const S* W = ValueTable(ctx.layer);
  for (int i = i0; i < i1; ++i) {
    std::fill(a.begin(), a.end(), 0.0);
    const S* prow = p + static_cast<long>(i - i0) * ldp;
    for (int j = j0; j < j1; ++j) a[Index(ctx, i, j)] += prow[j - j0];
    S* o = out + static_cast<long>(i - i0) * ldo;
    for (int r = 0; r < Rows(); ++r)
      if (a[r] != 0)
        for (int c = 0; c < D_; ++c) o[c] += static_cast<S>(a[r] * W[r * D_ + c]);
  }
}

// d_p_ij += d_o_i . w^V_r(i,j);  d_w^V_r += (sum_{j: r(i,j) = r} p_ij) d_o_i.
template <typename S>
void Shaw<S>::ValueTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                                const S* p, long ldp, const S* d_out, long ldo, S* d_p, long ldd,
                                int task) {
  slot_layer_.store(ctx.layer, std::memory_order_relaxed);
  thread_local std::vector<double> a, dv;
  a.resize(Rows());
  dv.resize(Rows());
  const S* W = ValueTable(ctx.layer);
  double* slot = slots_.data() + (static_cast<long>(task) * 2 + 1) * Rows() * D_;
  for (int i = i0; i < i1; ++i) {
    const S* d_o = d_out + static_cast<long>(i - i0) * ldo;
    for (int r = 0; r < Rows(); ++r) {
      double s = 0;
      for (int c = 0; c < D_; ++c) s += static_cast<double>(d_o[c]) * W[r * D_ + c];
      dv[r] = s;
    }
    std::fill(a.begin(), a.end(), 0.0);
    const S* prow = p + static_cast<long>(i - i0) * ldp;
    S* drow = d_p + static_cast<long>(i - i0) * ldd;
    for (int j = j0; j < j1; ++j) {
      const int r = Index(ctx, i, j);
      drow[j - j0] += static_cast<S>(dv[r]);
      a[r] += prow[j - j0];
    }
    for (int r = 0; r < Rows(); ++r)
      if (a[r] != 0)
        for (int c = 0; c < D_; ++c) slot[r * D_ + c] += a[r] * d_o[c];
  }
}

template <typename S>
void Shaw<S>::EndBackward() {
  const long n = static_cast<long>(Rows()) * D_;
  const long off = static_cast<long>(slot_layer_.load()) * n;
  for (int t = 0; t < tasks_; ++t) {
    const double* sk = slots_.data() + static_cast<long>(t) * 2 * n;
    for (long e = 0; e < n; ++e) {
      d_wk_.data()[off + e] += static_cast<S>(sk[e]);
      if (values_) d_wv_.data()[off + e] += static_cast<S>(sk[n + e]);
    }
  }
}

template class Shaw<float>;
template class Shaw<double>;

}  // namespace lexp
