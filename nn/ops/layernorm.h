// Layer normalisation over the feature axis (Ba, Kiros & Hinton 2016, arXiv:1607.06450), eps 1e-5 as in
// PyTorch, with learnable gain and bias.
#pragma once

#include <algorithm>
#include <cmath>

#include "nn/parallel.h"
#include "nn/ops/linear.h"
#include "nn/tensor.h"

namespace lexp {

inline constexpr double kLayerNormEps = 1e-5;

template <typename S>
struct LayerNormParams {
  RowVec<S> g;  // [C]
  RowVec<S> b;  // [C]
};

template <typename S>
struct LayerNormCache {
  Mat<S> xhat;    // [N, C] normalised input
  Vec<S> rstd;    // [N]
};

// Sizes y and the cache for x's [N, C]; LayerNormRows then fills any rows of them.
template <typename S>
void LayerNormResize(const Mat<S>& x, Mat<S>& y, LayerNormCache<S>& cache) {
  Resize(y, x.rows(), x.cols());
  Resize(cache.xhat, x.rows(), x.cols());
  Resize(cache.rstd, x.rows());
}

// Asks for the cache lines of n values at x, to be written.
template <typename S>
void PrefetchForWrite(S* x, long n) {
  constexpr long kLine = 64 / sizeof(S);  // values a cache line
  for (long i = 0; i < n; i += kLine) __builtin_prefetch(x + i, 1);
}

// Rows [r0, r1) of the forward: every row is independent, so a fused pass may call this on the
// rows it has just produced, with the bits of the whole-matrix pass. The outputs' lines are asked
// for a few rows ahead: a training pass writes them first here each step (long evicted since the
// last), and the stores that missed held up the rows after them (a quarter of this function's
// time on a T step).
template <typename S>
void LayerNormRows(const Mat<S>& x, const LayerNormParams<S>& p, Mat<S>& y,
                   LayerNormCache<S>& cache, long r0, long r1) {
  constexpr long kAhead = 4;
  const long C = x.cols();
  for (long r = r0; r < std::min(r1, r0 + kAhead); ++r) {
    PrefetchForWrite(y.row(r).data(), C);
    PrefetchForWrite(cache.xhat.row(r).data(), C);
  }
  for (long r = r0; r < r1; ++r) {
    if (r + kAhead < r1) {
      PrefetchForWrite(y.row(r + kAhead).data(), C);
      PrefetchForWrite(cache.xhat.row(r + kAhead).data(), C);
    }
    const S mean = x.row(r).mean();
    const S var = (x.row(r).array() - mean).square().mean();
    const S rstd = S(1) / std::sqrt(var + S(kLayerNormEps));
    cache.rstd[r] = rstd;
    cache.xhat.row(r) = (x.row(r).array() - mean) * rstd;
    y.row(r) = cache.xhat.row(r).cwiseProduct(p.g) + p.b;
  }
}

// x: [N, C] -> y: [N, C]
template <typename S>
void LayerNormForward(const Mat<S>& x, const LayerNormParams<S>& p, Mat<S>& y,
                      LayerNormCache<S>& cache) {
  LayerNormResize(x, y, cache);
  ParallelChunks(x.rows(), kRowGrain,
                 [&](long r0, long r1) { LayerNormRows(x, p, y, cache, r0, r1); });
}

// Forward: xhat = (x - mean) * rstd;  y = xhat * g + b.
// Backward: d_xhat = d_y * g;  d_x += rstd * (d_xhat - mean(d_xhat) - xhat * mean(d_xhat * xhat)).
// The input gradient of rows [r0, r1) (independent rows; see LayerNormRows), added to d_x or
// written over it (kOverwrite: a fresh buffer needs no zeroing first; the values of adding to
// zeros, up to the sign of a zero).
template <typename S>
void LayerNormInputGradRows(const LayerNormParams<S>& p, const LayerNormCache<S>& cache,
                            const Mat<S>& d_y, Mat<S>& d_x, long r0, long r1,
                            GradWrite write = GradWrite::kAdd) {
  for (long r = r0; r < r1; ++r) {
    const auto d_xhat = d_y.row(r).cwiseProduct(p.g);  // an expression: nothing is allocated
    const S m1 = d_xhat.mean();
    const S m2 = d_xhat.cwiseProduct(cache.xhat.row(r)).mean();
    const auto grad = cache.rstd[r] * (d_xhat.array() - m1 - cache.xhat.row(r).array() * m2);
    if (write == GradWrite::kAdd)
      d_x.row(r).array() += grad;
    else
      d_x.row(r).array() = grad;
  }
}

// d_g += sum_rows d_y * xhat;  d_b += sum_rows d_y, in two steps: each chunk of kRowGrain rows is
// summed in order into its own partial (AddChunk, which a caller may run right after writing the
// chunk's d_y), then the partials are added in chunk order (Finish): the bits depend on the chunk
// size, not on the thread count.
template <typename S>
class LayerNormParamPartials {
 public:
  LayerNormParamPartials(long rows, long C) : C_(C) {
    sums_.setZero((rows + kRowGrain - 1) / kRowGrain, 2 * C);  // no rows: no partial
  }
  // Rows [r0, r1) of one chunk: r0 a multiple of kRowGrain, r1 - r0 <= kRowGrain.
  void AddChunk(const LayerNormCache<S>& cache, const Mat<S>& d_y, long r0, long r1) {
    auto sg = sums_.row(r0 / kRowGrain).head(C_);
    auto sb = sums_.row(r0 / kRowGrain).tail(C_);
    sg.setZero();
    sb.setZero();
    for (long r = r0; r < r1; ++r) {
      sg += d_y.row(r).cwiseProduct(cache.xhat.row(r));
      sb += d_y.row(r);
    }
  }
  // The same sums, with the chunk's input gradient in the same sweep over its rows, added to a
  // residual's: d_x = base + (LayerNormInputGradRows' gradient of d_y), base may be d_x itself
  // (then d_x += it). The bits of LayerNormInputGradRows (kAdd onto base) and AddChunk, with each
  // row of d_y and xhat read once for both.
  void AddChunkWithInputGrad(const LayerNormParams<S>& p, const LayerNormCache<S>& cache,
                             const Mat<S>& d_y, const Mat<S>& base, Mat<S>& d_x, long r0,
                             long r1) {
    auto sg = sums_.row(r0 / kRowGrain).head(C_);
    auto sb = sums_.row(r0 / kRowGrain).tail(C_);
    sg.setZero();
    sb.setZero();
    for (long r = r0; r < r1; ++r) {
      const auto d_xhat = d_y.row(r).cwiseProduct(p.g);
      const S m1 = d_xhat.mean();
      const S m2 = d_xhat.cwiseProduct(cache.xhat.row(r)).mean();
      d_x.row(r).array() = base.row(r).array() + cache.rstd[r] * (d_xhat.array() - m1 -
                                                                 cache.xhat.row(r).array() * m2);
      sg += d_y.row(r).cwiseProduct(cache.xhat.row(r));
      sb += d_y.row(r);
    }
  }
  void Finish(LayerNormParams<S>& d_p) const {
    for (long c = 0; c < sums_.rows(); ++c) {
      d_p.g += sums_.row(c).head(C_);
      d_p.b += sums_.row(c).tail(C_);
    }
  }

 private:
  long C_;
  Mat<S> sums_;  // [chunks, 2C]: each chunk's d_g partial, then its d_b partial
};

template <typename S>
void LayerNormParamGrad(const LayerNormCache<S>& cache, const Mat<S>& d_y,
                        LayerNormParams<S>& d_p) {
  LayerNormParamPartials<S> partials(d_y.rows(), d_y.cols());
  ParallelChunks(d_y.rows(), kRowGrain,
                 [&](long r0, long r1) { partials.AddChunk(cache, d_y, r0, r1); });
  partials.Finish(d_p);
}

// The input gradient (added to d_x, or written over it: kOverwrite sizes d_x) and the parameters'
// partial sums in one parallel region, chunk by chunk of rows.
template <typename S>
void LayerNormBackward(const LayerNormParams<S>& p, const LayerNormCache<S>& cache,
                       const Mat<S>& d_y, Mat<S>& d_x, LayerNormParams<S>& d_p,
                       GradWrite write = GradWrite::kAdd) {
  if (write == GradWrite::kOverwrite) Resize(d_x, d_y.rows(), d_y.cols());
  LayerNormParamPartials<S> partials(d_y.rows(), d_y.cols());
  ParallelChunks(d_y.rows(), kRowGrain, [&](long r0, long r1) {
    LayerNormInputGradRows(p, cache, d_y, d_x, r0, r1, write);
    partials.AddChunk(cache, d_y, r0, r1);
  });
  partials.Finish(d_p);
}

}  // namespace lexp
