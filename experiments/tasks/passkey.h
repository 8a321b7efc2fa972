// Passkey retrieval (Mohtashami & Jaggi 2023, arXiv:2305.16300, landmark-attention run_test.py) in
// token form: n filler tokens that cycle 0, 1, ..., 9 (the repeated "The grass is green..." text,
// cut from its start for both parts), with "KEY d1 d2 d3 d4 d5" inserted after round(depth n) of
// them, then QUERY; the answer is the five digits of K ~ U{1..50000} (zero-padded), all scored.
// Symbols: filler 0-9, key digits 10-19, KEY 20, QUERY 21; answer digits 0-9. Input n + 7 tokens.
// Training draws the insertion point uniformly in 0..n; evaluation also sweeps depth (eval.depths),
// and exact match is the passkey accuracy of each (length, depth) cell. Protocol: the original
// generates ten tokens greedily and compares the first integer in them with K; lexp decodes
// greedily too (eval.decoding = task), and its exact match also asks the model to stop after the
// five digits (the end token), a stricter reading.
#pragma once

#include "experiments/tasks/task.h"

namespace lexp {

class PasskeyTask final : public Task {
 public:
  static constexpr int kFiller = 10, kDigits = 5, kKey = 20, kQuery = 21;
  std::string Name() const override { return "passkey"; }
  // Mohtashami & Jaggi generate the continuation and compare the key it holds.
  Decoding SourceDecoding() const override { return Decoding::kGreedy; }
  int InputAlphabet() const override { return 22; }
  int OutputAlphabet() const override { return 10; }
  bool HasDepth() const override { return true; }
  int QueryTokens() const override { return 1; }  // QUERY
  Example Sample(int n, Rng& rng) const override;
  Example SampleAtDepth(int n, double depth, Rng& rng) const override;

 private:
  Example Build(int n, int prefix, Rng& rng) const;
};

}  // namespace lexp
