#include "pe/rope.h"

#include <cmath>

namespace lexp {

std::vector<double> RopeInverseFrequencies(int D, double base) {
  std::vector<double> f(D / 2);
  for (int k = 0; k < D / 2; ++k) f[k] = std::pow(base, -2.0 * k / D);
  return f;
}

template <typename S>
Rope<S>::Rope(const EncodingShape& shape, const EncodingOptions& opt)
    : D_(shape.d_model / shape.n_heads),
      interleaved_(opt.String("pairing", {"half", "interleaved"}) == "interleaved") {
  const double base = opt.Double("base");
  LEXP_INPUT_CHECK(base > 1, "encoding 'rope': base must be > 1");
  LEXP_INPUT_CHECK(D_ % 2 == 0, "encoding 'rope': the head dimension must be even");
  inv_freq_ = RopeInverseFrequencies(D_, base);
}

template <typename S>
void Rope<S>::Prepare(const std::vector<double>& pos) {
  if (pos == prepared_pos_) return;
  const int T = static_cast<int>(pos.size()), P = D_ / 2;
  cos_.resize(T, P);
  sin_.resize(T, P);
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < P; ++k) {
      const double a = pos[t] * inv_freq_[k];
      cos_(t, k) = static_cast<S>(std::cos(a));
      sin_(t, k) = static_cast<S>(std::sin(a));
    }
  prepared_pos_ = pos;
}

// x0' = x0 cos - sign * x1 sin;  x1' = sign * x0 sin + x1 cos.  sign = -1 applies the transpose.
template <typename S>
void Rope<S>::Rotate(S* x, long ld, int T, S sign) const {
  const int P = D_ / 2;
  const int stride = interleaved_ ? 2 : 1;
  const int second = interleaved_ ? 1 : P;
  for (int t = 0; t < T; ++t) {
    S* r = x + static_cast<long>(t) * ld;
    const S* c = cos_.data() + static_cast<long>(t) * P;
    const S* s = sin_.data() + static_cast<long>(t) * P;
    for (int k = 0; k < P; ++k) {
      S& a = r[k * stride];
      S& b = r[k * stride + second];
      const S x0 = a, x1 = b, sn = sign * s[k];
      a = x0 * c[k] - x1 * sn;
      b = x0 * sn + x1 * c[k];
    }
  }
}

template <typename S>
void Rope<S>::TransformQK(const AttentionContext& ctx, bool, S* x, long ld) const {
  LEXP_DCHECK(cos_.rows() == ctx.T, "rope: Prepare() was not called for this length");
  Rotate(x, ld, ctx.T, S(1));
}

// Forward: y = R(pos) x.  Backward: d_x = R(pos)^T d_y = R(-pos) d_y.
template <typename S>
void Rope<S>::TransformQKBackward(const AttentionContext& ctx, bool, S* d_x, long ld) const {
  Rotate(d_x, ld, ctx.T, S(-1));
}

template class Rope<float>;
template class Rope<double>;

}  // namespace lexp
