#include "experiments/tasks/passkey.h"

#include <cmath>

#include "nn/check.h"

namespace lexp {

Example PasskeyTask::Build(int n, int prefix, Rng& rng) const {
  LEXP_CHECK(prefix >= 0 && prefix <= n, "passkey: insertion point outside the filler");
  int key = static_cast<int>(rng.UniformInt(1, 50000));
  std::vector<int> digits(kDigits);
  for (int i = kDigits - 1; i >= 0; --i, key /= 10) digits[i] = key % 10;
  Example e;
  for (int t = 0; t < prefix; ++t) e.input.push_back(t % kFiller);
  e.input.push_back(kKey);
  for (int d : digits) e.input.push_back(kFiller + d);
  for (int t = 0; t < n - prefix; ++t) e.input.push_back(t % kFiller);
  e.input.push_back(kQuery);
  e.output = digits;
  e.output_scored.assign(kDigits, 1);
  return e;
}

Example PasskeyTask::Sample(int n, Rng& rng) const {
  return Build(n, static_cast<int>(rng.UniformInt(0, n)), rng);
}

Example PasskeyTask::SampleAtDepth(int n, double depth, Rng& rng) const {
  LEXP_CHECK(depth >= 0 && depth <= 1, "passkey: depth outside [0, 1]");
  return Build(n, static_cast<int>(std::lround(depth * n)), rng);
}

}  // namespace lexp
