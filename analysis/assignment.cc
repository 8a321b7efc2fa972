#include "analysis/assignment.h"

#include <limits>

#include "nn/check.h"

namespace lexp {

std::vector<int> MinCostAssignment(const std::vector<double>& cost, int n) {
  LEXP_CHECK(n >= 0 && cost.size() == static_cast<size_t>(n) * n,
             "assignment: the cost matrix must be n x n");
  const double inf = std::numeric_limits<double>::infinity();
  // 1-based potentials u (rows), v (columns); p[j]: the row matched to column j (0: none).
  std::vector<double> u(n + 1, 0.0), v(n + 1, 0.0);
  std::vector<int> p(n + 1, 0), way(n + 1, 0);
  for (int i = 1; i <= n; ++i) {
    p[0] = i;
    int j0 = 0;
    std::vector<double> minv(n + 1, inf);
    std::vector<char> used(n + 1, 0);
    do {
      used[j0] = 1;
      const int i0 = p[j0];
      double delta = inf;
      int j1 = 0;
      for (int j = 1; j <= n; ++j) {
        if (used[j]) continue;
        const double cur = cost[static_cast<size_t>(i0 - 1) * n + (j - 1)] - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = j;
        }
      }
      for (int j = 0; j <= n; ++j) {
        if (used[j]) {
          u[p[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (p[j0] != 0);
    do {
      const int j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> match(n, -1);
  for (int j = 1; j <= n; ++j)
    if (p[j] > 0) match[p[j] - 1] = j - 1;
  return match;
}

}  // namespace lexp
