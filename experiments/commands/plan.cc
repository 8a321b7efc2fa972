// lexp plan [RECIPE]: a recipe's sweep as a job list, one row per model
// (experiments/training/job_list.h).
#include <fmt/core.h>

#include <cstdio>

#include "experiments/commands/command.h"
#include "experiments/training/job_list.h"
#include "experiments/training/sweep.h"

namespace lexp::cli {
namespace {

class PlanCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* plan = app.add_subcommand(
        "plan", "list the independent models (rows) of a recipe's sweep, for lexp run --job");
    recipe_option_ =
        plan->add_option("RECIPE", recipe_, "TOML recipe (default: the embedded default recipe)");
    plan->add_option("--set", sets_, "override a recipe key, as for lexp run")->take_all();
    plan->add_option("--out", out_,
                     "run directory (default: data/runs/<run.name>); the plan goes to DIR/plan/ "
                     "(recipe.toml, the frozen recipe every job reads; plan.tsv; plan.json)");
    plan->footer(
        "Each printed line starts with the row's index: index, task, encoding, label (encoding "
        "and key-sweep suffix), seed, sweep key and value, run file. Run rows with\n"
        "  lexp run DIR/plan/recipe.toml --out DIR --job K\n"
        "e.g. on a machine without a scheduler: seq 0 N-1 | xargs -P 4 -I{} lexp --threads 1 run "
        "DIR/plan/recipe.toml --out DIR --job {}");
    return plan;
  }
  int Run(Shared&) override {
    const RecipeConfig c = LoadRecipe(recipe_option_->count() > 0, recipe_, sets_);
    const std::string dir = out_.empty() ? DefaultRunDir(c) : out_;
    const auto rows = SweepPlan(c, dir);
    WritePlanFiles(c, rows, dir);
    std::fputs(PlanTable(rows).c_str(), stdout);
    PrintLine(fmt::format("plan: {} rows; written to {}/ (recipe.toml, plan.tsv, plan.json)",
                          rows.size(), PlanDirectory(dir)));
    return 0;
  }

 private:
  CLI::Option* recipe_option_ = nullptr;
  std::string recipe_, out_;
  std::vector<std::string> sets_;
};

}  // namespace

std::unique_ptr<Command> MakePlanCommand() { return std::make_unique<PlanCommand>(); }

}  // namespace lexp::cli
