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

// Its slope, d GELU / dx = Phi(x) + x phi(x) = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi).
template <typename S, typename Array>
auto GeluSlopeOf(const Array& x) {
  return S(0.5) * (S(1) + (x * S(0.70710678118654752)).erf()) +
         x * (S(-0.5) * x.square()).exp() * S(0.39894228040143268);
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
// Backward: d_x = d_y * GeluSlopeOf(x), written over d_x (the MLP's only use, so its buffer needs
// no zeroing first).
template <typename S>
void GeluBackward(const Mat<S>& x, const Mat<S>& d_y, Mat<S>& d_x) {
  Resize(d_x, x.rows(), x.cols());
  ParallelChunks(x.rows(), kRowGrain / 4, [&](long r0, long r1) {
    const long n = r1 - r0;
    d_x.middleRows(r0, n).array() =
        d_y.middleRows(r0, n).array() * GeluSlopeOf<S>(x.middleRows(r0, n).array());
  });
}

// A training pass's GELU of n rows in one sweep over x: y = GELU(x) and the slope that the backward
// pass multiplies by (then d_x = d_y * slope, no erf on the way back). x, y, slope: n x F rows with
// row stride F.
template <typename S>
void GeluWithSlopeRows(const S* x, long n, long F, S* y, S* slope) {
  const auto xa = ConstMatMap<S>(x, n, F).array();
  auto ya = MatMap<S>(y, n, F).array();
  auto sa = MatMap<S>(slope, n, F).array();
  sa = S(1) + (xa * S(0.70710678118654752)).erf();  // the erf, once
  ya = S(0.5) * xa * sa;                            // GeluOf's operations, in its order
  sa = S(0.5) * sa + xa * (S(-0.5) * xa.square()).exp() * S(0.39894228040143268);
}

}  // namespace lexp
