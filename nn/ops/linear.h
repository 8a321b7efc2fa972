// Affine map y = x W + b with W stored [in, out]. Row chunks (forward, d_x) and column chunks (d_W,
// d_b) have fixed sizes, so results do not depend on the thread count.
#pragma once

#include <vector>

#include "nn/ops/gemm.h"
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

// One chunk of rows: y[n, out] = x[n, in] W + b (contiguous rows).
template <typename S>
void LinearRows(const S* x, long n, const LinearParams<S>& p, S* y) {
  const long in = p.w.rows(), out = p.w.cols();
  Gemm<S>(false, false, n, out, in, x, in, p.w.data(), out, false, y, out);
  MatMap<S>(y, n, out).rowwise() += p.b;
}

// x: [N, in] -> y: [N, out]
template <typename S>
void LinearForward(const Mat<S>& x, const LinearParams<S>& p, Mat<S>& y) {
  Resize(y, x.rows(), p.w.cols());
  ParallelChunks(x.rows(), kRowGrain, [&](long r0, long r1) {
    LinearRows(x.data() + r0 * x.cols(), r1 - r0, p, y.data() + r0 * y.cols());
  });
}

// How LinearBackward writes d_x: added to what it holds, or written over it (a fresh buffer need
// not be zeroed first).
enum class GradWrite { kAdd, kOverwrite };

// Forward: y = x W + b.  Backward: d_x += d_y W^T;  d_W += x^T d_y;  d_b += sum_rows d_y.
// d_x may be null when the input needs no gradient. w_t, when given, is scratch for W^T: d_x is
// then the plain (NN) product d_y W^T, which has faster kernels than the transposed one
// (nn/ops/gemm.h).
template <typename S>
void LinearBackward(const Mat<S>& x, const LinearParams<S>& p, const Mat<S>& d_y, Mat<S>* d_x,
                    LinearParams<S>& d_p, GradWrite write = GradWrite::kAdd,
                    std::vector<S>* w_t = nullptr) {
  if (d_x != nullptr) {
    const bool add = write == GradWrite::kAdd;
    if (!add) Resize(*d_x, x.rows(), p.w.rows());
    if (w_t != nullptr) {  // a vector keeps its capacity: no allocation once the largest W was seen
      w_t->resize(p.w.size());
      MatMap<S>(w_t->data(), p.w.cols(), p.w.rows()) = p.w.transpose();
    }
    ParallelChunks(x.rows(), kRowGrain, [&](long r0, long r1) {
      const S* dy = d_y.data() + r0 * d_y.cols();
      S* dx = d_x->data() + r0 * d_x->cols();
      if (w_t != nullptr)
        Gemm<S>(false, false, r1 - r0, p.w.rows(), d_y.cols(), dy, d_y.cols(), w_t->data(),
                p.w.rows(), add, dx, d_x->cols());
      else
        Gemm<S>(false, true, r1 - r0, p.w.rows(), d_y.cols(), dy, d_y.cols(), p.w.data(),
                p.w.cols(), add, dx, d_x->cols());
    });
  }
  ParallelChunks(p.w.cols(), kWeightGradColGrain, [&](long c0, long c1) {
    Gemm<S>(true, false, x.cols(), c1 - c0, x.rows(), x.data(), x.cols(), d_y.data() + c0,
            d_y.cols(), true, d_p.w.data() + c0, d_p.w.cols());
    d_p.b.segment(c0, c1 - c0) += d_y.middleCols(c0, c1 - c0).colwise().sum();
  });
}

}  // namespace lexp
