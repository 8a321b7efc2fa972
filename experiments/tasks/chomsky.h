// The Chomsky-hierarchy tasks of Deletang et al. 2023 (arXiv:2207.02098) as used by Ruoss et al.
// 2023 (arXiv:2305.16843), exactly as their randomized_positional_encodings code (commit e8c6474)
// defines them. parity_check, reverse_string and
// duplicate_string live in string_tasks.h. Each Sample* function returns one example for requested
// length n; symbol ids are listed per task. Token accuracy is scored on the output positions marked
// in output_scored (the termination masks of stack_manipulation and the binary arithmetic tasks).
// Deviations from the reference, on purpose:
//  * modular_arithmetic_brackets and solve_equation list only the symbols they use (10 and 11); the
//    reference one-hot vectors carry unused symbols.
//  * solve_equation scans right from a random start for the digit to hide and wraps around to the
//    start when it reaches the end (the sources leave the end case open).
//  * binary numbers are unbounded (the reference relies on Python integers too); 0 is written "0".
//  * binary_multiplication pads its output to n + 1 for n <= 2, where the single number plus the
//    termination symbol would not fit in n.
#pragma once

#include <memory>
#include <string>

#include "experiments/tasks/task.h"

namespace lexp::chomsky {

// Regular.
Example EvenPairs(int n, Rng& rng);          // in {0,1}; out {0,1}: (#adjacent unequal) mod 2
Example ModularArithmetic(int n, Rng& rng);  // in 0-4 digits, 5 +, 6 -, 7 *, 8 _ ; out 0-4
Example CycleNavigation(int n, Rng& rng);    // in 0 left, 1 stay, 2 right; out position mod 5
// Deterministic context-free.
Example StackManipulation(int n, Rng& rng);  // in 0, 1, 2 POP, 3 PUSH0, 4 PUSH1; out 0, 1, 2 end
Example ModularArithmeticBrackets(int n, Rng& rng);  // in 0-4, 5 +, 6 -, 7 *, 8 (, 9 ); out 0-4
Example SolveEquation(int n, Rng& rng);  // in 0-4, 5 +, 6 -, 7 (, 8 ), 9 x, 10 =; out 0-4
// Context-sensitive.
Example MissingDuplicateString(int n, Rng& rng);  // in 0, 1, 2 missing, 3 pad; out {0,1}
Example OddsFirst(int n, Rng& rng);               // in {0,1}; out the odd-index bits, then the even
Example BinaryAddition(int n, Rng& rng);          // in 0, 1, 2 +; out 0, 1, 2 end (little-endian)
Example BinaryMultiplication(int n, Rng& rng);    // in 0, 1, 2 x; out 0, 1, 2 end (little-endian)
Example ComputeSqrt(int n, Rng& rng);             // in {0,1} big-endian; out floor(sqrt) big-endian
Example BucketSort(int n, Rng& rng);              // in 0-4; out sorted

// Value mod 5 of a token expression of modular_arithmetic(_brackets) (digits 0-4, 5 +, 6 -, 7 *,
// 8 (, 9 )), with * before + and -, and unary minus; the result is in 0..4.
int EvaluateMod5(const std::vector<int>& tokens);

// A task object for the registry; nullptr when `name` is not a Chomsky task defined here.
std::unique_ptr<Task> Create(const std::string& name);

}  // namespace lexp::chomsky
