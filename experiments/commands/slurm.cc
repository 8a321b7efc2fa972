// lexp slurm [RECIPE | RUN_DIR --resubmit]: a recipe's sweep as a SLURM job array and its collect
// job (experiments/training/slurm.h).
#include "experiments/training/slurm.h"

#include <filesystem>

#include "experiments/commands/command.h"
#include "nn/check.h"

namespace lexp::cli {
namespace {

class SlurmCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* slurm = app.add_subcommand(
        "slurm", "write (and with --submit, submit) a recipe's sweep as a SLURM job array");
    target_option_ = slurm->add_option(
        "RECIPE_OR_RUN_DIR", target_,
        "TOML recipe (default: the embedded default recipe), or with --resubmit the run "
        "directory");
    slurm->add_option("--set", sets_, "override a recipe key, as for lexp run")->take_all();
    slurm->add_option("--out", out_, "run directory (default: data/runs/<run.name>)");
    AddSlurmOptions(slurm, o_);
    slurm->add_flag("--submit", o_.submit, "submit the array and the collect job (sbatch)");
    slurm->add_flag("--resubmit", resubmit_,
                    "with RUN_DIR: submit only the rows not done (missing, killed or failed), "
                    "then collect again");
    slurm->footer(
        "Writes RUN_DIR/plan/ (the frozen recipe and the rows), RUN_DIR/slurm/sweep.sbatch (a job "
        "array, one task per row, logs in RUN_DIR/slurm/logs/%A_%a.out) and "
        "RUN_DIR/slurm/collect.sbatch (lexp collect, after the array with "
        "--dependency=afterany; figures as data and gnuplot scripts on a node without gnuplot). "
        "Both run --setup before `set -euo pipefail` and export HDF5_USE_FILE_LOCKING=FALSE "
        "(HDF5's locks fail on some Lustre and NFS mounts; lexp locks RUN_DIR itself). A "
        "native build (the default) runs only on nodes with this CPU's instruction sets "
        "(lexp --version lists them; a node without them exits 2 naming them). RUN_DIR must be "
        "on a file system every node shares: lexp warns when it is node-local (/tmp).");
    return slurm;
  }
  int Run(Shared&) override {
    o_.print = PrintLine;
    if (resubmit_) {
      LEXP_INPUT_CHECK(target_option_->count() > 0,
                       "lexp slurm --resubmit: give the run directory");
      ResubmitSlurmSweep(target_, o_);
      return 0;
    }
    LEXP_INPUT_CHECK(target_.empty() || !std::filesystem::is_directory(target_),
                     "lexp slurm: '" + target_ +
                         "' is a directory; give a recipe, or add --resubmit for a run "
                         "directory");
    const RecipeConfig c = LoadRecipe(target_option_->count() > 0, target_, sets_);
    WriteSlurmSweep(c, out_.empty() ? DefaultRunDir(c) : out_, o_);
    return 0;
  }

 private:
  CLI::Option* target_option_ = nullptr;
  std::string target_, out_;
  std::vector<std::string> sets_;
  bool resubmit_ = false;
  SlurmOptions o_;
};

}  // namespace

std::unique_ptr<Command> MakeSlurmCommand() { return std::make_unique<SlurmCommand>(); }

}  // namespace lexp::cli
