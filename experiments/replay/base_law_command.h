// `lexp base-law RUN_DIR`: the RoPE base-scaling law measured against its prediction (Liu et al.
// 2023). For every completed rope run of the directory, whatever its source (the recipes
// experiments/recipes/base_law*.toml sweep encoding_options.rope.base on the lookback_lm source):
// the measured extrapolation limit (the longest evaluated sequence, in tokens, up to which every
// score beyond the training length stays within `tolerance` of the score at the longest evaluated
// length <= N; analysis/base_law.h) next to the predicted T_extra = 2 pi b^(d_extra/d) (bases
// >= 10^4; d_extra of the pre-training base, 10^4 for runs from scratch, at the positions training
// showed), and a fit of ln(limit) on ln(base) over the learnt runs at bases >= 10^4, runs from
// scratch and fine-tuned runs apart, with each limit as the interval the evaluation grid gives
// (right-censored runs and immediate failures included; analysis/censored_regression.h), with its
// 95% interval, against the predicted exponent. The score (`criterion`): "loss", "token_accuracy",
// "exact_match", or "auto" (the default): a task with an answer (copy and the other algorithmic
// tasks, whose loss at the training length is near 0, so a relative tolerance on it fails at the
// first longer length) is read by its token accuracy, a language-modelling source by its loss; the
// table and the file say which each run used. A run counts as learnt when its score at the
// reference length shows the task was learnt (loss: below 0.95 x the loss at the shortest length;
// accuracy: at least 0.5). Writes <RUN_DIR>/base_law.h5 and returns the table as text.
#pragma once

#include <string>

namespace lexp {

std::string WriteBaseLaw(const std::string& run_dir, double tolerance,
                         const std::string& criterion = "auto");

}  // namespace lexp
