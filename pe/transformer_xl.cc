#include "pe/transformer_xl.h"

#include <algorithm>
#include <cmath>

#include "nn/check.h"

namespace lexp {

template <typename S>
TransformerXL<S>::TransformerXL(const EncodingShape& shape, const TransformerXLOptions& opt)
    : C_(shape.d_model),
      H_(shape.n_heads),
      D_(shape.d_model / shape.n_heads),
      L_(shape.n_layers),
      clamp_len_(opt.clamp_len),
      share_(opt.share_biases) {
  LEXP_INPUT_CHECK(C_ % 2 == 0, "encoding 'transformer_xl': d_model must be even");
  w_r_.setZero(static_cast<long>(L_) * C_, C_);
  d_w_r_.setZero(w_r_.rows(), C_);
  const long rows = static_cast<long>(share_ ? 1 : L_) * H_;
  u_.setZero(rows, D_);
  v_.setZero(rows, D_);
  d_u_.setZero(rows, D_);
  d_v_.setZero(rows, D_);
  proj_.resize(L_);
}

template <typename S>
void TransformerXL<S>::Init(Rng& rng) {
  const double sd = 1.0 / std::sqrt(static_cast<double>(C_));
  for (long i = 0; i < w_r_.size(); ++i) w_r_.data()[i] = static_cast<S>(sd * rng.Normal());
  for (long i = 0; i < u_.size(); ++i) u_.data()[i] = static_cast<S>(0.02 * rng.Normal());
  for (long i = 0; i < v_.size(); ++i) v_.data()[i] = static_cast<S>(0.02 * rng.Normal());
}

template <typename S>
std::vector<ParamRef<S>> TransformerXL<S>::Parameters() {
  const auto rows = [](const Mat<S>& m, long per) { return static_cast<uint64_t>(m.rows() / per); };
  const uint64_t C = static_cast<uint64_t>(C_), H = static_cast<uint64_t>(H_),
                 D = static_cast<uint64_t>(D_);
  return {{"pe.transformer_xl.w_r", w_r_, d_w_r_, "layer,in,out", {rows(w_r_, C_), C, C}},
          {"pe.transformer_xl.u", u_, d_u_, "layer,head,channel", {rows(u_, H_), H, D}},
          {"pe.transformer_xl.v", v_, d_v_, "layer,head,channel", {rows(v_, H_), H, D}}};
}

template <typename S>
void TransformerXL<S>::Sinusoid(double d, double* out) const {
  const int half = C_ / 2;
  for (int k = 0; k < half; ++k) {
    const double w = std::pow(10000.0, -2.0 * k / C_);
    out[k] = std::sin(d * w);
    out[half + k] = std::cos(d * w);
  }
}

template <typename S>
void TransformerXL<S>::Prepare(const std::vector<double>& /*pos*/, double max_distance) {
  const long span = static_cast<long>(std::ceil(max_distance));
  d_min_ = -span;
  n_d_ = 2 * span + 1;
  sinus_.resize(n_d_, C_);
  for (long r = 0; r < n_d_; ++r) {
    long d = d_min_ + r;
    if (clamp_len_ > 0) d = std::clamp<long>(d, -clamp_len_, clamp_len_);
    Sinusoid(static_cast<double>(d), sinus_.row(r).data());
  }
  for (int l = 0; l < L_; ++l)
    proj_[l].noalias() = sinus_.cast<S>() * w_r_.middleRows(static_cast<long>(l) * C_, C_);
}

template <typename S>
long TransformerXL<S>::Offset(const AttentionContext& ctx, int i, int j) const {
  const long r = std::lround(ctx.Distance(i, j)) - d_min_;
  LEXP_CHECK(r >= 0 && r < n_d_, "transformer_xl: distance beyond the range given to Prepare()");
  return r;
}

// a_ij += [u.k_j + (q_i + v).P_{d(i,j)}] / sqrt(D), P = (R W_R) restricted to head h.
template <typename S>
void TransformerXL<S>::AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                                    const HeadQK<S>& qk, S* scores, long lds) const {
  const S inv = S(1) / std::sqrt(S(D_));
  const long brow = static_cast<long>(BiasRow(ctx.layer)) * H_ + ctx.head;
  const auto u = u_.row(brow), v = v_.row(brow);
  const Mat<S>& P = proj_[ctx.layer];
  thread_local std::vector<S> uk;
  uk.resize(j1 - j0);
  for (int j = j0; j < j1; ++j)
    uk[j - j0] = Eigen::Map<const RowVec<S>>(qk.k + j * qk.ld, D_).dot(u);
  thread_local RowVec<S> qv;
  for (int i = i0; i < i1; ++i) {
    qv = Eigen::Map<const RowVec<S>>(qk.q + i * qk.ld, D_) + v;
    S* row = scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j) {
      const S* p = P.data() + Offset(ctx, i, j) * C_ + static_cast<long>(ctx.head) * D_;
      row[j - j0] += (uk[j - j0] + qv.dot(Eigen::Map<const RowVec<S>>(p, D_))) * inv;
    }
  }
}

template <typename S>
void TransformerXL<S>::BeginBackward(int tasks) {
  tasks_ = tasks;
  slots_.assign(static_cast<size_t>(tasks) * (2 * D_ + n_d_ * D_), 0.0);
}

// With g = d_a_ij / sqrt(D): d_k_j += g u;  d_u += g k_j;  d_q_i += g P_d;  d_v += g P_d;
// d_P_d += g (q_i + v);  then (EndBackward) d_W_R += R^T d_P.
template <typename S>
void TransformerXL<S>::LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0,
                                         int j1, const HeadQK<S>& qk, S* d_scores, long lds,
                                         const HeadQKGrad<S>& grad, int task) {
  slot_layer_.store(ctx.layer, std::memory_order_relaxed);
  const double inv = 1.0 / std::sqrt(static_cast<double>(D_));
  const long brow = static_cast<long>(BiasRow(ctx.layer)) * H_ + ctx.head;
  const S* u = u_.data() + brow * D_;
  const S* v = v_.data() + brow * D_;
  const Mat<S>& P = proj_[ctx.layer];
  double* slot = slots_.data() + static_cast<long>(task) * (2 * D_ + n_d_ * D_);
  double* du = slot;
  double* dv = slot + D_;
  double* dP = slot + 2 * D_;
  for (int i = i0; i < i1; ++i) {
    const S* row = d_scores + static_cast<long>(i - i0) * lds;
    const S* q = qk.q + i * qk.ld;
    S* dq = grad.d_q + i * grad.ld;
    for (int j = j0; j < j1; ++j) {
      const double g = row[j - j0] * inv;
      if (g == 0) continue;
      const S* k = qk.k + j * qk.ld;
      S* dk = grad.d_k + j * grad.ld;
      const long off = Offset(ctx, i, j);
      const S* p = P.data() + off * C_ + static_cast<long>(ctx.head) * D_;
      double* dp = dP + off * D_;
      for (int c = 0; c < D_; ++c) {
        dk[c] += static_cast<S>(g * u[c]);
        du[c] += g * k[c];
        dq[c] += static_cast<S>(g * p[c]);
        dv[c] += g * p[c];
        dp[c] += g * (static_cast<double>(q[c]) + v[c]);
      }
    }
  }
}

template <typename S>
void TransformerXL<S>::EndBackward() {
  const int l = slot_layer_.load();
  Mat<double> dP = Mat<double>::Zero(n_d_, C_);
  for (int t = 0; t < tasks_; ++t) {
    const int h = t % H_;
    const double* slot = slots_.data() + static_cast<long>(t) * (2 * D_ + n_d_ * D_);
    const long brow = static_cast<long>(BiasRow(l)) * H_ + h;
    for (int c = 0; c < D_; ++c) {
      d_u_(brow, c) += static_cast<S>(slot[c]);
      d_v_(brow, c) += static_cast<S>(slot[D_ + c]);
    }
    for (long r = 0; r < n_d_; ++r)
      for (int c = 0; c < D_; ++c)
        dP(r, static_cast<long>(h) * D_ + c) += slot[2 * D_ + r * D_ + c];
  }
  d_w_r_.middleRows(static_cast<long>(l) * C_, C_) += (sinus_.transpose() * dP).cast<S>();
}

template class TransformerXL<float>;
template class TransformerXL<double>;

}  // namespace lexp
