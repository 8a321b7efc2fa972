#include "experiments/tasks/associative_recall.h"

#include <numeric>

#include "nn/check.h"

namespace lexp {

Example AssociativeRecallTask::Sample(int n, Rng& rng) const {
  const int half = vocab_ / 2;
  LEXP_INPUT_CHECK(n >= 1 && n <= half,
                   "associative_recall: length " + std::to_string(n) +
                       " needs n distinct keys; at most vocab/2 = " + std::to_string(half));
  // Partial Fisher-Yates: n distinct keys from [0, half).
  std::vector<int> keys(half);
  std::iota(keys.begin(), keys.end(), 0);
  for (int i = 0; i < n; ++i) std::swap(keys[i], keys[rng.UniformInt(i, half - 1)]);
  keys.resize(n);
  std::vector<int> values(n);
  for (int& v : values) v = static_cast<int>(rng.UniformInt(half, vocab_ - 1));
  Example e;
  for (int i = 0; i < n; ++i) {
    e.input.push_back(keys[i]);
    e.input.push_back(values[i]);
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (int i = n - 1; i > 0; --i) std::swap(order[i], order[rng.UniformInt(0, i)]);
  for (int i : order) {
    e.output.push_back(keys[i]);
    e.output_scored.push_back(0);
    e.output.push_back(values[i]);
    e.output_scored.push_back(1);
  }
  return e;
}

}  // namespace lexp
