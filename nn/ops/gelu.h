// GELU, exact erf form (Hendrycks & Gimpel 2016, arXiv:1606.08415), as PyTorch's nn.GELU() default.
#pragma once

#include <unsupported/Eigen/SpecialFunctions>

#include "nn/ops/linear.h"
#include "nn/tensor.h"

namespace lexp {

// The GELU of an Eigen array expression, element by element: 0.5 x (1 + erf(x / sqrt 2)).
template <typename S, typename Array>
auto GeluOf(const Array& x) {
  return S(0.5) * x * (S(1) + (x * S(0.70710678118654752)).erf());
}

// x: [N, F] -> y: [N, F]
template <typename S>
void GeluForward(const Mat<S>& x, Mat<S>& y) {
  Resize(y, x.rows(), x.cols());
  ParallelChunks(x.rows(), kRowGrain / 4, [&](long r0, long r1) {
    const long n = r1 - r0;
    y.middleRows(r0, n).array() = GeluOf<S>(x.middleRows(r0, n).array());
  });
}

// Forward: y = 0.5 x (1 + erf(x/sqrt2)).
// Backward: d_x = d_y * (0.5 (1 + erf(x/sqrt2)) + x * exp(-x^2/2) / sqrt(2 pi)), written over d_x
// (the MLP's only use, so its buffer needs no zeroing first).
template <typename S>
void GeluBackward(const Mat<S>& x, const Mat<S>& d_y, Mat<S>& d_x) {
  Resize(d_x, x.rows(), x.cols());
  ParallelChunks(x.rows(), kRowGrain / 4, [&](long r0, long r1) {
    const long n = r1 - r0;
    const auto xa = x.middleRows(r0, n).array();
    d_x.middleRows(r0, n).array() = d_y.middleRows(r0, n).array() *
                                    (S(0.5) * (S(1) + (xa * S(0.70710678118654752)).erf()) +
                                     xa * (S(-0.5) * xa.square()).exp() * S(0.39894228040143268));
  });
}

}  // namespace lexp
