// The MLP of an evaluation pass, y = GELU(x W1 + b1) W2 + b2, one chunk of rows at a time: the
// [N, F] hidden activations are never held at once (O(rows per chunk x F) per thread instead of
// O(N x F)), which is most of what evaluating a long sequence would otherwise keep. The chunks and
// products are those of LinearForward and GeluForward, so y has the same bits as the layer-by-layer
// pass that training runs.
#pragma once

#include <tbb/enumerable_thread_specific.h>

#include "nn/ops/gelu.h"
#include "nn/ops/linear.h"

namespace lexp {

// x: [N, C] -> y: [N, C]; hidden: per-thread [kRowGrain, F] scratch.
template <typename S>
void MlpForwardInChunks(const Mat<S>& x, const LinearParams<S>& fc1, const LinearParams<S>& fc2,
                        tbb::enumerable_thread_specific<Mat<S>>& hidden, Mat<S>& y) {
  const long F = fc1.w.cols(), C = x.cols(), out = fc2.w.cols();
  Resize(y, x.rows(), out);
  ParallelChunks(x.rows(), kRowGrain, [&](long r0, long r1) {
    const long n = r1 - r0;
    Mat<S>& h = hidden.local();
    Resize(h, kRowGrain, F);
    LinearRows(x.data() + r0 * C, n, fc1, h.data());
    for (long g0 = 0; g0 < n; g0 += kRowGrain / 4) {  // GeluForward's chunks
      const long m = std::min(n - g0, kRowGrain / 4);
      h.middleRows(g0, m).array() = GeluOf<S>(h.middleRows(g0, m).array());
    }
    LinearRows(h.data(), n, fc2, y.data() + r0 * out);
  });
}

}  // namespace lexp
