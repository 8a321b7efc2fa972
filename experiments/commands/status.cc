// lexp status RUN_DIR: the rows of a planned sweep that are done, running, failed, diverged or
// pending.
#include <fmt/core.h>

#include <cstdio>

#include "experiments/commands/command.h"
#include "experiments/training/job_list.h"
#include "experiments/training/sweep.h"

namespace lexp::cli {
namespace {

class StatusCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* status = app.add_subcommand(
        "status", "count a run directory's rows that are done, running, failed, diverged, pending");
    status->add_option("RUN_DIR", dir_, "a run directory with a plan (lexp plan/slurm/run)")
        ->required();
    return status;
  }
  int Run(Shared&) override {
    const RecipeConfig c = ReadFrozenRecipe(dir_);
    const auto states = ReadRowStates(SweepPlan(c, dir_));
    PrintLine(fmt::format("{}: {} rows (recipe {})", dir_, states.size(), FrozenRecipePath(dir_)));
    std::fputs(StatusReport(states).c_str(), stdout);
    return 0;
  }

 private:
  std::string dir_;
};

}  // namespace

std::unique_ptr<Command> MakeStatusCommand() { return std::make_unique<StatusCommand>(); }

}  // namespace lexp::cli
