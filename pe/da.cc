#include "pe/da.h"

#include <cmath>

#include "nn/check.h"

namespace lexp {

template <typename S>
DistanceAware<S>::DistanceAware(const EncodingShape& shape, const DistanceAwareOptions& opt)
    : H_(shape.n_heads), D_(shape.d_model / shape.n_heads), init_w_(opt.init_w) {
  w_.setZero(shape.n_layers, H_);
  v_.setZero(shape.n_layers, H_);
  d_w_.setZero(shape.n_layers, H_);
  d_v_.setZero(shape.n_layers, H_);
}

template <typename S>
void DistanceAware<S>::Init(Rng& rng) {
  for (long i = 0; i < w_.size(); ++i)
    w_.data()[i] = static_cast<S>(rng.Uniform(-init_w_, init_w_));
  v_.setZero();
}

template <typename S>
std::vector<ParamRef<S>> DistanceAware<S>::Parameters() {
  return {{"pe.da.w", w_, d_w_, "layer,head"}, {"pe.da.v", v_, d_v_, "layer,head"}};
}

template <typename S>
void DistanceAware<S>::SetParams(int layer, int head, double w, double v) {
  w_(layer, head) = static_cast<S>(w);
  v_(layer, head) = static_cast<S>(v);
}

template <typename S>
double DistanceAware<S>::Coefficient(int layer, int head, double d) const {
  const double v = v_(layer, head), R = w_(layer, head) * d;
  return (1 + std::exp(v)) / (1 + std::exp(v - R));
}

template <typename S>
void DistanceAware<S>::AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                                    const HeadQK<S>&, S* scores, long lds) const {
  for (int i = i0; i < i1; ++i) {
    S* row = scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j) {
      S& a = row[j - j0];
      a = a > 0 ? a * static_cast<S>(Coefficient(ctx.layer, ctx.head, std::abs(ctx.Distance(i, j))))
                : S(0);
    }
  }
}

template <typename S>
void DistanceAware<S>::BeginBackward(int tasks) {
  tasks_ = tasks;
  slots_.assign(static_cast<size_t>(tasks) * 2, 0.0);
}

// With c = q.k/sqrt(D) (recomputed), g = dL/da, e = e^v, u = e^{v - w d}, f = (1 + e)/(1 + u):
//   dL/dc = g f [c > 0];  df/dw = (1 + e) u d / (1 + u)^2;  df/dv = (e (1 + u) - (1 + e) u) / (1 +
//   u)^2 dL/dw += g ReLU(c) df/dw;  dL/dv += g ReLU(c) df/dv.
template <typename S>
void DistanceAware<S>::LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0,
                                         int j1, const HeadQK<S>& qk, S* d_scores, long lds,
                                         const HeadQKGrad<S>&, int task) {
  slot_layer_.store(ctx.layer, std::memory_order_relaxed);
  const int n = i1 - i0, m = j1 - j0;
  thread_local Mat<S> c;
  Resize(c, n, m);
  ConstStridedMap<S> Q(qk.q + static_cast<long>(i0) * qk.ld, n, D_, Eigen::OuterStride<>(qk.ld));
  ConstStridedMap<S> K(qk.k + static_cast<long>(j0) * qk.ld, m, D_, Eigen::OuterStride<>(qk.ld));
  c.noalias() = (Q * K.transpose()) * (S(1) / std::sqrt(S(D_)));
  const double w = w_(ctx.layer, ctx.head), v = v_(ctx.layer, ctx.head), e = std::exp(v);
  double* slot = slots_.data() + static_cast<long>(task) * 2;
  for (int r = 0; r < n; ++r) {
    S* row = d_scores + static_cast<long>(r) * lds;
    for (int s = 0; s < m; ++s) {
      const double g = row[s];
      const double cv = c(r, s);
      if (g == 0 || cv <= 0) {
        row[s] = S(0);
        continue;
      }
      const double d = std::abs(ctx.Distance(i0 + r, j0 + s));
      const double u = std::exp(v - w * d), den = (1 + u) * (1 + u);
      const double f = (1 + e) / (1 + u);
      row[s] = static_cast<S>(g * f);
      slot[0] += g * cv * (1 + e) * u * d / den;
      slot[1] += g * cv * (e * (1 + u) - (1 + e) * u) / den;
    }
  }
}

template <typename S>
void DistanceAware<S>::EndBackward() {
  const int l = slot_layer_.load();
  for (int t = 0; t < tasks_; ++t) {
    d_w_(l, t % H_) += static_cast<S>(slots_[2 * t]);
    d_v_(l, t % H_) += static_cast<S>(slots_[2 * t + 1]);
  }
}

template class DistanceAware<float>;
template class DistanceAware<double>;

}  // namespace lexp
