// Token embedding lookup: row t of the output is row tokens[t] of the table.
#pragma once

#include <vector>

#include "nn/ops/linear.h"
#include "nn/tensor.h"

namespace lexp {

// tokens: [N] -> x: [N, C]
template <typename S>
void EmbeddingForward(const std::vector<int>& tokens, const Mat<S>& table, Mat<S>& x) {
  Resize(x, static_cast<long>(tokens.size()), table.cols());
  ParallelChunks(x.rows(), kRowGrain, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) x.row(r) = table.row(tokens[r]);
  });
}

// Forward: x[t] = table[tokens[t]].  Backward: d_table[tokens[t]] += d_x[t], in token order.
template <typename S>
void EmbeddingBackward(const std::vector<int>& tokens, const Mat<S>& d_x, Mat<S>& d_table) {
  ParallelChunks(d_table.cols(), kColGrain, [&](long c0, long c1) {
    for (size_t r = 0; r < tokens.size(); ++r)
      d_table.row(tokens[r]).segment(c0, c1 - c0) += d_x.row(r).segment(c0, c1 - c0);
  });
}

}  // namespace lexp
