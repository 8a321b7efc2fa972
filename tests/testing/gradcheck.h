// Finite-difference gradient checks in double. A check perturbs individual parameter elements by
// +-h, takes the central difference of the scalar loss and compares it to the analytic gradient
// (relative tolerance with a rounding floor), then checks each tensor as a whole: the directional
// derivative along a random direction and the cosine of the two gradients.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "nn/position_hooks.h"
#include "nn/rng.h"

namespace lexp::testing {

// Central differences with h = 1e-6: the truncation error is ~h^2 |f'''| ~ 1e-12 and the rounding
// error ~eps |L| / h ~ 1e-10 for losses of order one, whatever the size of the gradient. So an
// element passes when |analytic - numeric| <= 1e-8 + 1e-6 max(|analytic|, |numeric|): relative
// for every gradient above ~1e-2, and a floor two orders above the rounding noise below it.
inline constexpr double kFiniteDifferenceStep = 1e-6;
inline constexpr double kGradRelTolerance = 1e-6;
inline constexpr double kGradAbsTolerance = 1e-8;
// Tensors up to this size are checked element by element; larger ones on `max_per_tensor` sampled
// elements plus the whole-tensor checks below.
inline constexpr long kCheckEveryElementUpTo = 64;
// Whole tensor: the directional derivative along a random direction (every element at once) and
// the cosine between the analytic and numeric gradients over the checked elements.
inline constexpr double kDirectionalRelTolerance = 1e-6;
inline constexpr double kCosineTolerance = 1e-9;

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
  auto central = [&](double* x, double step) {
    const double saved = *x;
    *x = saved + step;
    const double lp = loss();
    *x = saved - step;
    const double lm = loss();
    *x = saved;
    return (lp - lm) / (2 * step);
  };
  for (size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    const bool every = p.size <= std::max<long>(kCheckEveryElementUpTo, max_per_tensor);
    const long n = every ? p.size : max_per_tensor;
    double dot = 0, na = 0, nn = 0;
    for (long c = 0; c < n; ++c) {
      const long i = every ? c : rng.UniformInt(0, p.size - 1);
      const double numeric = central(p.value + i, kFiniteDifferenceStep);
      const double a = analytic[k][i];
      const double scale = std::max(std::abs(a), std::abs(numeric));
      EXPECT_NEAR(a, numeric, kGradAbsTolerance + kGradRelTolerance * scale)
          << p.name << "[" << i << "]";
      const double err = std::abs(numeric - a) / std::max(1e-12, scale);
      if (err > r.worst && std::abs(numeric - a) > kGradAbsTolerance) {
        r.worst = err;
        r.worst_name = p.name;
      }
      dot += a * numeric;
      na += a * a;
      nn += numeric * numeric;
      ++r.checked;
    }
    if (na > 1e-20 && nn > 1e-20) {
      EXPECT_GT(dot / std::sqrt(na * nn), 1 - kCosineTolerance) << p.name << ": cosine";
    }
    // Directional derivative along a random unit direction v: (L(x + h v) - L(x - h v)) / 2h = a.v.
    std::vector<double> v(p.size), saved(p.value, p.value + p.size);
    double norm = 0;
    for (auto& x : v) {
      x = rng.Normal();
      norm += x * x;
    }
    norm = std::sqrt(norm);
    double predicted = 0, scale = 0;
    for (long i = 0; i < p.size; ++i) {
      v[i] /= norm;
      predicted += analytic[k][i] * v[i];
      scale += std::abs(analytic[k][i] * v[i]);
    }
    auto shifted = [&](double step) {
      for (long i = 0; i < p.size; ++i) p.value[i] = saved[i] + step * v[i];
      const double l = loss();
      std::copy(saved.begin(), saved.end(), p.value);
      return l;
    };
    const double directional = (shifted(kFiniteDifferenceStep) - shifted(-kFiniteDifferenceStep)) /
                               (2 * kFiniteDifferenceStep);
    EXPECT_NEAR(directional, predicted, kGradAbsTolerance + kDirectionalRelTolerance * scale)
        << p.name << ": directional derivative over the whole tensor";
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
