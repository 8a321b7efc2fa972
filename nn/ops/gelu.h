// GELU, exact erf form (Hendrycks & Gimpel 2016, arXiv:1606.08415), as PyTorch's nn.GELU() default.
#pragma once

#include <unsupported/Eigen/SpecialFunctions>

#include <type_traits>

#include "nn/ops/linear.h"
#include "nn/ops/packet_map.h"
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

// The GELU of n values x in one sweep: y = GELU(x) and/or (either may be null) the slope that the
// backward pass multiplies by (then d_x = d_y * slope, no erf on the way back). float runs in SIMD
// packets (nn/ops/packet_map.h: the same bits wherever a chunk starts); double (gradient checks)
// through Eigen's expressions above.
template <typename S>
void GeluValues(const S* x, long n, S* y, S* slope) {
  if constexpr (std::is_same_v<S, float> && Eigen::internal::packet_traits<S>::HasErf) {
    namespace pk = Eigen::internal;
    using P = PacketOf<S>;
    const P half = pk::pset1<P>(S(0.5)), one = pk::pset1<P>(S(1)),
            inv_sqrt2 = pk::pset1<P>(S(0.70710678118654752)),
            minus_half = pk::pset1<P>(S(-0.5)), inv_sqrt_2pi = pk::pset1<P>(S(0.39894228040143268));
    const auto cdf2 = [&](const P& v) { return pk::padd(one, pk::perf(pk::pmul(v, inv_sqrt2))); };
    const auto value = [&](const P& v, const P& c) { return pk::pmul(pk::pmul(half, v), c); };
    const auto slope_of = [&](const P& v, const P& c) {
      const P density = pk::pmul(pk::pexp(pk::pmul(minus_half, pk::pmul(v, v))), inv_sqrt_2pi);
      return pk::pmadd(half, c, pk::pmul(v, density));  // one FMA: no contraction left to the
                                                         // compiler, the same bits in every caller
    };
    if (slope == nullptr) {
      MapPackets<S, 1, 1>(n, {x}, {y}, [&](const P (&in)[1], P (&out)[1]) {
        out[0] = value(in[0], cdf2(in[0]));
      });
    } else if (y == nullptr) {
      MapPackets<S, 1, 1>(n, {x}, {slope}, [&](const P (&in)[1], P (&out)[1]) {
        out[0] = slope_of(in[0], cdf2(in[0]));
      });
    } else {
      MapPackets<S, 1, 2>(n, {x}, {y, slope}, [&](const P (&in)[1], P (&out)[2]) {
        const P c = cdf2(in[0]);  // 1 + erf(x / sqrt 2), once
        out[0] = value(in[0], c);
        out[1] = slope_of(in[0], c);
      });
    }
  } else {
    const auto xa = ConstMatMap<S>(x, 1, n).array();
    if (y != nullptr) MatMap<S>(y, 1, n).array() = GeluOf<S>(xa);
    if (slope != nullptr) MatMap<S>(slope, 1, n).array() = GeluSlopeOf<S>(xa);
  }
}

// x: [N, F] -> y: [N, F]
template <typename S>
void GeluForward(const Mat<S>& x, Mat<S>& y) {
  Resize(y, x.rows(), x.cols());
  ParallelChunks(x.rows(), kRowGrain / 4, [&](long r0, long r1) {
    const long n = r1 - r0;
    GeluValues(x.data() + r0 * x.cols(), n * x.cols(), y.data() + r0 * x.cols(),
               static_cast<S*>(nullptr));
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
    GeluValues(x.data() + r0 * x.cols(), n * x.cols(), static_cast<S*>(nullptr),
               d_x.data() + r0 * x.cols());
    d_x.middleRows(r0, n).array() *= d_y.middleRows(r0, n).array();
  });
}

// A training pass's GELU of n rows x, y, slope of F values each (row stride F).
template <typename S>
void GeluWithSlopeRows(const S* x, long n, long F, S* y, S* slope) {
  GeluValues(x, n * F, y, slope);
}

}  // namespace lexp
