// lexp compress RUN_FILE --lm LM_RUN_FILE: the run's retrieval against the compression of its
// prompts by a small language model's surprisal (experiments/replay/prompt_compression.h), into
// its /analysis/prompt_compression, with the figure prompt_compression of its directory.
#include <cstdio>
#include <filesystem>

#include "experiments/commands/command.h"
#include "experiments/core/run_file.h"
#include "experiments/replay/prompt_compression.h"
#include "notebooks_cpp/figures.h"
#include "notebooks_cpp/figure_kit.h"

namespace lexp::cli {
namespace {

class CompressCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared& shared) override {
    auto* a = app.add_subcommand(
        "compress",
        "prompt compression (in the spirit of LLMLingua, Jiang et al. 2023): evaluates a trained "
        "run again on its own evaluation sequences with each prompt's context compressed, "
        "dropping the tokens a small language model of the task's prompts finds least "
        "surprising, at every ratio; writes /analysis/prompt_compression into RUN_FILE and "
        "draws figures/prompt_compression");
    a->footer(
        "The language model is a run of the same task trained with train.score_input = 1 (its "
        "loss also on the input tokens). A ratio r keeps the C - round(r C) most surprising of "
        "the C context tokens (the input without its query tokens), in their order; ratio 0 is "
        "the run's own /eval.");
    a->add_option("RUN_FILE", run_, "completed run file to evaluate")
        ->required()
        ->check(CLI::ExistingFile);
    a->add_option("--lm", lm_, "completed run file of the compressor (train.score_input = 1)")
        ->required()
        ->check(CLI::ExistingFile);
    a->add_option("--ratios", ratios_, "fractions of the context dropped, each in [0, 1)")
        ->delimiter(',');
    a->add_option("--lengths", lengths_, "task lengths (default: the run's evaluation lengths)")
        ->delimiter(',');
    shared.AddFormatOption(a);
    return a;
  }
  int Run(Shared&) override {
    for (const std::string& f : {run_, lm_}) {
      std::string name;
      CompletedRunRecipe(f, &name);  // a completed lexp run file, or an input error naming it
    }
    PrintLine("compressing the prompts of " + run_ + " with " + lm_);
    const PromptCompression pc = MeasurePromptCompression(run_, lm_, ratios_, lengths_);
    h5::Writer w(run_, h5::Writer::Mode::kUpdate);
    const h5::Group analysis = w.root().CreateGroup("analysis");
    std::fputs(WritePromptCompression(pc, analysis).c_str(), stdout);
    w.Commit();
    const std::string dir = std::filesystem::path(run_).parent_path().string();
    PrintLine(FigureLine(DrawPromptCompression(dir.empty() ? "." : dir)));
    return 0;
  }

 private:
  std::string run_, lm_;
  std::vector<double> ratios_ = {0, 0.25, 0.5, 0.75, 0.9};
  std::vector<int> lengths_;
};

}  // namespace

std::unique_ptr<Command> MakeCompressCommand() { return std::make_unique<CompressCommand>(); }

}  // namespace lexp::cli
