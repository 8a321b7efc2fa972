// Finite-difference gradient checks in double. A check perturbs individual parameter elements by
// +-h, takes the central difference of the scalar loss and compares it to the analytic gradient.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "nn/position_hooks.h"
#include "nn/rng.h"

namespace lexp::testing {

// Central differences with h = 1e-6 have truncation error ~h^2 and rounding error ~1e-16/h, so in
// double a relative error of 1e-5 separates a correct gradient from a wrong one by orders of magnitude.
inline constexpr double kFiniteDifferenceStep = 1e-6;
inline constexpr double kGradRelTolerance = 1e-5;
inline constexpr double kGradAbsTolerance = 1e-8;

struct GradCheckResult {
  int checked = 0;
  double worst = 0;
  std::string worst_name;
};

// loss(): evaluates the loss at the current parameter values (no gradient side effects).
// analytic: gradients already computed at the unperturbed point, aligned with params.
inline GradCheckResult CheckGradients(const std::function<double()>& loss,
                                      const std::vector<ParamRef<double>>& params,
                                      const std::vector<std::vector<double>>& analytic,
                                      int max_per_tensor, uint64_t seed = 7) {
  Rng rng(seed);
  GradCheckResult r;
  for (size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    const int n = static_cast<int>(std::min<long>(p.size, max_per_tensor));
    for (int c = 0; c < n; ++c) {
      const long i = p.size <= max_per_tensor ? c : rng.UniformInt(0, p.size - 1);
      const double saved = p.value[i];
      p.value[i] = saved + kFiniteDifferenceStep;
      const double lp = loss();
      p.value[i] = saved - kFiniteDifferenceStep;
      const double lm = loss();
      p.value[i] = saved;
      const double numeric = (lp - lm) / (2 * kFiniteDifferenceStep);
      const double a = analytic[k][i];
      const double err = std::abs(numeric - a) / std::max(1.0, std::abs(numeric) + std::abs(a));
      EXPECT_NEAR(a, numeric, kGradAbsTolerance + kGradRelTolerance * std::max(1.0, std::abs(numeric)))
          << p.name << "[" << i << "]";
      if (err > r.worst) {
        r.worst = err;
        r.worst_name = p.name;
      }
      ++r.checked;
    }
  }
  return r;
}

inline std::vector<std::vector<double>> CopyGrads(const std::vector<ParamRef<double>>& params) {
  std::vector<std::vector<double>> g;
  for (const auto& p : params) g.emplace_back(p.grad, p.grad + p.size);
  return g;
}

template <typename M>
void FillNormal(M& m, Rng& rng, double scale = 1.0) {
  for (long i = 0; i < m.size(); ++i) m.data()[i] = scale * rng.Normal();
}

}  // namespace lexp::testing
