// The reproduction gallery: runs a claim's stages at a budget, judges its criterion, writes its
// verdict file and figure, and the table of every verdict (REPRODUCTIONS.md).
//
// Layout under the output root (default data/reproductions):
//   <budget>/<id>_<name>/runs/<stage>/   the stage's run files (a recipe run, `lexp run` layout;
//                                        a stage that evaluates: `lexp eval` files, <label>+<rule>.h5)
//   <budget>/<id>_<name>/verdict.h5      the verdict (experiments/reproduce/verdict_file.h)
//   <budget>/<id>_<name>/figures/        reproduction.{png,gp,dat} (notebooks_cpp/18_reproduction.cc)
//   <budget>/REPRODUCTIONS.md            one row per verdict of that budget
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "experiments/core/recipe.h"
#include "experiments/reproduce/claim.h"

namespace lexp {

struct ReproduceOptions {
  std::string out_root = "data/reproductions";
  std::string budget = "smoke";  // smoke | full
  int jobs = 0;                  // run.jobs of every stage (0: the recipe's)
  bool overwrite = false;        // train every run again (default: keep completed runs)
  bool figures = true;
  // Train nothing: every planned run of a stage that trains must be complete already (made by
  // the arrays of lexp reproduce --slurm); stages that evaluate run, then the claim is judged.
  bool collect_only = false;
  std::function<void(const std::string&)> progress;
};

// The claims named by ids (each must be one of BuiltinClaims()), in the order given; an input
// error lists the ids.
std::vector<Claim> SelectClaims(const std::vector<std::string>& ids);

// The smoke budget checks the pipeline; it reads nothing. After a stage's own smoke overrides it
// trains at most kSmokeSteps steps (train.steps_cap: the recipe's schedule shrunk in proportion),
// the first kSmokeSeeds seeds, evaluates at most kSmokeEvalSamples sequences per length and draws
// the claim's figure only (not each run directory's: lexp figures DIR draws them), so that every
// claim of the gallery runs end to end (train, fine-tune, evaluate, judge, draw) in seconds. Its
// verdicts are printed and tabled as a pipeline check, not as evidence for or against a claim.
constexpr int kSmokeSteps = 30;
constexpr int kSmokeSeeds = 2;  // two, so that a comparison over seeds still has an interval
constexpr int kSmokeEvalSamples = 16;
// The overrides that cap a stage's recipe at the smoke budget.
std::vector<std::string> SmokeCaps(const RecipeConfig& cfg);
// What precedes a verdict where it is printed: at the smoke budget, that it is a pipeline check.
std::string SmokeMark(const std::string& budget);
// Whether the stages' run directories get their figures (not at the smoke budget).
bool DrawsStageFigures(const ReproduceOptions& opt);

// The recipe of one stage at a budget, with train.init_from set from an earlier stage; `claim_dir`
// holds the runs.
RecipeConfig StageRecipe(const Claim& claim, const ClaimStage& stage, const std::string& budget,
                         const std::string& claim_dir);

// Every stage's recipe at a budget, checked (input errors name the claim and the stage); for a
// stage that evaluates, the evaluated stage's recipe with the evaluation's overrides.
std::vector<RecipeConfig> StageRecipes(const Claim& claim, const std::string& budget,
                                       const std::string& claim_dir);

// Refuses, before anything trains, a criterion that names a run label (in holds or also) or a task
// that the criterion's stage does not write at this budget, listing the labels it does: the
// labels of the stages' plans (`recipes`, from StageRecipes), seeds grouped, and for a stage that
// evaluates its sources' labels with the name each rule adds (EvaluationNameSuffix).
void CheckCriterionNamesPlannedRuns(const Claim& claim, const std::vector<RecipeConfig>& recipes,
                                    const std::string& budget, const std::string& claim_dir);

// <out_root>/<budget>/<id>_<name>.
std::string ClaimDir(const Claim& claim, const ReproduceOptions& opt);

// Where a claim's runs go at a budget: its own directory, and for each other step count of its
// trend <claim dir>/steps<N>/ with the trend stage's train.steps set; each with every stage's
// recipe (StageRecipes), checked before anything trains.
struct ClaimRoot {
  int steps = 0;       // the trend stage's steps (0 without a trend)
  bool budget = true;  // the budget's own point (the claim directory)
  std::string dir;
  std::vector<RecipeConfig> recipes;
};
std::vector<ClaimRoot> PlanClaimRoots(const Claim& claim, const std::string& budget,
                                      const std::string& claim_dir);

// Runs the stages (each finished run kept unless overwrite), judges, writes verdict.h5 and the
// figure; returns the verdict file's path.
std::string ReproduceClaim(const Claim& claim, const ReproduceOptions& opt);

// A score as the table prints it: 3 decimals, or 2 significant digits when 3 decimals would read
// 0.000 or 0.001 for a value that is not (fp32 moves of 1e-6, say); sign: "+" before positives.
std::string ScoreText(double x, bool sign = false);

// Regenerates the table of every verdict.h5 under budget_dir, at table_path (default
// <budget_dir>/REPRODUCTIONS.md; the full budget's is also written at the top of the checkout),
// figures linked relative to it; returns its path.
std::string WriteGalleryTable(const std::string& budget_dir, const std::string& table_path = "");

}  // namespace lexp
