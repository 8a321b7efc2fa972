// Counting (Golovneva et al. 2024, CoPE, arXiv:2405.18719, section 5; the generator of the
// authors' facebookresearch/RAM projects/cope/scripts/count_data_gen.py in token form): a program
// of n statements over 3 variables, each drawn with weights set 1, pass 50 and increment 7 (of a
// variable already set, never past 10; a draw that cannot be written is drawn again), then the
// question "print v" for a variable already set; the answer is its value, the number of its
// increments since it was last set (one symbol of 0..10). A longer program holds more passes
// between the statements that count. Every statement is two tokens, so that all programs of n
// statements have one length (2n + 2 with the question): "v =" sets v to 0 (theirs "v = 0 ;", 4
// tokens), "v ++" increments (theirs "v ++;", 2), "pass ;" (theirs "pass;", 1). Symbols: variables
// 0-2, = 3, ++ 7, pass 6, ; 5, print 8 (4 unused); answer values 0-10. Also unlike the reference:
// n statements exactly (theirs a uniform number of 3..512, the sequences cut to their last 512
// tokens by its collator); 3 variables only (the paper also 1 and 5); a program whose statement
// cannot be written in 100 draws is drawn again (the reference raises); lexp's decoder also
// trains the end token after the answer (the reference trains on the answer only).
#pragma once

#include "experiments/tasks/task.h"

namespace lexp {

class CountingTask final : public Task {
 public:
  static constexpr int kVariables = 3, kMaxValue = 10;
  static constexpr int kEquals = 3, kEnd = 5, kPass = 6, kIncrement = 7, kPrint = 8;
  std::string Name() const override { return "counting"; }
  int InputAlphabet() const override { return 9; }
  int OutputAlphabet() const override { return kMaxValue + 1; }
  Example Sample(int n, Rng& rng) const override;
};

}  // namespace lexp
