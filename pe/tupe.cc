#include "pe/tupe.h"

#include <cmath>

#include "nn/check.h"

namespace lexp {

template <typename S>
Tupe<S>::Tupe(const EncodingShape& shape, const TupeOptions& opt,
              std::unique_ptr<PositionEncoding<S>> relative)
    : C_(shape.d_model),
      H_(shape.n_heads),
      D_(shape.d_model / shape.n_heads),
      relative_(std::move(relative)) {
  const int rows = opt.max_len > 0 ? opt.max_len : shape.max_length;
  LEXP_INPUT_CHECK(rows > 0, "encoding 'tupe': max_len = 0 takes the run's bound on position ids, "
                             "which this model does not know; set max_len");
  table_.setZero(rows, C_);
  d_table_.setZero(rows, C_);
  ln_.g.setOnes(C_);
  ln_.b.setZero(C_);
  d_ln_.g.setZero(C_);
  d_ln_.b.setZero(C_);
  u_q_.setZero(C_, C_);
  u_k_.setZero(C_, C_);
  d_u_q_.setZero(C_, C_);
  d_u_k_.setZero(C_, C_);
}

template <typename S>
void Tupe<S>::Init(Rng& rng) {
  const double sd = 1.0 / std::sqrt(static_cast<double>(C_));
  for (Mat<S>* m : {&table_, &u_q_, &u_k_})
    for (long i = 0; i < m->size(); ++i) m->data()[i] = static_cast<S>(sd * rng.Normal());
  if (relative_) {
    Rng r = rng.Split("relative");
    relative_->Init(r);
  }
}

template <typename S>
std::vector<ParamRef<S>> Tupe<S>::Parameters() {
  std::vector<ParamRef<S>> p = {{"pe.tupe.table", table_, d_table_, "position,channel"},
                                {"pe.tupe.ln.g", ln_.g, d_ln_.g, "channel"},
                                {"pe.tupe.ln.b", ln_.b, d_ln_.b, "channel"},
                                {"pe.tupe.u_q", u_q_, d_u_q_, "in,out"},
                                {"pe.tupe.u_k", u_k_, d_u_k_, "in,out"}};
  if (relative_)
    for (auto& r : relative_->Parameters()) p.push_back(r);
  return p;
}

template <typename S>
int Tupe<S>::Row(double pos) const {
  const long p = std::lround(pos);
  LEXP_INPUT_CHECK(p >= 0 && p < table_.rows(),
                   "encoding 'tupe': position " + std::to_string(p) + " is outside its table of " +
                       std::to_string(table_.rows()) + " rows; set max_len larger");
  return static_cast<int>(p);
}

// p = LN(table[pos]);  pq = p U^Q;  pk = p U^K  (shared by every layer of this forward pass).
template <typename S>
void Tupe<S>::Prepare(const std::vector<double>& pos, double max_distance) {
  const long T = static_cast<long>(pos.size());
  rows_.resize(T);
  Resize(x_, T, C_);
  for (long t = 0; t < T; ++t) {
    rows_[t] = Row(pos[t]);
    x_.row(t) = table_.row(rows_[t]);
  }
  LayerNormForward(x_, ln_, p_, ln_cache_);
  pq_.noalias() = p_ * u_q_;
  pk_.noalias() = p_ * u_k_;
  if (relative_) relative_->Prepare(pos, max_distance);
}

template <typename S>
void Tupe<S>::AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                           const HeadQK<S>& qk, S* scores, long lds) const {
  const int n = i1 - i0, m = j1 - j0;
  const S inv = S(1) / std::sqrt(S(2 * D_));
  const long col = static_cast<long>(ctx.head) * D_;
  StridedMap<S> out(scores, n, m, Eigen::OuterStride<>(lds));
  out.noalias() += (pq_.block(i0, col, n, D_) * pk_.block(j0, col, m, D_).transpose()) * inv;
  if (relative_) relative_->AddLogitTerm(ctx, i0, i1, j0, j1, qk, scores, lds);
}

template <typename S>
void Tupe<S>::BeginBackward(int tasks) {
  tasks_ = tasks;
  slots_.assign(static_cast<size_t>(tasks) * 2 * pq_.rows() * D_, 0.0);
  if (relative_) relative_->BeginBackward(tasks);
}

// d_pq_i += sum_j d_a_ij pk_j / sqrt(2D);  d_pk_j += sum_i d_a_ij pq_i / sqrt(2D)  (head columns).
template <typename S>
void Tupe<S>::LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                                const HeadQK<S>& qk, S* d_scores, long lds,
                                const HeadQKGrad<S>& grad, int task) {
  const int n = i1 - i0, m = j1 - j0;
  const long T = pq_.rows();
  const double inv = 1.0 / std::sqrt(2.0 * D_);
  const long col = static_cast<long>(ctx.head) * D_;
  StridedMap<double> dpq(slots_.data() + static_cast<long>(task) * 2 * T * D_, T, D_,
                         Eigen::OuterStride<>(D_));
  StridedMap<double> dpk(slots_.data() + (static_cast<long>(task) * 2 + 1) * T * D_, T, D_,
                         Eigen::OuterStride<>(D_));
  ConstStridedMap<S> dA(d_scores, n, m, Eigen::OuterStride<>(lds));
  const Mat<double> g = dA.template cast<double>() * inv;
  dpq.middleRows(i0, n).noalias() += g * pk_.block(j0, col, m, D_).template cast<double>();
  dpk.middleRows(j0, m).noalias() +=
      g.transpose() * pq_.block(i0, col, n, D_).template cast<double>();
  if (relative_) relative_->LogitTermBackward(ctx, i0, i1, j0, j1, qk, d_scores, lds, grad, task);
}

// Per layer: d U^Q += p^T d_pq;  d U^K += p^T d_pk;  d_p = d_pq U^Q^T + d_pk U^K^T;
// LayerNorm backward; d table[pos_t] += d_x_t.
template <typename S>
void Tupe<S>::EndBackward() {
  const long T = pq_.rows();
  Mat<S> dpq = Mat<S>::Zero(T, C_), dpk = Mat<S>::Zero(T, C_);
  for (int t = 0; t < tasks_; ++t) {
    const long col = static_cast<long>(t % H_) * D_;
    ConstStridedMap<double> a(slots_.data() + static_cast<long>(t) * 2 * T * D_, T, D_,
                              Eigen::OuterStride<>(D_));
    ConstStridedMap<double> b(slots_.data() + (static_cast<long>(t) * 2 + 1) * T * D_, T, D_,
                              Eigen::OuterStride<>(D_));
    dpq.middleCols(col, D_) += a.template cast<S>();
    dpk.middleCols(col, D_) += b.template cast<S>();
  }
  d_u_q_.noalias() += p_.transpose() * dpq;
  d_u_k_.noalias() += p_.transpose() * dpk;
  Mat<S> dp = dpq * u_q_.transpose() + dpk * u_k_.transpose();
  Mat<S> dx = Mat<S>::Zero(T, C_);
  LayerNormBackward(ln_, ln_cache_, dp, dx, d_ln_);
  for (long t = 0; t < T; ++t) d_table_.row(rows_[t]) += dx.row(t);
  if (relative_) relative_->EndBackward();
}

template class Tupe<float>;
template class Tupe<double>;

}  // namespace lexp
