// lexp analyze RUN_FILE...: every analysis that applies to trained runs, into /analysis
// (experiments/replay/analyze.h).
#include "experiments/replay/analyze.h"

#include <cstdio>

#include "experiments/commands/command.h"
#include "experiments/core/memory_estimate.h"
#include "experiments/core/output_lock.h"
#include "experiments/core/run_file.h"

namespace lexp::cli {
namespace {

class AnalyzeCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* a = app.add_subcommand(
        "analyze",
        "every analysis that applies to trained runs, into each run file's /analysis (training "
        "runs do it at the end, writing those probe.analyses chooses; probe.replay = 0 leaves "
        "all but the geometry to this command): attention geometry, expectation, scores by "
        "position, position probes, receptive field, entropy variants, position shift and, for "
        "rope, the rotary pairs. Inapplicable metrics are named with the reason.");
    a->footer(
        "Statistics, as computed (layouts in data/README.md):\n"
        "  geometry      replay of every probe sequence (probe.samples) at the training length N\n"
        "                and every probe length; mean and sd across sequences of: LM-Infinite's\n"
        "                logit bound (running max over distance of the last query's logits); the\n"
        "                all-queries max at each distance (grows with length for i.i.d. logits);\n"
        "                entropy, attended distance (mean, argmax), attention on the first token\n"
        "                (sink) and within max(2, T_N/8) tokens (local) per query. Pooled over\n"
        "                pairs: mean and sd of the logit at each distance (the expectation, and "
        "the\n"
        "                positional part of a logit); its resolution (convention A, gaps not "
        "joined)\n"
        "                over every distance, over the training window, and a flat curve's "
        "(1/K^2);\n"
        "                the share of logit variance the positional part explains; the fraction "
        "of\n"
        "                logits / positional parts / content parts (logit - positional part) "
        "outside\n"
        "                their range at N; head class sink (sink mass >= 0.5) > local (local mass\n"
        "                >= 0.5) > content (positional share < 0.5) > global, with each head\n"
        "                statistic's sd over sequences and the share of sequences agreeing with\n"
        "                the class; NaN/+inf logits counted; with --reference (default: the nope\n"
        "                run beside the file) the JS divergence of every head against every\n"
        "                reference head of the layer over the queries seeing 2+ keys (and those\n"
        "                beyond N), its minimum, mean, and the one-to-one matching of heads with\n"
        "                the least total divergence.\n"
        "  expectation   the logit by distance at every evaluation length, with the same\n"
        "                resolutions (every distance, training window, flat curve).\n"
        "  position_scores  teacher-forced loss and accuracy by absolute position at every\n"
        "                evaluation length (the /eval sequences); the last T_N tokens scored with\n"
        "                the whole sequence, alone at their own positions, alone at the positions\n"
        "                a short sequence gets (0.. when consecutive): the cost of extra keys and "
        "of\n"
        "                unseen positions (stationary sources only: elsewhere the window alone\n"
        "                lacks the prompt its targets read, and the split says so).\n"
        "  position_probes  ridge probes (lambda 1e-3 per row, standardised states) of each\n"
        "                residual stream for the index and the distance to the separator, fitted\n"
        "                on the lengths <= N and tested on the longest, beside a constant's RMSE;\n"
        "                within each segment (input, separator, answer), a linear classifier of\n"
        "                positions the segment never had in training (0.5: no signal) and the\n"
        "                fraction of states past the 99th percentile of the segment's training\n"
        "                states' Mahalanobis distance (0.01 expected).\n"
        "  receptive_field  share of ||d ln p(target_i) / d x_j|| at distance d = i - j from each\n"
        "                of up to 8 graded rows i per sequence (the answer's tokens, not the end\n"
        "                token's row; x_j: embedded input), teacher forced, mean over <= 32\n"
        "                sequences with its sd; distances holding 50% and 90% of it.\n"
        "  entropy_variants  entropy of the longest probe under log-n, YaRN and the Lambda mask,\n"
        "                against ln(visible keys).\n"
        "  rotary        (rope) pair periods against the positions training showed, contributions\n"
        "                below/beyond it, the logit supremum (unrotated q.k included) against the\n"
        "                observed maximum, and the post-critical ablation with each cut's loss\n"
        "                beyond N and its cost within N, paired over the evaluation sequences\n"
        "                (measured boundary: the lowest of the cuts below the unablated loss and\n"
        "                below a uniform guess ln V by their 95% intervals; -1: none).\n"
        "  position_shift  every position id moved by 16, 1024 and 65536: how far each head's\n"
        "                attention rows move (L1, mean over queries; 0 for an exactly relative\n"
        "                encoding) and the first key's part of it (Wang et al. 2024, Eq. 4).\n"
        "The names are those of probe.analyses and lexp eval --analyses.");
    a->add_option("RUN_FILE", files_, "completed run files")->required()->check(CLI::ExistingFile);
    a->add_option("--reference", reference_,
                  "run file (typically NoPE) of the same recipe: JS divergence of attention rows "
                  "(default: the nope run beside each file, when there is one)")
        ->check(CLI::ExistingFile);
    return a;
  }
  int Run(Shared&) override {
    for (const auto& f : files_) {
      // The replays' memory, checked here rather than inside a training process that holds its
      // own model already.
      std::string name;
      RecipeConfig cfg = CompletedRunRecipe(f, &name);
      cfg.probe_replay = 1;
      cfg.probe_analyses = {"all"};  // what lexp analyze writes, whatever the run chose
      CheckMemoryFits(cfg);
    }
    for (const auto& f : files_) {
      const OutputLock lock(std::filesystem::path(f).parent_path().string());
      PrintLine("analyzing " + f);
      std::fputs(AnalyzeRunFile(f, reference_).c_str(), stdout);
    }
    return 0;
  }

 private:
  std::vector<std::string> files_;
  std::string reference_;
};

}  // namespace

std::unique_ptr<Command> MakeAnalyzeCommand() { return std::make_unique<AnalyzeCommand>(); }

}  // namespace lexp::cli
