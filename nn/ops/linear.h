// Affine map y = x W + b with W stored [in, out]. Row chunks (forward, d_x) and column chunks (d_W, d_b)
// have fixed sizes, so results do not depend on the thread count.
#pragma once

#include "nn/parallel.h"
#include "nn/tensor.h"

namespace lexp {

inline constexpr long kRowGrain = 512;  // rows per GEMM task: large enough to keep the kernel busy
inline constexpr long kColGrain = 64;   // columns per reduction task (norms, embeddings)
// Output columns per weight-gradient task: each task repacks all of x, so fewer, wider tasks.
inline constexpr long kWeightGradColGrain = 128;

template <typename S>
struct LinearParams {
  Mat<S> w;     // [in, out]
  RowVec<S> b;  // [out]
};

// x: [N, in] -> y: [N, out]
template <typename S>
void LinearForward(const Mat<S>& x, const LinearParams<S>& p, Mat<S>& y) {
  Resize(y, x.rows(), p.w.cols());
  ParallelChunks(x.rows(), kRowGrain, [&](long r0, long r1) {
    y.middleRows(r0, r1 - r0).noalias() = x.middleRows(r0, r1 - r0) * p.w;
    y.middleRows(r0, r1 - r0).rowwise() += p.b;
  });
}

// Forward: y = x W + b.  Backward: d_x += d_y W^T;  d_W += x^T d_y;  d_b += sum_rows d_y.
// d_x may be null when the input needs no gradient.
template <typename S>
void LinearBackward(const Mat<S>& x, const LinearParams<S>& p, const Mat<S>& d_y, Mat<S>* d_x,
                    LinearParams<S>& d_p) {
  if (d_x != nullptr) {
    ParallelChunks(x.rows(), kRowGrain, [&](long r0, long r1) {
      d_x->middleRows(r0, r1 - r0).noalias() += d_y.middleRows(r0, r1 - r0) * p.w.transpose();
    });
  }
  ParallelChunks(p.w.cols(), kWeightGradColGrain, [&](long c0, long c1) {
    d_p.w.middleCols(c0, c1 - c0).noalias() += x.transpose() * d_y.middleCols(c0, c1 - c0);
    d_p.b.segment(c0, c1 - c0) += d_y.middleCols(c0, c1 - c0).colwise().sum();
  });
}

}  // namespace lexp
