#include "pe/sandwich.h"

#include <cmath>

namespace lexp {

template <typename S>
Sandwich<S>::Sandwich(const EncodingShape& shape, const SandwichOptions& opt)
    : DistanceBias<S>(shape.n_heads), D_(opt.dim), base_(opt.base) {
  LEXP_INPUT_CHECK(D_ % 2 == 0, "encoding 'sandwich': dim must be an even number >= 0 "
                                "(0 = the head width), got " +
                                    std::to_string(opt.dim));
  if (D_ == 0) D_ = shape.d_model / shape.n_heads;
}

template <typename S>
double Sandwich<S>::Bias(int h, double d) const {
  double sum = 0;
  for (int k = 1; k <= D_ / 2; ++k) sum += std::cos(d * std::pow(base_, -2.0 * k / D_));
  const double head_scale = 8.0 * (h + 1) / this->H_;
  return (sum - D_ / 2) / head_scale;
}

template class Sandwich<float>;
template class Sandwich<double>;

}  // namespace lexp
