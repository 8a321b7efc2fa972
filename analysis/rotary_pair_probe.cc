#include "analysis/rotary_pair_probe.h"

#include <cmath>
#include <limits>

#include "nn/check.h"

namespace lexp {

template <typename S>
RotaryPairProbe<S>::RotaryPairProbe(std::unique_ptr<PositionEncoding<S>> inner, int layers,
                                    int heads, int pairs, bool interleaved, double split)
    : ForwardingEncoding<S>(std::move(inner)),
      L_(layers),
      H_(heads),
      P_(pairs),
      interleaved_(interleaved),
      split_(split) {
  const size_t lhp = static_cast<size_t>(L_) * H_ * P_, lh = static_cast<size_t>(L_) * H_;
  near_sum_.assign(lhp, 0.0);
  far_sum_.assign(lhp, 0.0);
  near_n_.assign(lh, 0.0);
  far_n_.assign(lh, 0.0);
  const double lowest = -std::numeric_limits<double>::infinity();
  seq_sup_.assign(lh, lowest);
  seq_obs_.assign(lh, lowest);
  sup_total_.assign(lh, 0.0);
  obs_total_.assign(lh, 0.0);
}

template <typename S>
void RotaryPairProbe<S>::AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                                      const HeadQK<S>& qk, S* scores, long lds) const {
  const size_t lh = static_cast<size_t>(ctx.layer) * H_ + ctx.head;
  const int stride = interleaved_ ? 2 : 1, second = interleaved_ ? 1 : P_;
  const bool scaled = this->inner().Uses(kSiteLogitScale);
  const double inv_sqrt_d = 1.0 / std::sqrt(static_cast<double>(ctx.head_dim));
  for (int i = i0; i < i1; ++i) {
    const double scale = inv_sqrt_d * (scaled ? this->inner().LogitScale(ctx, i) : 1.0);
    const S* q = qk.q + static_cast<long>(i) * qk.ld;
    int b = 0, e = 0;
    ctx.pattern->KeyBounds(i, ctx.T, &b, &e);
    for (int j = std::max(b, j0); j < std::min(e, j1); ++j) {
      if (!ctx.pattern->Contiguous() && !ctx.pattern->Visible(i, j, ctx.T)) continue;
      const S* k = qk.k + static_cast<long>(j) * qk.ld;
      const bool far = std::abs(ctx.Distance(i, j)) >= split_;
      double* sum = (far ? far_sum_ : near_sum_).data() + lh * P_;
      // Dimensions past the rotated ones (rope_partial) add q.k unchanged at every distance.
      double sup = 0;
      for (int m = 2 * P_; m < ctx.head_dim; ++m) sup += scale * q[m] * k[m];
      for (int m = 0; m < P_; ++m) {
        const double qa = q[m * stride], qb = q[m * stride + second];
        const double ka = k[m * stride], kb = k[m * stride + second];
        sum[m] += std::abs(scale * (qa * ka + qb * kb));
        sup += scale * std::hypot(qa, qb) * std::hypot(ka, kb);
      }
      (far ? far_n_ : near_n_)[lh] += 1;
      seq_sup_[lh] = std::max(seq_sup_[lh], sup);
      seq_obs_[lh] = std::max(seq_obs_[lh], static_cast<double>(scores[(i - i0) * lds + (j - j0)]));
    }
  }
  this->inner().AddLogitTerm(ctx, i0, i1, j0, j1, qk, scores, lds);
}

template <typename S>
void RotaryPairProbe<S>::EndSequence() {
  const double lowest = -std::numeric_limits<double>::infinity();
  for (size_t lh = 0; lh < sup_total_.size(); ++lh) {
    LEXP_CHECK(seq_sup_[lh] > lowest, "rotary pair probe: a head saw no visible key");
    sup_total_[lh] += seq_sup_[lh];
    obs_total_[lh] += seq_obs_[lh];
    seq_sup_[lh] = seq_obs_[lh] = lowest;
  }
  ++sequences_;
}

template <typename S>
RotaryPairStats RotaryPairProbe<S>::Stats() const {
  RotaryPairStats st;
  st.layers = L_;
  st.heads = H_;
  st.pairs = P_;
  st.sequences = sequences_;
  st.near_count = near_n_;
  st.far_count = far_n_;
  st.near_abs = near_sum_;
  st.far_abs = far_sum_;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (size_t lh = 0; lh < near_n_.size(); ++lh)
    for (int m = 0; m < P_; ++m) {
      double& a = st.near_abs[lh * P_ + m];
      double& f = st.far_abs[lh * P_ + m];
      a = near_n_[lh] > 0 ? a / near_n_[lh] : nan;
      f = far_n_[lh] > 0 ? f / far_n_[lh] : nan;
    }
  st.supremum = sup_total_;
  st.observed = obs_total_;
  for (size_t lh = 0; lh < sup_total_.size(); ++lh) {
    st.supremum[lh] = sequences_ ? sup_total_[lh] / sequences_ : nan;
    st.observed[lh] = sequences_ ? obs_total_[lh] / sequences_ : nan;
  }
  return st;
}

template class RotaryPairProbe<float>;
template class RotaryPairProbe<double>;

}  // namespace lexp
