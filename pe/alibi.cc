#include "pe/alibi.h"

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
