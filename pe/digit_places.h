// Embeddings of each digit's place in its number: a learned table indexed by the place, added to
// the token embedding, with a random offset of the places in training so that rows far beyond the
// training numbers' lengths are trained. Two rules of the literature share this mechanism:
//  * abacus: McLeish et al. 2024, "Transformers can do arithmetic with the right embeddings",
//    arXiv:2405.17399 (reference: mcleish7/arithmetic abacus.py);
//  * position_coupling: Cho et al. 2024, "Position coupling: improving length generalization of
//    arithmetic transformers using task structure", arXiv:2405.20671 (reference:
//    HanseulJo/position-coupling src/data/addition.py, AdditionDatasetWithCoupledPositions).
// With every number written least significant digit first (experiments/tasks/arithmetic.h), a
// digit's place r_t in its run of consecutive digits (1 for the first written) is its significance
// + 1, so digits of equal significance share a row across operands and answer:
//   abacus:            e_t = P[0]        if token t is not a digit,  P[k + r_t] otherwise
//   position_coupling: e_t = P[k + r_t]  (r_t = 0 for every non-digit token)
// k ~ U{0..max} per training batch (max_k, max_start), 0 in evaluation. Coupling gives a non-digit
// token (the operator, the separator before the answer) the id just below its number's least
// significant digit, as the reference gives '+' and '=' the id next to the units digit; so the
// token that predicts an answer digit (the separator, or the digit one place below) carries the id
// next to that digit's, as in the reference. Abacus numbers non-digits row 0 (its padding row).
// Both draw one k per batch; the reference draws coupling's start per example, from a range that
// narrows with the example's length (1..max_position - max_len - 1).
// Site 1 carries k as the positions k..k+T-1 (0..T-1 in evaluation); attention reads no position
// (NoPE, as both papers' main models). The table holds `rows` rows whatever the evaluation
// lengths, so a trained table is read by any evaluation; a place past it is refused. Digit tokens
// come from the task (Task::DigitSymbols); a task without digits is refused, and so is the encoder
// layout (its answer slots are blanks, not digits).
#pragma once

#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// r_t of every token of one sequence: 0 for a non-digit, 1 + the digits directly before it else.
std::vector<int> DigitPlaces(const int* tokens, int T, int digits);

enum class DigitPlaceRule { kAbacus, kCoupling };

// Options of `abacus` and `position_coupling` (pe/options.h): the largest training offset is
// named max_k by abacus and max_start by position_coupling.
struct DigitPlaceOptions {
  DigitPlaceRule rule = DigitPlaceRule::kAbacus;
  int max_offset = 99;
  int rows = 1024;
  double init_std = 1.0;
  std::vector<OptionField> Fields() {
    const bool abacus = rule == DigitPlaceRule::kAbacus;
    return {{.name = abacus ? "max_k" : "max_start",
             .help = abacus ? "largest training offset k of the digits' places (one k ~ "
                              "U{0..max_k} per batch)"
                            : "largest training start k of the coupled ids (one k ~ "
                              "U{0..max_start} per batch; the reference's range for its 30-digit "
                              "additions, max_position 202 = 200 + 2 digits)",
             .value = &max_offset, .lo = 0},
            {.name = "rows",
             .help = abacus ? "table rows: places up to rows - 1 (the reference's max_seq_length)"
                            : "table rows: ids up to rows - 1 (the reference's n_positions is 256)",
             .value = &rows, .lo = 2},
            {.name = "init_std", .help = "standard deviation of the initial table",
             .value = &init_std, .lo = 0}};
  }
};

template <typename S>
class DigitPlaceEmbedding final : public PositionEncoding<S> {
 public:
  DigitPlaceEmbedding(const EncodingShape& shape, const DigitPlaceOptions& opt);
  std::string Name() const override { return name_; }
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
  DigitPlaceRule rule_;
  std::string name_, offset_key_;  // "abacus" / "max_k", "position_coupling" / "max_start"
  Mat<S> table_, d_table_;         // [rows, C]
  int digits_, max_offset_;
  double init_std_;
  long offset_ = 0;  // k of the pass being computed (from its first position id)
  std::vector<int> rows_;
};

}  // namespace lexp
