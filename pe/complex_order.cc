#include "pe/complex_order.h"

#include <cmath>

#include "nn/check.h"

namespace lexp {

template <typename S>
ComplexOrder<S>::ComplexOrder(const EncodingShape& shape, const NoOptions&)
    : C_(shape.d_model), half_(shape.d_model / 2) {
  LEXP_INPUT_CHECK(C_ % 2 == 0,
                   "encoding 'complex_order': d_model must be even ([Re | Im] halves)");
  LEXP_INPUT_CHECK(shape.vocab > 0, "encoding 'complex_order' needs the vocabulary size");
  omega_.setZero(shape.vocab, half_);
  d_omega_.setZero(shape.vocab, half_);
}

template <typename S>
void ComplexOrder<S>::Init(Rng&) {
  for (int c = 0; c < half_; ++c)
    omega_.col(c).setConstant(static_cast<S>(std::pow(10000.0, -2.0 * c / C_)));
}

template <typename S>
std::vector<ParamRef<S>> ComplexOrder<S>::Parameters() {
  return {{"pe.complex_order.omega", omega_, d_omega_, "token,frequency"}};
}

// (r, phi) -> (r cos theta, r sin theta), theta = omega_{w,c} p + phi.
template <typename S>
void ComplexOrder<S>::AddEmbedding(const std::vector<double>& pos, const std::vector<int>& tokens,
                                   int B, Mat<S>& x) {
  const int T = static_cast<int>(pos.size());
  LEXP_CHECK(static_cast<long>(tokens.size()) == static_cast<long>(B) * T,
             "complex_order: token ids do not match the batch");
  x_in_ = x;
  for (long n = 0; n < x.rows(); ++n) {
    const int w = tokens[n];
    const double p = pos[n % T];
    for (int c = 0; c < half_; ++c) {
      const double r = x(n, c), theta = omega_(w, c) * p + x(n, half_ + c);
      x(n, c) = static_cast<S>(r * std::cos(theta));
      x(n, half_ + c) = static_cast<S>(r * std::sin(theta));
    }
  }
}

// d_r = d_re cos theta + d_im sin theta;  d_theta = r (d_im cos theta - d_re sin theta);
// d_phi = d_theta;  d_omega_{w,c} += d_theta p  (rows in order: deterministic).
template <typename S>
void ComplexOrder<S>::EmbeddingBackward(const std::vector<double>& pos,
                                        const std::vector<int>& tokens, int B, Mat<S>& d_x) {
  const int T = static_cast<int>(pos.size());
  LEXP_CHECK(x_in_.rows() == static_cast<long>(B) * T, "complex_order: backward without forward");
  for (long n = 0; n < d_x.rows(); ++n) {
    const int w = tokens[n];
    const double p = pos[n % T];
    for (int c = 0; c < half_; ++c) {
      const double r = x_in_(n, c), theta = omega_(w, c) * p + x_in_(n, half_ + c);
      const double cs = std::cos(theta), sn = std::sin(theta);
      const double d_re = d_x(n, c), d_im = d_x(n, half_ + c);
      const double d_theta = r * (d_im * cs - d_re * sn);
      d_x(n, c) = static_cast<S>(d_re * cs + d_im * sn);
      d_x(n, half_ + c) = static_cast<S>(d_theta);
      d_omega_(w, c) += static_cast<S>(d_theta * p);
    }
  }
}

template class ComplexOrder<float>;
template class ComplexOrder<double>;

}  // namespace lexp
