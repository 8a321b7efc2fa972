// Runs every model of a recipe, one per (task, seed, encoding), one after the other: a model that
// diverges or fails is recorded as such and the sweep goes on. A task sweep (task.names) puts each
// task in <out>/<task>/; a seed sweep (run.seeds) names files <encoding>-seed<s>.h5. Then draws the
// figures of every run directory and, for sweeps, writes <out>/summary.h5 (SweepScores) and its
// score-table figure.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "experiments/core/recipe.h"
#include "experiments/training/trainer.h"

namespace lexp {

struct SweepOptions {
  std::string out_dir;
  bool resume = false;     // continue interrupted models, keep finished ones
  bool overwrite = false;  // train every model again even where its run file exists
  bool figures = true;
  std::function<void(const std::string&)> progress;
  // `lexp run --job`: only these rows of the plan (SweepPlan), each skipped when its run file is
  // complete and resumed from its checkpoint when interrupted; no figures or summary (`lexp
  // collect` makes them once every row is done). Empty: the whole sweep.
  std::vector<size_t> rows;
};

// One row of a sweep's job list: an independent model, numbered from 0 in the order a sequential
// sweep trains them (per task, per seed, per key-sweep value: NoPE first, then the encodings).
struct PlanRow {
  size_t index = 0;
  std::string task, encoding, label;  // label: the encoding plus the key-sweep suffix
  int seed = 0;
  std::string sweep_key, sweep_value;  // empty without run.sweep
  std::string file;                    // its run file
  std::string recipe;                  // the row's recipe as TOML (RecipeToToml), as its file holds it
};
std::vector<PlanRow> SweepPlan(const RecipeConfig& cfg, const std::string& out_dir);

std::vector<RunSummary> RunRecipe(const RecipeConfig& cfg, const SweepOptions& opt);

// How many of the sweep's `models` train at once: run.jobs when set, else (run.jobs = 0) one per
// thread of ThreadLimit::Active(), as many as memory holds. Packing wins on every model size lexp
// benches (two one-thread models against one two-thread model, AMD EPYC Zen 5, 2 cores: T 1.43x,
// S 1.10x the tokens per second), so it is the default; the last models of a sweep that does not
// divide evenly run one at a time on all threads instead of leaving a thread idle.
int SweepJobs(const RecipeConfig& cfg, size_t models);

// The accuracy-vs-length table of a sweep (text), as printed at the end of `lexp run`.
std::string SummaryTable(const RecipeConfig& cfg, const std::vector<RunSummary>& runs);

// ScoreEvalRows (trainer.h) of a run; all NaN when the run did not complete.
ProtocolScores ScoresOf(const RunSummary& r, int train_max_length);

// Writes <out>/summary.h5 (layout in data/README.md) and returns its path.
std::string WriteSweepSummary(const RecipeConfig& cfg, const std::vector<RunSummary>& runs,
                              const std::string& out_dir);
// Per task, per encoding: mean, spread and max over seeds of the Ruoss score (text).
std::string SeedSummaryTable(const RecipeConfig& cfg, const std::vector<RunSummary>& runs);

}  // namespace lexp
