// Multi-query associative recall as Zoology's `multiquery_ar` generates it (Arora et al. 2023,
// arXiv:2312.04927), with its power-law query gaps and random filler: n distinct keys from [1, V/2)
// with values from [V/2, V) written "k1 v1 ... kn vn" (input, 2n tokens), then a query region of 4n
// tokens (output): 2n slots at even offsets, key i in slot g_i (distinct slots, drawn one key at a
// time with p(g) proportional to a (g+1)^(a-1), a = 0.01, g in [0, 2n)), its value right after it
// (the only scored tokens), every other token random in [0, V). Decoder layout (the queries must be
// read). In lexp's teacher-forced layout the value, not filler, follows its key as the next input;
// each key is queried once, so this reveals no later answer.
// n <= V/2 - 1; vocab V default 256.
#pragma once

#include "experiments/tasks/task.h"

namespace lexp {

class MultiQueryRecallTask final : public Task {
 public:
  static constexpr double kPowerA = 0.01;
  explicit MultiQueryRecallTask(int vocab) : vocab_(vocab > 0 ? vocab : 256) {}
  std::string Name() const override { return "mqar"; }
  bool HasAnswer() const override { return false; }
  int InputAlphabet() const override { return vocab_; }
  int OutputAlphabet() const override { return vocab_; }
  bool SharedAlphabet() const override { return true; }
  bool SupportsEncoder() const override { return false; }
  int MaxLength() const override { return vocab_ / 2 - 1; }
  Example Sample(int n, Rng& rng) const override;

 private:
  int vocab_;
};

}  // namespace lexp
