#include "pe/floater.h"

#include <cmath>

#include "nn/check.h"

namespace lexp {

template <typename S>
Floater<S>::Floater(const EncodingShape& shape, const FloaterOptions& opt)
    : C_(shape.d_model), hidden_(opt.hidden), steps_(opt.steps) {
  LEXP_INPUT_CHECK(C_ % 2 == 0, "encoding 'floater': d_model must be even");
  for (int k = 0; 2 * k < C_; ++k) freq_.push_back(std::pow(10000.0, -2.0 * k / C_));
  w1_.setZero(C_, hidden_);
  d_w1_.setZero(C_, hidden_);
  w2_.setZero(hidden_, C_);
  d_w2_.setZero(hidden_, C_);
  b1_.setZero(hidden_);
  d_b1_.setZero(hidden_);
  b2_.setZero(C_);
  d_b2_.setZero(C_);
}

template <typename S>
void Floater<S>::Init(Rng& rng) {
  const double sd = 1.0 / std::sqrt(static_cast<double>(C_));
  for (long i = 0; i < w1_.size(); ++i) w1_.data()[i] = static_cast<S>(sd * rng.Normal());
  b1_.setZero();
  w2_.setZero();  // p(t) starts as the sinusoid
  b2_.setZero();
}

template <typename S>
std::vector<ParamRef<S>> Floater<S>::Parameters() {
  return {{"pe.floater.w1", w1_, d_w1_, "in,out"},
          {"pe.floater.b1", b1_, d_b1_, "out"},
          {"pe.floater.w2", w2_, d_w2_, "in,out"},
          {"pe.floater.b2", b2_, d_b2_, "out"}};
}

// h(y) = y Omega + tanh(y W1 + b1) W2 + b2, with (y Omega)_{2k} = w_k y_{2k+1},
// (y Omega)_{2k+1} = -w_k y_{2k}.
template <typename S>
Eigen::RowVectorXd Floater<S>::Field(const RowD& y, RowD* act) const {
  *act = ((y * w1d_) + b1d_).array().tanh().matrix();
  RowD f = (*act) * w2d_ + b2d_;
  for (int k = 0; 2 * k < C_; ++k) {
    f[2 * k] += freq_[k] * y[2 * k + 1];
    f[2 * k + 1] -= freq_[k] * y[2 * k];
  }
  return f;
}

// dy += g Omega^T + ((g W2^T) (1 - act^2)) W1^T;  dW2 += act^T g;  db2 += g;
// dz = (g W2^T)(1 - act^2);  dW1 += y^T dz;  db1 += dz.
template <typename S>
void Floater<S>::FieldBackward(const RowD& y, const RowD& act, const RowD& g, RowD& dy) {
  for (int k = 0; 2 * k < C_; ++k) {
    dy[2 * k] -= freq_[k] * g[2 * k + 1];
    dy[2 * k + 1] += freq_[k] * g[2 * k];
  }
  const RowD dz = ((g * w2d_.transpose()).array() * (1 - act.array().square())).matrix();
  dy += dz * w1d_.transpose();
  gw2_.noalias() += act.transpose() * g;
  gb2_ += g;
  gw1_.noalias() += y.transpose() * dz;
  gb1_ += dz;
}

template <typename S>
void Floater<S>::Prepare(const std::vector<double>& pos, double /*max_distance*/) {
  long top = 0;
  for (double p : pos) {
    const long i = std::lround(p);
    LEXP_INPUT_CHECK(
        i >= 0 && static_cast<double>(i) == p,
        "encoding 'floater' needs integer position ids >= 0, got " + std::to_string(p));
    top = std::max(top, i);
  }
  w1d_ = w1_.template cast<double>();
  w2d_ = w2_.template cast<double>();
  b1d_ = b1_.template cast<double>();
  b2d_ = b2_.template cast<double>();
  max_pos_ = top;
  const long n = top * steps_;
  states_.resize(n + 1, C_);
  RowD y = RowD::Zero(C_);
  for (int k = 0; 2 * k + 1 < C_; ++k) y[2 * k + 1] = 1;  // sin 0, cos 0
  states_.row(0) = y;
  const double h = 1.0 / steps_;
  RowD a;
  for (long s = 0; s < n; ++s) {
    const RowD k1 = Field(y, &a);
    const RowD k2 = Field(y + 0.5 * h * k1, &a);
    const RowD k3 = Field(y + 0.5 * h * k2, &a);
    const RowD k4 = Field(y + h * k3, &a);
    y += h / 6 * (k1 + 2 * k2 + 2 * k3 + k4);
    states_.row(s + 1) = y;
  }
}

template <typename S>
Eigen::RowVectorXd Floater<S>::At(long position) const {
  LEXP_CHECK(position >= 0 && position <= max_pos_, "floater: position outside the last solve");
  return states_.row(position * steps_);
}

template <typename S>
void Floater<S>::AddEmbedding(const std::vector<double>& pos, const std::vector<int>& /*tokens*/,
                              int B, Mat<S>& x) {
  const int T = static_cast<int>(pos.size());
  for (int t = 0; t < T; ++t) {
    const RowVec<S> e = states_.row(std::lround(pos[t]) * steps_).template cast<S>();
    for (int b = 0; b < B; ++b) x.row(static_cast<long>(b) * T + t) += e;
  }
}

// Backward through the discrete solve. The adjoint a of the state is swept from the last substep to
// the first; at every integer position i it receives dL/dp(i) = sum_b d_x[b, t] over t with pos_t =
// i. One RK4 step y' = y + h/6 (k1 + 2 k2 + 2 k3 + k4) with k1 = h(y), k2 = h(y + h/2 k1), k3 = h(y
// + h/2 k2), k4 = h(y + h k3) sends a' back as
//   dk4 = h/6 a';  g4 = J(y + h k3)^T dk4;  dk3 = h/3 a' + h g4;  g3 = J(y + h/2 k2)^T dk3;
//   dk2 = h/3 a' + h/2 g3;  g2 = J(y + h/2 k1)^T dk2;  dk1 = h/6 a' + h/2 g2;  g1 = J(y)^T dk1;
//   a = a' + g1 + g2 + g3 + g4.
template <typename S>
void Floater<S>::EmbeddingBackward(const std::vector<double>& pos,
                                   const std::vector<int>& /*tokens*/, int B, Mat<S>& d_x) {
  const int T = static_cast<int>(pos.size());
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> G =
      Eigen::MatrixXd::Zero(max_pos_ + 1, C_);
  for (int t = 0; t < T; ++t)
    for (int b = 0; b < B; ++b)
      G.row(std::lround(pos[t])) += d_x.row(static_cast<long>(b) * T + t).template cast<double>();
  gw1_.setZero(C_, hidden_);
  gw2_.setZero(hidden_, C_);
  gb1_.setZero(hidden_);
  gb2_.setZero(C_);
  const double h = 1.0 / steps_;
  RowD a = RowD::Zero(C_), a1, a2, a3, a4;
  for (long s = max_pos_ * steps_ - 1; s >= 0; --s) {
    if ((s + 1) % steps_ == 0) a += G.row((s + 1) / steps_);
    const RowD y = states_.row(s);
    const RowD k1 = Field(y, &a1);
    const RowD y2 = y + 0.5 * h * k1;
    const RowD k2 = Field(y2, &a2);
    const RowD y3 = y + 0.5 * h * k2;
    const RowD k3 = Field(y3, &a3);
    const RowD y4 = y + h * k3;
    Field(y4, &a4);
    RowD g4 = RowD::Zero(C_), g3 = RowD::Zero(C_), g2 = RowD::Zero(C_), g1 = RowD::Zero(C_);
    FieldBackward(y4, a4, h / 6 * a, g4);
    FieldBackward(y3, a3, h / 3 * a + h * g4, g3);
    FieldBackward(y2, a2, h / 3 * a + 0.5 * h * g3, g2);
    FieldBackward(y, a1, h / 6 * a + 0.5 * h * g2, g1);
    a += g1 + g2 + g3 + g4;
  }
  d_w1_ += gw1_.cast<S>();
  d_w2_ += gw2_.cast<S>();
  d_b1_ += gb1_.cast<S>();
  d_b2_ += gb2_.cast<S>();
}

template class Floater<float>;
template class Floater<double>;

}  // namespace lexp
