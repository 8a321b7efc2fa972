// Abacus embeddings (McLeish et al. 2024, "Transformers can do arithmetic with the right
// embeddings", arXiv:2405.17399; reference: mcleish7/arithmetic abacus.py). A learned table indexed
// by each digit's place in its run of consecutive digits (1 for a number's first written digit,
// which in the reversed format is its least significant), so digits of equal significance share a
// vector across operands and answer; every non-digit token reads row 0. In training the digits'
// indices are shifted by one offset k ~ U{0..max_k} per batch (the paper's max_k = 99), so rows
// far beyond the training numbers' lengths are trained:
//   e_t = P[0]                  if token t is not a digit
//   e_t = P[k + r_t]            r_t = 1 + the number of digits directly before t in its run
// Site 1 carries k as the positions k..k+T-1 (0..T-1 in evaluation, k = 0); attention reads no
// position (NoPE, as the paper's Abacus models without FIRE). The table holds `rows` rows (the
// reference's max_seq_length, 1024), whatever the evaluation lengths, so a trained table is read
// by any evaluation; a place past it is refused. Digit tokens come from the task (Task::DigitSymbols); a task
// without digits is refused, and so is the encoder layout (its answer slots are blanks, not digits).
#pragma once

#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// r_t of every token of one sequence: 0 for a non-digit, 1 + the digits directly before it else.
std::vector<int> DigitPlaces(const int* tokens, int T, int digits);

template <typename S>
class Abacus final : public PositionEncoding<S> {
 public:
  Abacus(const EncodingShape& shape, const EncodingOptions& opt);
  std::string Name() const override { return "abacus"; }
  unsigned Sites() const override { return kSitePositionIds | kSiteEmbedding; }
  void PositionIds(int T, bool training, Rng& rng, std::vector<double>& pos) const override;
  void Prepare(const std::vector<double>& pos, double max_distance) override;
  void Init(Rng& rng) override;
  void AddEmbedding(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                    Mat<S>& x) override;
  void EmbeddingBackward(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                         Mat<S>& d_x) override;
  std::vector<ParamRef<S>> Parameters() override;
  bool EmbeddingReadsEarlierTokens() const override { return true; }

 private:
  // The table row of every token of the batch (B sequences of tokens.size() / B).
  const std::vector<int>& Rows(const std::vector<int>& tokens, int B);
  Mat<S> table_, d_table_;  // [rows, C]
  int digits_, max_k_;
  double init_std_;
  long offset_ = 0;  // k of the pass being computed (from its first position id)
  std::vector<int> rows_;
};

}  // namespace lexp
