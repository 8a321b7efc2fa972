// How far attention moves when every position id is shifted by the same amount (Wang et al. 2024,
// "When Precision Meets Position: BFloat16 Breaks Down RoPE in Long-Context Training",
// arXiv:2411.13476, Eq. 4: the attention difference D(X, Δ1, Δ2) of one input under two shifts).
// A relative encoding computed exactly gives identical attention under any shift; rounding of the
// rotation (RoPE in bf16) does not, and the paper finds the difference concentrated on the first
// token. The pure part: two attention maps of one head compared row by row.
#pragma once

#include <cmath>
#include <cstdint>

namespace lexp {

struct ShiftDifference {
  double row_l1 = 0;     // sum over query rows of sum_j |a_ij - b_ij| (each row's term in [0, 2])
  double first_key = 0;  // sum over query rows of |a_i0 - b_i0|: the part on the first key
  int64_t rows = 0;      // query rows compared
};

// a, b: [T, T] row-major attention probabilities of the same head and input (0 where masked).
// Adds rows [0, T) to *d.
template <typename S>
void AddShiftDifference(const S* a, const S* b, int T, ShiftDifference* d) {
  for (int i = 0; i < T; ++i) {
    const S* ra = a + static_cast<int64_t>(i) * T;
    const S* rb = b + static_cast<int64_t>(i) * T;
    double row = 0;
    for (int j = 0; j < T; ++j) row += std::fabs(static_cast<double>(ra[j]) - rb[j]);
    d->row_l1 += row;
    d->first_key += std::fabs(static_cast<double>(ra[0]) - rb[0]);
    ++d->rows;
  }
}

}  // namespace lexp
