// The tasks of Kazemnejad et al. 2023 ("The impact of positional encoding on length
// generalization", arXiv:2305.19466) in token form: no natural-language prompt or tokenizer, every
// symbol one token. Formats (n = the requested length):
//  * copy variants, items from a pool of `vocab` tokens (default 100) plus NEXT = vocab:
//      copy_rsc     one token repeated n times, copied            out: n
//      copy_rsc2x   the same, written twice                       out: 2n
//      copy_rdc     token A repeated n times -> token B n times    out: n (A != B)
//      copy         (cmc) n random tokens copied, string_tasks.h  out: n
//      copy_cmc2x   random tokens -> src NEXT src                 out: 2n + 1
//      reverse_mc   random tokens -> reversed                     out: n
//      reverse_mc2x random tokens -> rev NEXT rev                 out: 2n + 1
//      reverse_mcrv random tokens -> rev NEXT src                 out: 2n + 1
//  * addition: n-digit operands a, b (a has exactly n digits, b has 1..n digits, order random),
//    most significant digit first; input a + b with both written on n digits (leading zeros) and
//    the sum on n + 1 digits, so every example of one length has one shape (lexp batches a length
//    at a time); symbols 0-9, 10 = '+'.
//  * summation: v1 + v2 + ... + vn with v_i ~ U{1..9}; answer the sum mod 10 (one digit).
//  * sort: n items from a pool of `vocab` tokens (default 50, as "sngd"), sorted ascending.
//  * lego: n variables x_0..x_{n-1} (distinct tokens of 26); clauses "x_0 s ONE" and "x_i s
//  x_{i-1}"
//    (s = + or -) in chain order, then QUERY x_q with q from the second half of the chain; answer
//    the sign of x_q (0 = -1, 1 = +1). Input 3n + 2 tokens. Clauses are not permuted.
//  * parity: n random bits; answer 1 ("Yes") when the number of ones is even, else 0 (the Chomsky
//    parity_check answers the count mod 2, the opposite label).
// Protocol of the paper: the model writes its answer by greedy decoding until its end token (T5's
// </s>), and a test example counts when the whole answer is exact; train lengths up to N, test
// lengths N+1..2N. These tasks (and `copy`) therefore default to eval.decoding = greedy, and the
// decoder layout ends every answer with the end token.
#pragma once

#include <memory>
#include <string>

#include "experiments/tasks/task.h"

namespace lexp::kazemnejad {

// A task object, or nullptr when `name` is not one of the tasks above.
std::unique_ptr<Task> Create(const std::string& name, const TaskOptions& options);

}  // namespace lexp::kazemnejad
