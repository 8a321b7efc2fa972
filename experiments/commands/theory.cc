// lexp theory: the closed-form rotary analyses, no training
// (experiments/training/theory_command.h).
#include <cstdio>

#include "experiments/commands/command.h"
#include "experiments/training/theory_command.h"
#include "notebooks_cpp/figures.h"
#include "notebooks_cpp/figure_kit.h"

namespace lexp::cli {
namespace {

class TheoryCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* t = app.add_subcommand(
        "theory",
        "closed-form rotary analyses without training: critical dimension, base-scaling law, "
        "decay bound, attention expectation and resolution for RoPE, xPos and a scaling rule "
        "(HDF5 + figure)");
    t->add_option("--head-dim", o_.head_dim, "rotary head dimension d")->capture_default_str();
    t->add_option("--base", o_.base, "RoPE base")->capture_default_str();
    t->add_option("--train-length", o_.train_length, "training length T_train (tokens)")
        ->capture_default_str();
    t->add_option("--max-distance", o_.max_distance, "longest distance of the expectation curves")
        ->capture_default_str();
    t->add_option("--xpos-scale-base", o_.xpos_scale_base, "xPos B")->capture_default_str();
    t->add_option("--xpos-gamma", o_.xpos_gamma, "xPos gamma")->capture_default_str();
    t->add_option("--scale", o_.scale,
                  "also the expectation under a RoPE rule, e.g. yarn:factor=4 (factor and "
                  "original_length are read)");
    t->add_option("--mc-samples", o_.mc_samples, "Monte-Carlo samples of the expectation")
        ->capture_default_str();
    t->add_option("--mc-max-distance", o_.mc_max_distance,
                  "Monte-Carlo expectation at every distance 0..this")
        ->capture_default_str();
    t->add_option("--mc-distribution", o_.mc_distribution,
                  "content components i.i.d. gaussian | uniform")
        ->capture_default_str();
    t->add_option("--mc-mean", o_.mc_mean, "mean mu of each q/k component")->capture_default_str();
    t->add_option("--mc-sd", o_.mc_sd, "standard deviation sigma of each component")
        ->capture_default_str();
    t->add_flag("--mc-independent", o_.mc_independent,
                "draw q and k independently (default: q = k = x, the same content)");
    t->add_option("--out", o_.out_file, "HDF5 file to write")->capture_default_str();
    return t;
  }
  int Run(Shared&) override {
    std::string report;
    PrintLine("wrote " + WriteTheory(o_, &report));
    std::fputs(report.c_str(), stdout);
    PrintLine(FigureLine(DrawTheory(o_.out_file)));
    return 0;
  }

 private:
  TheoryOptions o_;
};

}  // namespace

std::unique_ptr<Command> MakeTheoryCommand() { return std::make_unique<TheoryCommand>(); }

}  // namespace lexp::cli
