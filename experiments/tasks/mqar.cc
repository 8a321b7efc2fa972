#include "experiments/tasks/mqar.h"

#include <cmath>
#include <numeric>

#include "nn/check.h"

namespace lexp {

Example MultiQueryRecallTask::Sample(int n, Rng& rng) const {
  const int half = vocab_ / 2;
  LEXP_INPUT_CHECK(n >= 1 && n <= half - 1,
                   "mqar: length " + std::to_string(n) +
                       " needs n distinct keys; at most vocab/2 - 1 = " + std::to_string(half - 1));
  std::vector<int> keys(half - 1);
  std::iota(keys.begin(), keys.end(), 1);
  for (int i = 0; i < n; ++i) std::swap(keys[i], keys[rng.UniformInt(i, half - 2)]);
  Example e;
  std::vector<int> values(n);
  for (int i = 0; i < n; ++i) {
    values[i] = static_cast<int>(rng.UniformInt(half, vocab_ - 1));
    e.input.insert(e.input.end(), {keys[i], values[i]});
  }
  const int slots = 2 * n;
  std::vector<double> w(slots);
  for (int g = 0; g < slots; ++g) w[g] = kPowerA * std::pow(g + 1.0, kPowerA - 1);
  e.output.resize(2 * slots);
  e.output_scored.assign(2 * slots, 0);
  for (int& t : e.output) t = static_cast<int>(rng.UniformInt(0, vocab_ - 1));
  for (int i = 0; i < n; ++i) {
    // One slot without replacement, proportional to the remaining weights.
    double total = 0;
    for (double x : w) total += x;
    double u = rng.Uniform() * total;
    int g = 0;
    while (g < slots - 1 && (w[g] == 0 || u >= w[g])) {
      u -= w[g];
      ++g;
    }
    while (w[g] == 0) --g;  // rounding at the end of the scan
    w[g] = 0;
    e.output[2 * g] = keys[i];
    e.output[2 * g + 1] = values[i];
    e.output_scored[2 * g + 1] = 1;
  }
  return e;
}

}  // namespace lexp
