// train.steps_cap: a recipe trained for at most this many optimizer steps, for checking a pipeline
// rather than reading a result (the smoke budget of lexp reproduce). The recipe's other step
// counts shrink in the same proportion, so that a schedule keeps its shape: warm-up, the progress
// and checkpoint intervals, the evaluations during training and the length schedule's phases.
#pragma once

#include "experiments/core/recipe.h"

namespace lexp {

// c with its step counts shrunk to train.steps_cap (c itself when the cap is 0 or train.steps is
// within it): train.steps becomes the cap; warmup_steps, log_every, checkpoint_every, eval_every
// and the length schedule's STEP entries are multiplied by cap / steps, rounded down, an interval
// at least 1 (0 stays 0: no warm-up, no evaluation during training) and the schedule's steps kept
// strictly increasing. train.steps_cap itself stays, so a run file records that it was capped.
RecipeConfig WithStepsCap(const RecipeConfig& c);

}  // namespace lexp
