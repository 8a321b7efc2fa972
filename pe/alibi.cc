#include "pe/alibi.h"

#include <algorithm>
#include <cmath>

namespace lexp {
namespace {

std::vector<double> PowerOfTwoSlopes(int n) {
  const double start = std::pow(2.0, -8.0 / n);
  std::vector<double> s(n);
  double m = start;
  for (int h = 0; h < n; ++h, m *= start) s[h] = m;
  return s;
}

// Whether pos[k] = pos[b] + (k - b) for k in [b, e), pos[b] an integer (all below 2^52): then
// every difference of two of them is exact.
bool ConsecutiveIntegers(const double* pos, int b, int e) {
  if (e <= b) return true;
  const double p0 = pos[b];
  if (std::floor(p0) != p0 || std::abs(p0) + e > 4503599627370496.0) return false;
  for (int k = b + 1; k < e; ++k)
    if (pos[k] != p0 + (k - b)) return false;
  return true;
}

}  // namespace

std::vector<double> AlibiSlopes(int heads) {
  LEXP_CHECK(heads > 0, "alibi: heads must be positive");
  const int c = 1 << static_cast<int>(std::floor(std::log2(heads)));
  std::vector<double> s = PowerOfTwoSlopes(c);
  if (c == heads) return s;
  const std::vector<double> extra = AlibiSlopes(2 * c);
  for (int i = 0; static_cast<int>(s.size()) < heads; i += 2) s.push_back(extra[i]);
  return s;
}

template <typename S>
Alibi<S>::Alibi(const EncodingShape& shape, const NoOptions& /*opt*/)
    : slopes_(AlibiSlopes(shape.n_heads)) {}

template <typename S>
void Alibi<S>::AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                            const HeadQK<S>& /*qk*/, S* scores, long lds) const {
  const double m = slopes_[ctx.head];
  if (ctx.plain_distance && i1 - i0 >= 4 && j1 > j0 &&
      ConsecutiveIntegers(ctx.pos, i0, i1) && ConsecutiveIntegers(ctx.pos, j0, j1) &&
      ctx.pos[i0] - ctx.pos[j0] == i0 - j0) {
    // p_i - p_j = i - j exactly: row i's terms are the slice at offset j - i of one row of terms by
    // offset, each m |d| in double rounded once to S as below, computed once a call instead of
    // once an element. For float the same bits as the loop below (S = double, for gradient
    // checks, may differ in the last bit where the loop's subtraction is contracted into an FMA).
    const int d_min = j0 - (i1 - 1), d_max = (j1 - 1) - i0;
    thread_local std::vector<S> by_offset;
    by_offset.resize(static_cast<size_t>(d_max - d_min + 1));
    for (int d = d_min; d <= d_max; ++d)
      by_offset[d - d_min] = static_cast<S>(m * std::abs(static_cast<double>(d)));
    for (int i = i0; i < i1; ++i) {
      S* row = scores + static_cast<long>(i - i0) * lds;
      const S* term = by_offset.data() + (j0 - i - d_min);
      for (int j = 0; j < j1 - j0; ++j) row[j] -= term[j];
    }
    return;
  }
  for (int i = i0; i < i1; ++i) {
    S* row = scores + static_cast<long>(i - i0) * lds;
    if (ctx.plain_distance) {  // the same arithmetic as Distance, in a loop the compiler vectorises
      const double pi = ctx.pos[i];
      const double* pj = ctx.pos + j0;
      for (int j = 0; j < j1 - j0; ++j) row[j] -= static_cast<S>(m * std::abs(pi - pj[j]));
    } else {
      for (int j = j0; j < j1; ++j) row[j - j0] -= static_cast<S>(m * std::abs(ctx.Distance(i, j)));
    }
  }
}

template class Alibi<float>;
template class Alibi<double>;

}  // namespace lexp
