// Runs every model of a recipe (one per encoding) one after the other: a model that diverges or fails
// is recorded as such and the sweep goes on. Then draws the figures of the run directory.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "experiments/recipe.h"
#include "experiments/trainer.h"

namespace lexp {

struct SweepOptions {
  std::string out_dir;
  bool resume = false;
  bool figures = true;
  std::function<void(const std::string&)> progress;
};

std::vector<RunSummary> RunRecipe(const RecipeConfig& cfg, const SweepOptions& opt);

// The accuracy-vs-length table of a sweep (text), as printed at the end of `lexp run`.
std::string SummaryTable(const RecipeConfig& cfg, const std::vector<RunSummary>& runs);

// A run file for a model that failed before it could write its own (status "failed").
void WriteFailedRunFile(const RecipeConfig& cfg, const std::string& encoding,
                        const std::string& path, const std::string& message);

}  // namespace lexp
