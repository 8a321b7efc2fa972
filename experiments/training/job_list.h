// A sweep as a list of independent jobs, for running it in pieces (`lexp run --job K`, a SLURM
// array, xargs -P) and putting it back together:
//  * <run dir>/plan/ holds the frozen effective recipe (recipe.toml) that every piece reads, the
//    recipe it was made from (source.toml, source_name.txt), and the rows (plan.tsv, plan.json:
//    index, task, encoding, label, seed, sweep key and value, run file), written by `lexp plan`,
//    `lexp slurm` and a whole `lexp run`;
//  * a row's state is read from its files alone: done (run file completed), diverged, failed,
//    running (a checkpoint and no final run file: training, or killed), pending (nothing yet);
//  * collect makes from whatever run files exist what a single-process `lexp run` makes at its
//    end: the analyses' JS divergences against the NoPE reference finished after them, the
//    figures, summary.h5 of a sweep and the score tables.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "experiments/core/recipe.h"
#include "experiments/training/sweep.h"
#include "experiments/training/trainer.h"

namespace lexp {

std::string PlanDirectory(const std::string& run_dir);     // <run dir>/plan
std::string FrozenRecipePath(const std::string& run_dir);  // <run dir>/plan/recipe.toml
void WritePlanFiles(const RecipeConfig& cfg, const std::vector<PlanRow>& rows,
                    const std::string& run_dir);
// The frozen recipe of a run directory, with the name and text of the recipe it was made from
// (what run files record as their source); an input error names the directory when it has none.
RecipeConfig ReadFrozenRecipe(const std::string& run_dir);

// The rows as printed by `lexp plan`: a header, then one tab-separated line per row, index first.
std::string PlanTable(const std::vector<PlanRow>& rows);
// "3", "2-5" or "0,3,7-9" -> the row indices, in order, without repeats. Input errors name the
// text.
std::vector<size_t> ParseJobList(const std::string& text);
// The indices as --array wants them: "0-3,5,7".
std::string JobListText(const std::vector<size_t>& rows);

enum class RowState { kDone, kRunning, kFailed, kDiverged, kPending };
const char* RowStateName(RowState s);  // done, running, failed, diverged, pending

struct RowStatus {
  PlanRow row;
  RowState state = RowState::kPending;
  std::string message;  // a failed or diverged run's own message
};
std::vector<RowStatus> ReadRowStates(const std::vector<PlanRow>& rows);
// Counts per state and the indices of each (`lexp status`).
std::string StatusReport(const std::vector<RowStatus>& states);

struct CollectResult {
  std::vector<RunSummary> runs;  // every row; state "missing" where no final run file exists
  std::vector<RowStatus> states;
  std::string report;  // what was done, the tables, and the rows not done
};
CollectResult CollectSweep(const std::string& run_dir, bool figures,
                           const std::function<void(const std::string&)>& progress);

}  // namespace lexp
