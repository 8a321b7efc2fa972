// 4-bit NormalFloat (NF4) storage of frozen weights, as QLoRA defines it (Dettmers et al. 2023,
// "QLoRA: Efficient Finetuning of Quantized LLMs", arXiv:2305.14314) and LongQLoRA uses it: 16
// code values from quantiles of the standard normal, asymmetric so that 0 is exact,
//
//   positive: Phi^-1(p) for the 8 points p of linspace(delta, 1/2, 9) without the last,
//   negative: -Phi^-1(p) for the 7 points of linspace(delta, 1/2, 8) without the last, and 0,
//   delta = (1/32 + 1/30) / 2 (the reference code's 0.9677083 mirrored: 1 - delta),
//
// divided by the largest so that they span [-1, 1]. A weight is stored per block of 64 values as
// the index of the nearest code to w / absmax(block), with the block's absmax; NF4 round trips
// give the dequantized weights code[index] x absmax. (Only the numerics: lexp keeps the
// dequantized floats, not the 4-bit storage, and does not quantize the absmax constants again.)
#pragma once

#include <algorithm>
#include <array>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <vector>

namespace lexp {

inline std::array<double, 16> Nf4CodeBook() {
  const boost::math::normal n01;
  const double upper = 1.0 - 0.5 * (1.0 / 32 + 1.0 / 30);  // 0.9677083...
  std::array<double, 16> code{};
  int k = 0;
  for (int i = 0; i < 8; ++i)  // linspace(upper, 0.5, 9)[:-1]
    code[k++] = boost::math::quantile(n01, upper + (0.5 - upper) * i / 8.0);
  for (int i = 0; i < 7; ++i)  // linspace(upper, 0.5, 8)[:-1]
    code[k++] = -boost::math::quantile(n01, upper + (0.5 - upper) * i / 7.0);
  code[k++] = 0.0;
  const double top = code[0];
  for (double& c : code) c /= top;
  std::sort(code.begin(), code.end());
  return code;
}

inline constexpr long kNf4Block = 64;

// The NF4 round trip of x (blocks of kNf4Block consecutive values): code[nearest] x absmax.
template <typename S>
void Nf4RoundTrip(S* x, long n) {
  static const std::array<double, 16> code = Nf4CodeBook();
  for (long b0 = 0; b0 < n; b0 += kNf4Block) {
    const long b1 = std::min(n, b0 + kNf4Block);
    double absmax = 0;
    for (long i = b0; i < b1; ++i) absmax = std::max(absmax, std::abs(static_cast<double>(x[i])));
    if (absmax == 0) continue;
    for (long i = b0; i < b1; ++i) {
      const double v = x[i] / absmax;
      int best = 0;
      for (int c = 1; c < 16; ++c)
        if (std::abs(v - code[c]) < std::abs(v - code[best])) best = c;
      x[i] = static_cast<S>(code[best] * absmax);
    }
  }
}

}  // namespace lexp
