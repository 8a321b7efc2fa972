// The MLP y = GELU(x W1 + b1) W2 + b2 over a chunk of rows, in one sweep: the chunk's [n, F]
// hidden rows stay in a per-thread scratch (and in cache) between the two products. Evaluation
// keeps nothing of them: O(rows per chunk x F) per thread instead of O(N x F), which is most of what
// evaluating a long sequence would otherwise hold. Training keeps the GELU output (the input of
// W2's gradient) and GELU's slope (the backward pass multiplies by it). The products are those of
// LinearForward's chunks and GELU's bits do not depend on where a chunk starts (a packet kernel,
// nn/ops/gelu.h), so every path has the bits of the layer-by-layer pass.
#pragma once

#include <tbb/enumerable_thread_specific.h>

#include "nn/check.h"
#include "nn/ops/gelu.h"
#include "nn/ops/linear.h"

namespace lexp {

// n rows of x [n, C] -> y [n, C] (row strides C and fc2's width); hidden: scratch of >= n x F.
// g and slope: the rows' [n, F] GELU output and slope (a training pass), or null.
template <typename S>
void MlpRows(const S* x, long n, const PreparedLinear<S>& fc1, const PreparedLinear<S>& fc2,
             Mat<S>& hidden, S* g, S* slope, S* y) {
  const long F = fc1.w.cols();
  LEXP_CHECK(n <= kRowGrain, "MLP: a chunk of more rows than its scratch holds");
  Resize(hidden, kRowGrain, F);
  LinearRows(x, n, fc1, hidden.data());
  if (g != nullptr) {
    GeluWithSlopeRows(hidden.data(), n, F, g, slope);
  } else {
    GeluValues(hidden.data(), n * F, hidden.data(), static_cast<S*>(nullptr));  // in place
  }
  LinearRows(g != nullptr ? g : hidden.data(), n, fc2, y);
}

// x: [N, C] -> y: [N, C]; hidden: per-thread [kRowGrain, F] scratch.
template <typename S>
void MlpForwardInChunks(const Mat<S>& x, const LinearParams<S>& fc1, const LinearParams<S>& fc2,
                        tbb::enumerable_thread_specific<Mat<S>>& hidden, Mat<S>& y) {
  const long C = x.cols(), out = fc2.w.cols();
  Resize(y, x.rows(), out);
  PreparedLinear<S> layer1, layer2;
  layer1.Prepare(fc1);
  layer2.Prepare(fc2);
  ParallelChunks(x.rows(), kRowGrain, [&](long r0, long r1) {
    MlpRows(x.data() + r0 * C, r1 - r0, layer1, layer2, hidden.local(), static_cast<S*>(nullptr),
            static_cast<S*>(nullptr), y.data() + r0 * out);
  });
}

}  // namespace lexp
