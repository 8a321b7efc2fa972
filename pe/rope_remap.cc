// Keys that a pattern (LM-Infinite's Lambda mask, StreamingLLM's sinks) shows at another distance
// than p_i - p_j: RoPE recomputes their logit with the rotation at that distance (under ReRoPE,
// the distance ReRoPE maps it to), one key at a time, as its logit-term site.
#include <algorithm>
#include <cmath>

#include "pe/rope.h"

namespace lexp {

template <typename S>
double Rope<S>::TargetDistance(double d) const {
  if (!IsReropeRule(scaling_.rule)) return d;
  return ReropeDistance(d, window_, scaling_.rule == "leaky_rerope" ? scaling_.leaky_factor : 0.0);
}

// Calls f(i, j, delta) for every visible key whose target distance differs from p_i - p_j by delta.
template <typename S>
template <typename F>
void Rope<S>::ForEachRemapped(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                              F f) const {
  const AttentionPattern& pat = *ctx.pattern;
  LEXP_INPUT_CHECK(scaling_.start_tokens == 0,
                   "encoding '" + name_ + "': longrope's start_tokens rotate the first positions "
                   "by other frequencies, so a logit is not a function of the distance alone and "
                   "a pattern that shows keys at another distance cannot apply (use "
                   "start_tokens = 0 with pattern '" + pat.Name() + "')");
  const bool rerope = IsReropeRule(scaling_.rule);  // once, not per key
  for (int i = i0; i < i1; ++i) {
    int b, e;
    pat.KeyBounds(i, ctx.T, &b, &e);
    for (int j = std::max(b, j0); j < std::min(e, j1); ++j) {
      if (!pat.Contiguous() && !pat.Visible(i, j, ctx.T)) continue;
      const double plain = ctx.pos[i] - ctx.pos[j];
      const double eff = pat.EffectiveDistance(i, j, ctx.pos);
      if (eff == plain) continue;
      f(i, j, (rerope ? TargetDistance(eff) : eff) - plain);
    }
  }
}

// a_ij = scale_i (R(delta) q_i).k_j / sqrt(D) with the rotated q_i, k_j: the rotation at the target
// distance, one key at a time (patterns remap few keys: LM-Infinite's globals, StreamingLLM's
// sinks).
template <typename S>
void Rope<S>::RemapForward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                           const HeadQK<S>& qk, S* scores, long lds) const {
  thread_local Mat<S> qd;
  const S inv = S(1) / std::sqrt(S(D_));
  // Keys come query by query, and neighbours often share their delta (a landmark block's keys):
  // q_i is rotated again only when (i, delta) changes.
  int last_i = -1;
  double last_delta = 0;
  ForEachRemapped(ctx, i0, i1, j0, j1, [&](int i, int j, double delta) {
    if (i != last_i || delta != last_delta)
      RotateRows(
          qk.q + static_cast<long>(i) * qk.ld, qk.ld, 0, 1, [&](int) { return delta; }, qd);
    last_i = i;
    last_delta = delta;
    const S dot =
        Eigen::Map<const RowVec<S>>(qk.k + static_cast<long>(j) * qk.ld, D_).dot(qd.row(0));
    scores[static_cast<long>(i - i0) * lds + (j - j0)] = LogitScale(ctx, i) * inv * dot;
  });
}

// g = d_a_ij scale_i / sqrt(D):  d_q_i += R(-delta) (g k_j);  d_k_j += g R(delta) q_i;  d_a_ij = 0.
template <typename S>
void Rope<S>::RemapBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                            const HeadQK<S>& qk, S* d_scores, long lds,
                            const HeadQKGrad<S>& grad) const {
  thread_local Mat<S> qd, back;
  thread_local RowVec<S> gk;
  const S inv = S(1) / std::sqrt(S(D_));
  ForEachRemapped(ctx, i0, i1, j0, j1, [&](int i, int j, double delta) {
    S& d = d_scores[static_cast<long>(i - i0) * lds + (j - j0)];
    const S g = d * LogitScale(ctx, i) * inv;
    d = S(0);
    if (g == S(0)) return;
    RotateRows(
        qk.q + static_cast<long>(i) * qk.ld, qk.ld, 0, 1, [&](int) { return delta; }, qd);
    Eigen::Map<RowVec<S>>(grad.d_k + static_cast<long>(j) * grad.ld, D_) += g * qd.row(0);
    gk = g * Eigen::Map<const RowVec<S>>(qk.k + static_cast<long>(j) * qk.ld, D_);
    RotateRows(
        gk.data(), D_, 0, 1, [&](int) { return -delta; }, back);
    Eigen::Map<RowVec<S>>(grad.d_q + static_cast<long>(i) * grad.ld, D_) += back.row(0);
  });
}

template double Rope<float>::TargetDistance(double) const;
template double Rope<double>::TargetDistance(double) const;
template void Rope<float>::RemapForward(const AttentionContext&, int, int, int, int,
                                        const HeadQK<float>&, float*, long) const;
template void Rope<double>::RemapForward(const AttentionContext&, int, int, int, int,
                                         const HeadQK<double>&, double*, long) const;
template void Rope<float>::RemapBackward(const AttentionContext&, int, int, int, int,
                                         const HeadQK<float>&, float*, long,
                                         const HeadQKGrad<float>&) const;
template void Rope<double>::RemapBackward(const AttentionContext&, int, int, int, int,
                                          const HeadQK<double>&, double*, long,
                                          const HeadQKGrad<double>&) const;

}  // namespace lexp
