// Prompt compression in the spirit of LLMLingua (Jiang et al. 2023, arXiv:2310.05736): before the
// model reads a prompt, the context tokens that a small language model finds least surprising are
// dropped. Here the task's input minus its query tokens (Task::QueryTokens) is the context; a
// compression ratio r keeps K = C - round(r C) of its C tokens, those with the largest surprisal
// -ln p(x_t | x_<t) under the language model (ties: the earlier token), in their order, then the
// query. The answer is the base task's. Deviations: one pass of token-level surprisal over the
// whole context, no budget controller, segments or iterative compression, and the compressor is a
// small model trained on the task's own prompts (train.score_input) rather than a general LM.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "experiments/tasks/task.h"

namespace lexp {

// The surprisal of every symbol of an input under the compressor, [input.size()].
using InputSurprisal = std::function<std::vector<double>(const std::vector<int>& input)>;

// The indices of `input` a compression at `ratio` keeps (in order): the query tokens (the last
// `query`), and the K most surprising of the others.
std::vector<int> KeptInput(const std::vector<double>& surprisal, int query, double ratio);

// `base` with every sampled input compressed at `ratio` (0 <= ratio < 1).
std::unique_ptr<Task> WithCompressedPrompt(std::unique_ptr<Task> base, double ratio,
                                           InputSurprisal surprisal);

}  // namespace lexp
