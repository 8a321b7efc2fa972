// ReRoPE and Leaky ReRoPE (Su 2023) as RoPE's logit-term site: causal pairs at distance d >= w get
// the logit of a second rotary pass, q_i^T R(d') k_j with d' = ReropeDistance(d) (w, or
// w + (d - w) / k for the leaky rule), and their gradient flows through that pass only.
#include "pe/rope.h"

#include <cmath>

namespace lexp {

// q_i is already rotated to p_i, k_j to p_j. rerope: q2 at position w, k2 at 0 (unrotated), so
// q2.k2 sees distance w. leaky: q2 at p_i/k + w(1 - 1/k), k2 at p_j/k, distance w + (d - w)/k.
template <typename S>
void Rope<S>::ReropeOperands(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                             const HeadQK<S>& qk, Mat<S>& q2, Mat<S>& k2) const {
  const double w = window_;
  const double k = scaling_.rule == "leaky_rerope" ? scaling_.leaky_factor : 0.0;
  const double* pos = ctx.pos;
  const S* q = qk.q + static_cast<long>(i0) * qk.ld;
  const S* k_rows = qk.k + static_cast<long>(j0) * qk.ld;
  if (k > 0) {
    RotateRows(
        q, qk.ld, i0, i1 - i0, [&](int t) { return pos[t] / k + w * (1 - 1 / k) - pos[t]; }, q2);
    RotateRows(
        k_rows, qk.ld, j0, j1 - j0, [&](int t) { return pos[t] / k - pos[t]; }, k2);
  } else {
    RotateRows(
        q, qk.ld, i0, i1 - i0, [&](int t) { return w - pos[t]; }, q2);
    RotateRows(
        k_rows, qk.ld, j0, j1 - j0, [&](int t) { return -pos[t]; }, k2);
  }
}

// Far entries (d = p_i - p_j >= w) become scale_i q2_i.k2_j / sqrt(D); near ones keep the plain
// rotary logit.
template <typename S>
void Rope<S>::ReropeForward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                            const HeadQK<S>& qk, S* scores, long lds) const {
  const double* pos = ctx.pos;
  if (pos[i1 - 1] - pos[j0] < window_) return;  // no far pair in this block
  thread_local Mat<S> q2, k2, s2;
  ReropeOperands(ctx, i0, i1, j0, j1, qk, q2, k2);
  s2.noalias() = q2 * k2.transpose();
  const S inv = S(1) / std::sqrt(S(D_));
  for (int i = i0; i < i1; ++i) {
    const S scale = LogitScale(ctx, i) * inv;
    S* row = scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j)
      if (pos[i] - pos[j] >= window_) row[j - j0] = scale * s2(i - i0, j - j0);
  }
}

// Far entries: g = d_a_ij scale_i / sqrt(D) goes to d_q2_i += g k2_j and d_k2_j += g q2_i, which
// are rotated back onto the rotated q and k; d_a_ij is then zeroed so the plain product gets none
// of it.
template <typename S>
void Rope<S>::ReropeBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                             const HeadQK<S>& qk, S* d_scores, long lds,
                             const HeadQKGrad<S>& grad) const {
  const double* pos = ctx.pos;
  if (pos[i1 - 1] - pos[j0] < window_) return;
  const int n = i1 - i0, m = j1 - j0;
  thread_local Mat<S> q2, k2, g, dq2, dk2, back;
  ReropeOperands(ctx, i0, i1, j0, j1, qk, q2, k2);
  Resize(g, n, m);
  const S inv = S(1) / std::sqrt(S(D_));
  for (int i = i0; i < i1; ++i) {
    const S scale = LogitScale(ctx, i) * inv;
    S* row = d_scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j) {
      const bool far = pos[i] - pos[j] >= window_;
      g(i - i0, j - j0) = far ? row[j - j0] * scale : S(0);
      if (far) row[j - j0] = S(0);
    }
  }
  dq2.noalias() = g * k2;
  dk2.noalias() = g.transpose() * q2;
  // Rotating back is rotating by minus the offset.
  const double w = window_;
  const double k = scaling_.rule == "leaky_rerope" ? scaling_.leaky_factor : 0.0;
  auto q_off = [&](int t) { return k > 0 ? pos[t] / k + w * (1 - 1 / k) - pos[t] : w - pos[t]; };
  auto k_off = [&](int t) { return k > 0 ? pos[t] / k - pos[t] : -pos[t]; };
  RotateRows(
      dq2.data(), D_, i0, n, [&](int t) { return -q_off(t); }, back);
  for (int r = 0; r < n; ++r)
    Eigen::Map<RowVec<S>>(grad.d_q + static_cast<long>(i0 + r) * grad.ld, D_) += back.row(r);
  RotateRows(
      dk2.data(), D_, j0, m, [&](int t) { return -k_off(t); }, back);
  for (int r = 0; r < m; ++r)
    Eigen::Map<RowVec<S>>(grad.d_k + static_cast<long>(j0 + r) * grad.ld, D_) += back.row(r);
}

template void Rope<float>::ReropeOperands(const AttentionContext&, int, int, int, int,
                                          const HeadQK<float>&, Mat<float>&, Mat<float>&) const;
template void Rope<double>::ReropeOperands(const AttentionContext&, int, int, int, int,
                                           const HeadQK<double>&, Mat<double>&, Mat<double>&) const;
template void Rope<float>::ReropeForward(const AttentionContext&, int, int, int, int,
                                         const HeadQK<float>&, float*, long) const;
template void Rope<double>::ReropeForward(const AttentionContext&, int, int, int, int,
                                          const HeadQK<double>&, double*, long) const;
template void Rope<float>::ReropeBackward(const AttentionContext&, int, int, int, int,
                                          const HeadQK<float>&, float*, long,
                                          const HeadQKGrad<float>&) const;
template void Rope<double>::ReropeBackward(const AttentionContext&, int, int, int, int,
                                           const HeadQK<double>&, double*, long,
                                           const HeadQKGrad<double>&) const;

}  // namespace lexp
