// lexp report DIR: one self-contained HTML page of a result directory (experiments/report/).
#include <cstdio>

#include "experiments/commands/command.h"

namespace lexp::cli {
namespace {

class ReportCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* report = app.add_subcommand(
        "report", "write DIR/report.html: one page with the scores, figures, analyses and "
                  "failures of a result directory");
    report->add_option("DIR", dir_,
                       "a run, sweep, eval or reproduction directory (lexp run, collect, eval or "
                       "reproduce wrote it)")
        ->required();
    report->footer(
        "The page is drawn from the files only and is self-contained (figures embedded, no "
        "script, nothing fetched), so it opens from a cluster's file system. Vector figures are "
        "shown where the directory has them (--format png,svg on run, collect or figures), the "
        "PNG otherwise. A damaged or foreign .h5 file is listed as refused with the reason, "
        "read into nothing, and makes the exit code 2 (the page is still written). run, collect, eval and reproduce write the page at their end.");
    return report;
  }
  int Run(Shared&) override {
    return WriteReportAndSay(dir_);
  }

 private:
  std::string dir_;
};

}  // namespace

std::unique_ptr<Command> MakeReportCommand() { return std::make_unique<ReportCommand>(); }

}  // namespace lexp::cli
