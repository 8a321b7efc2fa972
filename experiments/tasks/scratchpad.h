// Scratchpads (Kazemnejad et al. 2023, arXiv:2305.19466, section 6): the answer is preceded by the
// steps of its computation, which the model is trained to write; evaluation grades the final answer
// only. The paper switches five components of a step on and off; lexp writes them in token form,
// each after a marker token, for the tasks whose computation is a left-to-right pass:
//
//   summation (v_1 ... v_n, answer s_n = sum mod 10), step k, state s_k = (s_{k-1} + v_k) mod 10:
//   parity    (bits b_1 ... b_n, answer 1 when the count of ones is even), state p_k = parity so
//   far:
//     STEP, then for each component switched on
//       i  input:          I v_k                       (I b_k)
//       c  computation:    C s_{k-1} PLUS v_k          (C p_{k-1} PLUS b_k)
//       o  output:         O (s_{k-1} + v_k) mod 10     (O p_k)
//       v  variable update: V s_k                      (V p_k)
//       r  remaining input: R v_{k+1} ... v_n          (R b_{k+1} ... b_n)
//   then ANS and the answer. s_0 = p_0 = 0. For summation the output and the updated variable hold
//   the same digit (the sum is its own state), as in the paper's summation scratchpad.
//
//   addition (a + b on n digits each, answer the n + 1 digits of the sum), from the least
//   significant digit j = n-1 down to 0, carry c_n = 0:
//       i  I a_j b_j      c  C a_j PLUS b_j PLUS c_(j+1)      o  O (a_j + b_j + c_(j+1)) mod 10
//       v  V c_j (the carry out)      r  R a_0 ... a_(j-1) b_0 ... b_(j-1)
//   then ANS and the n + 1 digits of the sum, all graded.
//
//   sort (n items, answer them ascending), selection sort: step k
//       i  I u_k (the front of the unsorted portion)   c  C (the portion's minimum: a marker only)
//       o  O min                                       r  R the unsorted portion after the swap
//
//   lego (clauses x_i s x_{i-1}, x_0 s ONE, query x_q), every clause in chain order: step i
//       i  I x_i      c  C s_i x_{i-1} s_i value(x_{i-1})  (C alone for x_0)
//       o  O value(x_i)      r  R the clauses after x_i's
//   sort and lego have no variable to update ('v' is refused for them, as in the paper's code);
//   lego's steps resolve every clause, not only those up to x_q, so that one n has one length.
//
// Output symbols: the task's own answer symbols (for lego then its variables, signs and ONE), then
// the markers STEP I C O V R PLUS ANS; a task that shares its input and answer symbols (sort)
// gets the markers in its input alphabet too. Every
// step token is scored (trained on), only the answer is graded (Example::output_graded). A
// scratchpad has the same length for every example of one n (n steps), so batches keep one shape.
// Deviations from the paper: markers are single tokens instead of words ("Input:", "carry ="), and
// the components' order inside a step is fixed (i c o v r).
#pragma once

#include <memory>
#include <string>

#include "experiments/tasks/task.h"

namespace lexp {

// The tasks a scratchpad is defined for.
std::string ScratchpadTasks();  // "addition, summation, parity, sort, lego"

// True when `components` is a subset of "icovr" written in that order, not empty.
bool ValidScratchpadComponents(const std::string& components);

// `base` with a scratchpad of the given components before its answer; input errors name the
// recipe key task.scratchpad and what is allowed.
std::unique_ptr<Task> WithScratchpad(std::unique_ptr<Task> base, const std::string& components);

}  // namespace lexp
