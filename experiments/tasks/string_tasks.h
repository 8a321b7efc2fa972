// String-transduction tasks of the Chomsky-hierarchy benchmark (Deletang et al. 2023,
// arXiv:2207.02098; Ruoss et al. 2023, arXiv:2305.16843; the Deletang et al. / Ruoss et al. task
// code) and the random-token copy of Kazemnejad et al. 2023 (arXiv:2305.19466, "cmc").
#pragma once

#include "experiments/tasks/task.h"

namespace lexp {

// copy: n tokens drawn uniformly from a pool of `vocab` tokens (default 100, as "cmc"), output =
// input.
class CopyTask final : public Task {
 public:
  explicit CopyTask(int vocab) : vocab_(vocab > 0 ? vocab : 100) {}
  std::string Name() const override { return "copy"; }
  Decoding SourceDecoding() const override { return Decoding::kGreedy; }  // Kazemnejad et al.
  int InputAlphabet() const override { return vocab_; }
  int OutputAlphabet() const override { return vocab_; }
  bool SharedAlphabet() const override { return true; }
  Example Sample(int n, Rng& rng) const override;

 private:
  int vocab_;
};

// reverse_string: n uniform bits, output = the bits reversed.
class ReverseStringTask final : public Task {
 public:
  std::string Name() const override { return "reverse_string"; }
  int InputAlphabet() const override { return 2; }
  int OutputAlphabet() const override { return 2; }
  bool SharedAlphabet() const override { return true; }
  Example Sample(int n, Rng& rng) const override;
};

// duplicate_string: n uniform bits w, output = ww (2n symbols).
class DuplicateStringTask final : public Task {
 public:
  std::string Name() const override { return "duplicate_string"; }
  int InputAlphabet() const override { return 2; }
  int OutputAlphabet() const override { return 2; }
  bool SharedAlphabet() const override { return true; }
  Example Sample(int n, Rng& rng) const override;
};

// parity_check: n uniform bits, one output class = (number of ones) mod 2.
class ParityCheckTask final : public Task {
 public:
  std::string Name() const override { return "parity_check"; }
  int InputAlphabet() const override { return 2; }
  int OutputAlphabet() const override { return 2; }
  Example Sample(int n, Rng& rng) const override;
};

}  // namespace lexp
