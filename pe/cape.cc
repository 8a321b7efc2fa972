#include "pe/cape.h"

#include <cmath>

#include "nn/check.h"
#include "pe/sinusoidal.h"

namespace lexp {

template <typename S>
Cape<S>::Cape(const EncodingShape& shape, const CapeOptions& opt)
    : C_(shape.d_model),
      global_shift_(opt.max_global_shift),
      local_shift_(opt.max_local_shift),
      global_scaling_(opt.max_global_scaling),
      pos_scale_(opt.pos_scale),
      freq_scale_(opt.freq_scale),
      normalize_(opt.normalize),
      row_(shape.d_model) {}

template <typename S>
void Cape<S>::PositionIds(int T, bool training, Rng& rng, std::vector<double>& pos) const {
  pos.resize(T);
  double mean = 0;
  for (int t = 0; t < T; ++t) {
    pos[t] = pos_scale_ * t;
    mean += pos[t] / T;
  }
  if (normalize_)
    for (double& p : pos) p -= mean;
  if (!training) return;
  const double delta = rng.Uniform(-global_shift_, global_shift_);
  const double log_max = std::log(global_scaling_);
  const double lambda = std::exp(rng.Uniform(-log_max, log_max));
  const double eps = local_shift_ * pos_scale_;
  for (double& p : pos) p = (p + delta + rng.Uniform(-eps, eps)) * lambda;
}

template <typename S>
void Cape<S>::AddEmbedding(const std::vector<double>& pos, const std::vector<int>& /*tokens*/,
                           int B, Mat<S>& x) {
  const int T = static_cast<int>(pos.size());
  for (int t = 0; t < T; ++t) {
    SinusoidalRow(pos[t] * freq_scale_, C_, 10000.0, row_.data());
    for (int b = 0; b < B; ++b)
      for (int c = 0; c < C_; ++c) x(static_cast<long>(b) * T + t, c) += static_cast<S>(row_[c]);
  }
}

template class Cape<float>;
template class Cape<double>;

}  // namespace lexp
