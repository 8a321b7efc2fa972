// Multi-digit arithmetic in the format of the length-generalization papers since 2023: every number
// written least significant digit first (reversed), as McLeish et al. 2024 (Abacus, arXiv:
// 2405.17399) write operands and answer, so that each answer digit depends on digits already seen.
// Symbols 0-9 are the digits (DigitSymbols() = 10, shared by input and output), 10 = '+', 11 = 'x'.
//  * addition_reversed: a + b, answer the sum. The requested length n is the longer operand's
//    number of digits; the other has 1..n (Shapes(n) = n: shape s gives it n - s digits), which of
//    the two comes first is drawn per example. Multi-digit operands have a non-zero leading digit.
//    The sum is written on n + 1 digits (a final 0 when nothing carries out of the top digit) so
//    that every example of a shape has one length.
//  * multiplication_reversed: a x b with a of n digits and b of 1..3 digits (Shapes(n) =
//    min(3, n): shape s gives b min(3, n) - s digits); the product on n + |b| digits.
// Operand lengths are drawn per batch, not per example: lexp batches one sequence length at a
// time (SequenceLayout draws a batch's shape in training; evaluation at n reads shape 0, both
// operands of n digits for addition, b of min(3, n) digits for multiplication, as the papers
// evaluate on the diagonal). No zero padding of the operands by default; task.padding = "zeros"
// pads the shorter operand with zeros above its top digit to the longer one's digits, as Cho et
// al. 2024 (position coupling) and Zhou et al. 2024 write them.
// Index hints (task.index_hints = H > 0; Zhou et al. 2024, "Transformers can achieve length
// generalization but not robustly", arXiv:2402.09371): every digit of the operands and the answer
// is written after a hint symbol naming its significance, 12 + o + s for significance s, the hints
// of one example consecutive from a start o ~ U{0..H - longest} (longest: its answer's digits),
// drawn per example in training and evaluation alike, so that hints past the training numbers'
// lengths are trained (as HanseulJo/position-coupling's AdditionDatasetWithIndexHints samples
// them; the reference evaluates from the first hint). The answer's hints are predicted and graded with its digits. Symbols 12..
// 11 + H are the hints; the longest number has at most H digits (MaxLength = H - 1 for addition,
// H - 3 for multiplication).
#pragma once

#include <memory>
#include <string>

#include "experiments/tasks/task.h"

namespace lexp::arithmetic {

// A task object, or nullptr when `name` is not one of the tasks above.
std::unique_ptr<Task> Create(const std::string& name, const TaskOptions& options);

// The digits of x (least significant first) and the number they write, for tests.
int64_t ValueOfReversed(const std::vector<int>& digits);

}  // namespace lexp::arithmetic
