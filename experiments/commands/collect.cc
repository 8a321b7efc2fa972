// lexp collect RUN_DIR: the summary, score tables and figures of whatever rows of a planned sweep
// are done.
#include <cstdio>

#include "experiments/commands/command.h"
#include "experiments/training/job_list.h"
#include "notebooks_cpp/figure_kit.h"

namespace lexp::cli {
namespace {

class CollectCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared& shared) override {
    auto* collect = app.add_subcommand(
        "collect",
        "make a run directory's summary, score tables and figures from the run files there");
    collect->add_option("RUN_DIR", dir_, "a run directory with a plan (lexp plan/slurm/run)")
        ->required();
    auto* no_figures = collect->add_flag("--no-figures", no_figures_, "do not draw figures");
    collect
        ->add_flag("--data-only", data_only_,
                   "write the figures' data and gnuplot scripts without drawing them (a node "
                   "without gnuplot; draw later with lexp figures RUN_DIR)")
        ->excludes(no_figures);
    shared.AddFormatOption(collect);
    collect->footer(
        "Runs that finished before their NoPE reference are analysed again with it, so that the "
        "files are those of one lexp run; missing, failed and diverged rows are listed by index.");
    return collect;
  }
  int Run(Shared&) override {
    SetFigureDataOnly(data_only_);
    const auto res = CollectSweep(dir_, !no_figures_, PrintLine);
    std::fputs(res.report.c_str(), stdout);
    return WriteReportAndSay(dir_);
  }

 private:
  std::string dir_;
  bool no_figures_ = false, data_only_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeCollectCommand() { return std::make_unique<CollectCommand>(); }

}  // namespace lexp::cli
