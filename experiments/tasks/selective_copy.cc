#include "experiments/tasks/selective_copy.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "nn/check.h"

namespace lexp {

SelectiveCopyTask::SelectiveCopyTask(int vocab, int tokens)
    : vocab_(vocab > 0 ? vocab : kDefaultVocab), tokens_(tokens > 0 ? tokens : kDefaultTokens) {
  LEXP_INPUT_CHECK(vocab_ >= 2, "selective_copy: task.vocab must be >= 2 tokens to copy, got " +
                                    std::to_string(vocab_));
}

Example SelectiveCopyTask::Sample(int n, Rng& rng) const {
  LEXP_INPUT_CHECK(n >= tokens_, "selective_copy: length " + std::to_string(n) + " cannot hold " +
                                     std::to_string(tokens_) +
                                     " tokens to copy (task.copy_tokens); lengths start at " +
                                     std::to_string(tokens_));
  // K distinct places of n, uniformly: the first K of a partial Fisher-Yates shuffle, sorted.
  std::vector<int> places(n);
  std::iota(places.begin(), places.end(), 0);
  for (int i = 0; i < tokens_; ++i) std::swap(places[i], places[rng.UniformInt(i, n - 1)]);
  places.resize(tokens_);
  std::sort(places.begin(), places.end());
  Example e;
  e.input.assign(n, vocab_);
  for (int p : places) {
    const int token = static_cast<int>(rng.UniformInt(0, vocab_ - 1));
    e.input[p] = token;
    e.output.push_back(token);
  }
  e.output_scored.assign(e.output.size(), 1);
  return e;
}

}  // namespace lexp
