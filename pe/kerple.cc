#include "pe/kerple.h"

#include <algorithm>
#include <cmath>

namespace lexp {

namespace {
constexpr double kMinParam = 0.01;  // reference clamp
constexpr double kMaxPower = 2.0;   // power exponent bound (conditionally positive definite)
}  // namespace

template <typename S>
Kerple<S>::Kerple(Kind kind, const EncodingShape& shape, const NoOptions&)
    : DistanceBias<S>(shape.n_heads), kind_(kind) {
  r_.setConstant(2, shape.n_heads, S(1));
  d_r_.setZero(2, shape.n_heads);
}

template <typename S>
void Kerple<S>::Init(Rng& rng) {
  for (int h = 0; h < this->H_; ++h) {
    const double a = rng.Uniform(), b = rng.Uniform();
    if (kind_ == Kind::kLog)
      SetParams(h, 2 * a, b);
    else
      SetParams(h, a, 2 * b);
  }
  AfterOptimizerStep();
}

template <typename S>
void Kerple<S>::AfterOptimizerStep() {
  for (long i = 0; i < r_.size(); ++i) r_.data()[i] = std::max(r_.data()[i], S(kMinParam));
  if (kind_ == Kind::kPower)
    for (int h = 0; h < this->H_; ++h) r_(1, h) = std::min(r_(1, h), S(kMaxPower));
}

template <typename S>
void Kerple<S>::SetParams(int h, double r1, double r2) {
  r_(0, h) = static_cast<S>(r1);
  r_(1, h) = static_cast<S>(r2);
}

template <typename S>
double Kerple<S>::Bias(int h, double d) const {
  const double r1 = r_(0, h), r2 = r_(1, h);
  if (kind_ == Kind::kLog) return -r1 * std::log1p(r2 * d);
  return d == 0 ? 0.0 : -r1 * std::pow(d, r2);
}

// log:   db/dr1 = -ln(1 + r2 d),  db/dr2 = -r1 d / (1 + r2 d)
// power: db/dr1 = -d^r2,          db/dr2 = -r1 d^r2 ln d  (both 0 at d = 0)
template <typename S>
void Kerple<S>::BiasGrad(int h, double d, double g, double* grad) const {
  const double r1 = r_(0, h), r2 = r_(1, h);
  if (kind_ == Kind::kLog) {
    grad[0] += g * -std::log1p(r2 * d);
    grad[1] += g * -r1 * d / (1 + r2 * d);
  } else if (d > 0) {
    const double p = std::pow(d, r2);
    grad[0] += g * -p;
    grad[1] += g * -r1 * p * std::log(d);
  }
}

template <typename S>
void Kerple<S>::AddGrad(int h, const double* grad) {
  d_r_(0, h) += static_cast<S>(grad[0]);
  d_r_(1, h) += static_cast<S>(grad[1]);
}

template <typename S>
std::vector<ParamRef<S>> Kerple<S>::Parameters() {
  const std::string n = "pe." + Name();
  const long H = this->H_;
  return {{n + ".r1", r_.data(), d_r_.data(), H, {}, "head"},
          {n + ".r2", r_.data() + H, d_r_.data() + H, H, {}, "head"}};
}

template class Kerple<float>;
template class Kerple<double>;

}  // namespace lexp
