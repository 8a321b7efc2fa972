#include "experiments/tasks/passkey_lm.h"

#include <cmath>

#include "nn/check.h"

namespace lexp {

Example PasskeyLmTask::Build(int n, int prefix, Rng& rng) const {
  LEXP_CHECK(prefix >= 0 && prefix <= n, "passkey_lm: insertion point outside the haystack");
  const int chain = static_cast<int>(rng.UniformInt(0, MarkovLmTask::kChains - 1));
  // Without the question, the haystack runs on for its six tokens.
  const std::vector<int> text = haystack_.SampleChain(chain, asked_ ? n : n + 6, rng);
  int key = static_cast<int>(rng.UniformInt(1, 50000));
  std::vector<int> digits(kDigits);
  for (int i = kDigits - 1; i >= 0; --i, key /= 10) digits[i] = Digit(key % 10);
  Example e;
  e.output.assign(text.begin(), text.begin() + prefix);
  e.output.push_back(Key());
  e.output.insert(e.output.end(), digits.begin(), digits.end());
  e.output.insert(e.output.end(), text.begin() + prefix, text.end());
  e.output_scored.assign(n + 12, 1);
  if (!asked_) return e;  // every token graded
  e.output.push_back(Query());
  e.output.insert(e.output.end(), digits.begin(), digits.end());
  e.output_graded.assign(e.output.size(), 0);
  if (grading_ == Grading::kText) {  // the haystack's n tokens, before and after the key
    std::fill(e.output_graded.begin(), e.output_graded.begin() + prefix, 1);
    std::fill(e.output_graded.begin() + prefix + 1 + kDigits,
              e.output_graded.begin() + n + 1 + kDigits, 1);
    return e;
  }
  std::fill(e.output_graded.end() - kDigits, e.output_graded.end(), 1);
  return e;
}

Example PasskeyLmTask::Sample(int n, Rng& rng) const {
  return Build(n, static_cast<int>(rng.UniformInt(0, n)), rng);
}

Example PasskeyLmTask::SampleAtDepth(int n, double depth, Rng& rng) const {
  LEXP_CHECK(depth >= 0 && depth <= 1, "passkey_lm: depth outside [0, 1]");
  return Build(n, static_cast<int>(std::lround(depth * n)), rng);
}

}  // namespace lexp
