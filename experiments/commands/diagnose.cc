// lexp diagnose RUN_FILE: why a trained model fails beyond its training length, by intervention
// (experiments/replay/diagnosis.h).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/commands/command.h"
#include "experiments/core/run_file.h"
#include "experiments/replay/diagnosis.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "notebooks_cpp/figure_kit.h"

namespace lexp::cli {
namespace {

class DiagnoseCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* a = app.add_subcommand(
        "diagnose",
        "why a trained model fails beyond its training length: evaluates the run again on its "
        "own evaluation sequences under interventions that each remove one out-of-distribution "
        "factor of LM-Infinite (unseen distances, too many keys, the starting tokens, rotary "
        "frequencies) and reports the share of the loss gap beyond N each closes, with a 95% "
        "interval paired over the sequences; writes /diagnosis into RUN_FILE and draws "
        "figures/diagnosis of its directory");
    a->footer(
        "gap(n) = loss at n - loss at the longest evaluated length <= N. Interventions: "
        "distance_clamp (RoPE distances >= L - 1 seen as L - 1, L the longest training sequence; "
        "other relative encodings: keys beyond the last L seen at distance L - 1), "
        "position_remap (absolute encodings: positions >= L read as L - 1), "
        "window (a sliding window of L keys), lambda (LM-Infinite's mask: the window and the "
        "first 2 tokens), log_n (any encoding's content logits times log_L(i + 1) beyond L), freeze_slow (RoPE's pairs that never "
        "complete a period in training stop rotating, Liu et al.'s critical dimension), ntk "
        "and yarn (factor = tokens / L). One that does not apply to the run is listed with the reason. A share of 1 closes "
        "the gap; below 0 widens it. Beside the shares: the last query's attention entropy (against "
        "ln of its keys) and its largest logit, with and without each intervention.");
    a->add_option("RUN_FILE", run_, "completed run file to diagnose")
        ->required()
        ->check(CLI::ExistingFile);
    a->add_option("--lengths", lengths_, "task lengths beyond N (default: the run's evaluated ones)")
        ->delimiter(',');
    a->add_option("--interventions", only_,
                  "the interventions to run, comma-separated (default: all that apply)")
        ->delimiter(',');
    return a;
  }
  int Run(Shared&) override {
    std::string name;
    CompletedRunRecipe(run_, &name);  // a completed lexp run file, or an input error naming it
    PrintLine("diagnosing " + run_);
    const Diagnosis d =
        DiagnoseRun(run_, lengths_, [](const std::string& s) { PrintLine("  " + s); }, only_);
    h5::Writer w(run_, h5::Writer::Mode::kUpdate);
    std::fputs(WriteDiagnosis(d, w.root()).c_str(), stdout);
    w.Commit();
    const std::string dir = std::filesystem::path(run_).parent_path().string();
    PrintLine(FigureLine(DrawDiagnosis(dir.empty() ? "." : dir)));
    return 0;
  }

 private:
  std::string run_;
  std::vector<int> lengths_;
  std::vector<std::string> only_;
};

}  // namespace

std::unique_ptr<Command> MakeDiagnoseCommand() { return std::make_unique<DiagnoseCommand>(); }

}  // namespace lexp::cli
