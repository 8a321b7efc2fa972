// The one-to-one matching of two sets of n items with the least total cost (the linear assignment
// problem), by the Hungarian method with potentials (Kuhn 1955, "The Hungarian method for the
// assignment problem"; O(n^3)). lexp matches the heads of a model to the heads of a reference
// model (head order is arbitrary between separately trained models): a per-head minimum lets many
// heads claim the same reference head, an assignment does not.
#pragma once

#include <vector>

namespace lexp {

// cost: [n, n] row-major, cost[i * n + j] of matching item i to item j (finite). Returns match[i] =
// the j matched to i, a permutation minimising sum_i cost[i * n + match[i]].
std::vector<int> MinCostAssignment(const std::vector<double>& cost, int n);

}  // namespace lexp
