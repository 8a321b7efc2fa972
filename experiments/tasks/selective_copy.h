// Selective copying (Gu & Dao 2023, Mamba, arXiv:2312.00752, section 3.1; one of the tasks
// Golovneva et al. 2024 use for CoPE, arXiv:2405.18719): an input of n symbols holds K tokens of
// [0, V) at random distinct places and the blank symbol V everywhere else; the answer is the K
// tokens in order, all scored. K = task.copy_tokens (default 8) is the same at every length, so a
// longer input is a sparser one: evaluating past the training lengths is the sparse test
// distribution. In the decoder layout (input SEP answer), the query predicting answer token k
// (1-based) sees the key it must copy as the (K + 1)-th non-blank token back, both ends counted
// (input tokens k..K, the separator, the k - 1 tokens written): a position that counts non-blank
// tokens (CoPE) is the same at every length, a token distance is not. n >= K; vocab V default 16.
// Differences: CoPE's paper tests one denser and one sparser input than it trains on (reported as
// the same tokens among fewer and more blanks; not checked against the paper's text); with K fixed,
// lexp's shorter lengths are the denser inputs, inside the training range, and only the sparse side
// lies beyond it. Mamba asks for the answer with K marker tokens; lexp's decoder reads its own
// answer tokens back (teacher forced in training, greedy in evaluation).
#pragma once

#include "experiments/tasks/task.h"

namespace lexp {

class SelectiveCopyTask final : public Task {
 public:
  static constexpr int kDefaultTokens = 8, kDefaultVocab = 16;
  SelectiveCopyTask(int vocab, int tokens);
  std::string Name() const override { return "selective_copy"; }
  int InputAlphabet() const override { return vocab_ + 1; }  // tokens and the blank
  int OutputAlphabet() const override { return vocab_; }
  bool SharedAlphabet() const override { return true; }
  int MinLength() const override { return tokens_; }
  Example Sample(int n, Rng& rng) const override;
  int blank() const { return vocab_; }
  int tokens() const { return tokens_; }

 private:
  int vocab_, tokens_;
};

}  // namespace lexp
