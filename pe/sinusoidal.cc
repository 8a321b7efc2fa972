#include "pe/sinusoidal.h"

#include <cmath>

namespace lexp {

void SinusoidalRow(double pos, int C, double base, double* out) {
  for (int k = 0; 2 * k < C; ++k) {
    const double w = std::pow(base, -2.0 * k / C);
    out[2 * k] = std::sin(pos * w);
    if (2 * k + 1 < C) out[2 * k + 1] = std::cos(pos * w);
  }
}

template <typename S>
Sinusoidal<S>::Sinusoidal(const EncodingShape& shape, const SinusoidalOptions& opt)
    : C_(shape.d_model), base_(opt.base), row_(shape.d_model) {}

template <typename S>
void Sinusoidal<S>::AddEmbedding(const std::vector<double>& pos, const std::vector<int>& /*tokens*/,
                                 int B, Mat<S>& x) {
  const int T = static_cast<int>(pos.size());
  for (int t = 0; t < T; ++t) {
    SinusoidalRow(pos[t], C_, base_, row_.data());
    for (int b = 0; b < B; ++b)
      for (int c = 0; c < C_; ++c) x(static_cast<long>(b) * T + t, c) += static_cast<S>(row_[c]);
  }
}

template class Sinusoidal<float>;
template class Sinusoidal<double>;

}  // namespace lexp
