// lexp base-law RUN_DIR: the RoPE base-scaling law measured against its prediction
// (experiments/replay/base_law_command.h).
#include <cstdio>
#include <filesystem>

#include "experiments/commands/command.h"
#include "experiments/replay/base_law_command.h"
#include "notebooks_cpp/figures.h"
#include "notebooks_cpp/figure_kit.h"

namespace lexp::cli {
namespace {

class BaseLawCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* b = app.add_subcommand(
        "base-law",
        "RoPE base-scaling law: measured extrapolation limit of every rope run of a directory "
        "(e.g. a run.sweep over encoding_options.rope.base) against T_extra = 2 pi "
        "b^(d_extra/d), with a fitted exponent; writes RUN_DIR/base_law.h5");
    b->add_option("RUN_DIR", dir_, "directory of rope run files")->required();
    b->add_option("--tolerance", tolerance_,
                  "a length is within the limit while its score stays within the tolerance of "
                  "the score at the longest evaluated length <= N: a loss <= (1 + tolerance) x, "
                  "an accuracy >= (1 - tolerance) x")
        ->capture_default_str();
    b->add_option("--criterion", criterion_,
                  "the score a limit is read from: loss, token_accuracy, exact_match, or auto "
                  "(token accuracy for tasks with an answer, such as copy, whose loss at the "
                  "training length is near 0; loss for language-modelling sources)")
        ->capture_default_str();
    return b;
  }
  int Run(Shared&) override {
    std::fputs(WriteBaseLaw(dir_, tolerance_, criterion_).c_str(), stdout);
    const std::string file = (std::filesystem::path(dir_) / "base_law.h5").string();
    PrintLine("wrote " + file);
    PrintLine(FigureLine(DrawBaseLaw(file)));
    return 0;
  }

 private:
  std::string dir_;
  double tolerance_ = 0.1;
  std::string criterion_ = "auto";
};

}  // namespace

std::unique_ptr<Command> MakeBaseLawCommand() { return std::make_unique<BaseLawCommand>(); }

}  // namespace lexp::cli
