// Retrieval against the compression of the prompt (experiments/tasks/compressed_prompt.h): a
// trained run evaluated again on its own evaluation sequences (those /eval scored), each prompt's
// context compressed at every ratio by the surprisal of a small language model of the task's
// prompts (a run trained with train.score_input = 1 on the same task). Ratio 0 reproduces /eval.
// `lexp compress RUN --lm LM_RUN` writes /analysis/prompt_compression into RUN and draws
// figures/prompt_compression.
#pragma once

#include <string>
#include <vector>

#include "nn/io/hdf5.h"

namespace lexp {

struct PromptCompression {
  std::string lm_file;
  std::string decoding;
  int train_tokens = 0;  // the run's longest training input (task length N)
  std::vector<double> ratios;
  std::vector<int> lengths;
  // [ratio, length]: exact match and token accuracy of the answer (under the run's decoding), and
  // the prompt's input tokens after compression.
  std::vector<double> exact_match, token_accuracy, input_tokens;
};

// lengths empty: the run's evaluation lengths.
PromptCompression MeasurePromptCompression(const std::string& run_file,
                                           const std::string& lm_file,
                                           const std::vector<double>& ratios,
                                           const std::vector<int>& lengths);

// Writes /analysis/prompt_compression (replacing an earlier one) and returns report lines.
std::string WritePromptCompression(const PromptCompression& pc, const h5::Group& analysis);

}  // namespace lexp
