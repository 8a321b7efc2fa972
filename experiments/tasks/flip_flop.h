// Flip-flop language modelling (Liu et al. 2023, "Exposing attention glitches with flip-flop
// language modeling", arXiv:2306.00946; one of the tasks of CoPE's paper, Golovneva et al. 2024):
// n instruction-data pairs over {w, r, i} x {0, 1}; the first instruction writes, the last reads,
// the others are i.i.d. write / read / ignore with probabilities ((1 - p) / 2, (1 - p) / 2, p);
// the bit after a write or an ignore is uniform, the bit after a read is the last written bit.
// Only the read bits are deterministic, and only they are scored (their paper's error on the
// read positions; exact match is a sequence without a glitch). Three distributions, as theirs:
// flip_flop p = 0.8 (training, FFL(0.8)), flip_flop_sparse p = 0.98 (long gaps between a write
// and its reads), flip_flop_dense p = 0.1. Decoder only: the first pair is the input, the rest the
// output stream, teacher forced. Symbols: 0, 1 bits; 2 w; 3 r; 4 i. n >= 2. Differences: their
// sequences are 512 tokens (256 pairs), lexp's lengths are a recipe's; lexp's layout puts its
// separator after the first pair; lexp trains on the read bits only (the scored tokens).
#pragma once

#include <string>

#include "experiments/tasks/task.h"

namespace lexp {

class FlipFlopTask final : public Task {
 public:
  static constexpr int kWrite = 2, kRead = 3, kIgnore = 4;
  FlipFlopTask(std::string name, double ignore);
  std::string Name() const override { return name_; }
  bool HasAnswer() const override { return false; }
  bool SupportsEncoder() const override { return false; }
  int InputAlphabet() const override { return 5; }
  int OutputAlphabet() const override { return 5; }
  bool SharedAlphabet() const override { return true; }
  std::string Family() const override { return "flip_flop"; }
  int MinLength() const override { return 2; }
  Example Sample(int n, Rng& rng) const override;
  double ignore() const { return ignore_; }

 private:
  std::string name_;
  double ignore_;
};

}  // namespace lexp
