// lexp figures RUN_DIR [--runs a,b]: every figure of a run directory, drawn from its files
// (notebooks_cpp/).
#include "notebooks_cpp/figures.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "experiments/commands/command.h"
#include "experiments/core/output_lock.h"
#include "experiments/reproduce/verdict_file.h"
#include "nn/check.h"
#include "notebooks_cpp/figure_kit.h"

namespace lexp::cli {
namespace {

namespace fs = std::filesystem;

class FiguresCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared& shared) override {
    auto* f =
        app.add_subcommand("figures", "redraw every figure of a run directory from its files");
    f->add_option("RUN_DIR", dir_, "directory holding the run files (*.h5)")->required();
    f->add_option("--runs", runs_,
                  "draw only these runs, by file name without .h5 (globs allowed), e.g. --runs "
                  "nope,rope-base500; the figures go to RUN_DIR/figures/<nope+rope-base500>/")
        ->delimiter(',');
    shared.AddFormatOption(f);
    f->add_flag("--data-only", data_only_,
                "write each figure's data (.dat) and gnuplot script (.gp) without running gnuplot "
                "(a machine without it, such as a compute node); draw later with gnuplot NAME.gp "
                "inside figures/");
    return f;
  }
  int Run(Shared&) override {
    SetFigureDataOnly(data_only_);
    LEXP_INPUT_CHECK(fs::exists(dir_), "lexp figures: '" + dir_ + "' does not exist");
    LEXP_INPUT_CHECK(
        fs::is_directory(dir_),
        "lexp figures: '" + dir_ + "' is a file; give the run directory that holds it");
    const OutputLock lock(dir_);  // figures/ is written: one writer at a time
    if (!runs_.empty()) return DrawSelection();
    // A reproduction's directory (lexp reproduce): its verdict figure; its runs are in runs/.
    if (fs::exists(fs::path(dir_) / "verdict.h5")) {
      PrintLine(FigureLine(DrawReproduction(dir_)));
      if (ReadVerdictFile((fs::path(dir_) / "verdict.h5").string()).trend.size() > 0)
        PrintLine(FigureLine(DrawReproductionTrend(dir_)));
      return 0;
    }
    // A sweep directory: the score table, then every task directory holding run files.
    const fs::path summary = fs::path(dir_) / "summary.h5";
    if (fs::exists(summary)) {
      PrintLine(FigureLine(DrawScoreTable(summary.string())));
      for (const auto& e : fs::directory_iterator(dir_))
        if (e.is_directory() && e.path().filename() != "figures" && e.path().filename() != "plan" &&
            e.path().filename() != "slurm")
          for (const auto& png : DrawAllFigures(e.path().string())) PrintLine(FigureLine(png));
    }
    bool has_runs = false;
    for (const auto& e : fs::directory_iterator(dir_))
      has_runs = has_runs || (e.path().extension() == ".h5" && e.path().filename() != "summary.h5");
    if (has_runs || !fs::exists(summary))
      for (const auto& png : DrawAllFigures(dir_)) PrintLine(FigureLine(png));
    const fs::path law = fs::path(dir_) / "base_law.h5";
    if (fs::exists(law)) PrintLine(FigureLine(DrawBaseLaw(law.string())));
    return 0;
  }

 private:
  // --runs: only the named runs of the directory, into figures/<a+b>/.
  int DrawSelection() {
    SetRunSelection(runs_);
    if (FindRunFiles(dir_).empty()) {
      SetRunSelection({});
      std::string names;
      for (const auto& f : FindRunFiles(dir_))
        names += (names.empty() ? "" : ", ") + fs::path(f).stem().string();
      FailInput("lexp figures --runs: no run of '" + dir_ + "' is named " +
                fmt::format("{}", fmt::join(runs_, " or ")) +
                "; its runs: " + (names.empty() ? "none" : names));
    }
    for (const auto& png : DrawAllFigures(dir_)) PrintLine(FigureLine(png));
    return 0;
  }

  std::string dir_;
  std::vector<std::string> runs_;
  bool data_only_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeFiguresCommand() { return std::make_unique<FiguresCommand>(); }

}  // namespace lexp::cli
