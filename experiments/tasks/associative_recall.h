// Multi-query associative recall in the form of Zoology's `multiquery_ar` (Arora et al. 2023,
// arXiv:2312.04927), reduced to its core: n distinct keys from the lower half of the vocabulary,
// each followed by a value from the upper half ("k1 v1 ... kn vn"), then every key queried once in
// random order, each query followed by its value. Only the values after queries are scored.
// Deliberate differences from Zoology: no random filler tokens and no power-law query gaps
// (queries follow each other), and a single pass over the pairs (mqar.h has the full form).
// Requested length n = number of pairs (n <= vocab/2). Decoder layout only (queries must be read).
#pragma once

#include "experiments/tasks/task.h"

namespace lexp {

class AssociativeRecallTask final : public Task {
 public:
  explicit AssociativeRecallTask(int vocab) : vocab_(vocab > 0 ? vocab : 128) {}
  std::string Name() const override { return "associative_recall"; }
  bool HasAnswer() const override { return false; }
  int InputAlphabet() const override { return vocab_; }
  int OutputAlphabet() const override { return vocab_; }
  bool SharedAlphabet() const override { return true; }
  bool SupportsEncoder() const override { return false; }
  int MaxLength() const override { return vocab_ / 2; }
  Example Sample(int n, Rng& rng) const override;

 private:
  int vocab_;
};

}  // namespace lexp
