// KERPLE: kernelized relative positional bias from a conditionally positive-definite kernel of the
// distance, learnable per head (Chi, Fan, Ramadge & Rudnicky 2022, arXiv:2205.09921; reference code
// chijames/KERPLE):
//   kerple_log:   b_h(d) = -r1_h ln(1 + r2_h d),   r1 ~ U(0, 2), r2 ~ U(0, 1)
//   kerple_power: b_h(d) = -r1_h d^r2_h,           r1 ~ U(0, 1), r2 ~ U(0, 2), r2 <= 2
// Both parameters are clamped to >= 0.01 after every optimizer step, as the reference code does.
#pragma once

#include "pe/distance_bias.h"
#include "pe/options.h"

namespace lexp {

template <typename S>
class Kerple final : public DistanceBias<S> {
 public:
  enum class Kind { kLog, kPower };
  Kerple(Kind kind, const EncodingShape& shape, const NoOptions& opt);
  std::string Name() const override { return kind_ == Kind::kLog ? "kerple_log" : "kerple_power"; }
  void Init(Rng& rng) override;
  void AfterOptimizerStep() override;
  std::vector<ParamRef<S>> Parameters() override;
  double Bias(int h, double d) const override;
  // For tests: set r1, r2 of head h.
  void SetParams(int h, double r1, double r2);

 protected:
  int ParamsPerHead() const override { return 2; }
  void BiasGrad(int h, double d, double g, double* grad) const override;
  void AddGrad(int h, const double* grad) override;

 private:
  Kind kind_;
  Mat<S> r_, d_r_;  // [2, H]: row 0 = r1, row 1 = r2
};

}  // namespace lexp
