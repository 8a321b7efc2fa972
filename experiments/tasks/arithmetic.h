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
// evaluate on the diagonal). No zero padding of the operands.
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
