#include "pe/xpos.h"

#include <cmath>

#include "nn/check.h"
#include "pe/rope.h"

namespace lexp {

std::vector<double> XposZeta(int D, double gamma) {
  std::vector<double> z(D / 2);
  for (int k = 0; k < D / 2; ++k) z[k] = (2.0 * k + gamma * D) / ((1 + gamma) * D);
  return z;
}

template <typename S>
XPos<S>::XPos(const EncodingShape& shape, const XPosOptions& opt)
    : D_(shape.d_model / shape.n_heads),
      interleaved_(opt.pairing == "interleaved"),
      scale_base_(opt.scale_base) {
  const double base = opt.base, gamma = opt.gamma;
  LEXP_INPUT_CHECK(shape.causal,
                   "encoding 'xpos' is defined for causal attention (model.layout = \"decoder\"): "
                   "in the encoder layout keys ahead of the query would be amplified by "
                   "zeta^(-(n-m)/B) > 1");
  if (scale_base_ == 0) {
    LEXP_INPUT_CHECK(shape.train_length > 0,
                     "encoding 'xpos': scale_base = 0 needs the training length; give scale_base");
    scale_base_ = shape.train_length / 2.0;
  }
  LEXP_INPUT_CHECK(D_ % 2 == 0, "encoding 'xpos': the head dimension must be even");
  inv_freq_ = RopeInverseFrequencies(D_, base);
  zeta_ = XposZeta(D_, gamma);
}

template <typename S>
void XPos<S>::Prepare(const std::vector<double>& pos, double /*max_distance*/) {
  if (pos == prepared_pos_) return;
  const int T = static_cast<int>(pos.size()), P = D_ / 2;
  const double centre = T > 0 ? pos[T / 2] : 0.0;
  cq_.resize(T, P);
  sq_.resize(T, P);
  ck_.resize(T, P);
  sk_.resize(T, P);
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < P; ++k) {
      const double a = pos[t] * inv_freq_[k];
      const double scale = std::pow(zeta_[k], (pos[t] - centre) / scale_base_);
      cq_(t, k) = static_cast<S>(std::cos(a) * scale);
      sq_(t, k) = static_cast<S>(std::sin(a) * scale);
      ck_(t, k) = static_cast<S>(std::cos(a) / scale);
      sk_(t, k) = static_cast<S>(std::sin(a) / scale);
    }
  prepared_pos_ = pos;
}

template <typename S>
void XPos<S>::TransformQK(const AttentionContext& ctx, bool is_query, S* x, long ld) const {
  const Mat<S>& c = is_query ? cq_ : ck_;
  const Mat<S>& s = is_query ? sq_ : sk_;
  const long r0 = ctx.first_row;
  RotatePairs(x + r0 * ld, ld, ctx.T - ctx.first_row, D_ / 2, interleaved_,
              c.data() + r0 * c.cols(), s.data() + r0 * s.cols(), S(1));
}

// Forward: y = z R(p) x (z the per-pair scale).  Backward: d_x = z R(p)^T d_y.
template <typename S>
void XPos<S>::TransformQKBackward(const AttentionContext& ctx, bool is_query, S* d_x,
                                  long ld) const {
  const Mat<S>& c = is_query ? cq_ : ck_;
  const Mat<S>& s = is_query ? sq_ : sk_;
  RotatePairs(d_x, ld, ctx.T, D_ / 2, interleaved_, c.data(), s.data(), S(-1));
}

template class XPos<float>;
template class XPos<double>;

}  // namespace lexp
