// lexp eval RUN_FILE [--scale RULE...]: a trained run evaluated again, under RoPE scaling rules,
// overrides or capture sites (experiments/training/eval_command.h).
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "experiments/commands/command.h"
#include "nn/check.h"
#include "experiments/core/analysis_selection.h"
#include "experiments/core/output_lock.h"
#include "experiments/core/run_file.h"
#include "experiments/training/eval_command.h"
#include "notebooks_cpp/figures.h"
#include "notebooks_cpp/figure_kit.h"

namespace lexp::cli {
namespace {

class EvalCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared& shared) override {
    auto* eval = app.add_subcommand(
        "eval", "evaluate a trained run file again, optionally with a RoPE scaling rule");
    eval->add_option("RUN_FILE", o_.run_file,
                     "a completed run file (data/runs/<name>/<encoding>.h5)")
        ->required();
    eval->add_option("--scale", scales_,
                     "RULE[:key=value,...], e.g. yarn:factor=4 or ntk:factor=8 or "
                     "llama3:factor=8,low_freq_factor=1 (rules: lexp list scalings); give it "
                     "several times to compare rules (one file each, and a table of entropy and "
                     "max logit by length; 'none' on a run trained without a rule is the run's "
                     "own file, not evaluated again)")
        ->take_all();
    eval->add_option("--set", o_.sets,
                     "recipe overrides for the evaluation, e.g. --set eval.max_factor=16")
        ->take_all();
    eval->add_option("--capture", capture_,
                     "capture sites to store at every probe length (names or globs, e.g. "
                     "'layer*.attn.q' layer1.resid_post; lexp list sites); the same as "
                     "--set probe.capture=[...]")
        ->take_all();
    eval->add_option(
            "--analyses", analyses_,
            "the analyses written into the evaluation's file: 'all', 'none', or names from "
            "geometry, expectation, entropy_variants, position_scores, position_probes, "
            "receptive_field, rotary, position_shift (comma- or space-separated; lexp analyze --help says what "
            "each measures). Default: geometry (entropy, logit explosion, attended distance and "
            "the JS divergence at every probe length; forward passes of the probe only), not "
            "the replays. With --capture, 'none' is a capture-only evaluation: no scores, only "
            "the probe's capture sites")
        ->take_all();
    eval->add_option("--out", o_.out_dir, "output directory (default: the run file's directory)");
    eval->add_option("--name", o_.name,
                     "name the evaluation: the file is <label>+NAME.h5 instead of a name made "
                     "from the rule and overrides (one --scale at most)");
    eval->add_flag("--no-figures", no_figures_, "do not redraw the directory's figures");
    eval->add_flag("--force", o_.force,
                   "replace an earlier evaluation's file of the same name (refused otherwise)");
    shared.AddFormatOption(eval);
    eval->footer(
        "Writes <out>/<label>+<rule>x<factor>[-<option><value>...].h5 (the source run's label, "
        "e.g. rope-base500+yarnx4.h5; rope+eval-capture-layer1.resid_post.h5 with --capture "
        "layer1.resid_post; <label>+NAME.h5 with --name) with the same layout as a trained run "
        "(weights taken from RUN_FILE, /train empty), then redraws the figures of <out>.");
    return eval;
  }
  int Run(Shared&) override {
    o_.progress = PrintLine;
    // `--scale none` of a RoPE run trained without a rule, with nothing else changed, is the run
    // itself: its file stands in the comparison instead of a copy evaluated again.
    const bool unchanged = o_.sets.empty() && capture_.empty() && analyses_.empty() &&
                           o_.name.empty() && o_.out_dir.empty();
    if (!capture_.empty()) {
      std::string globs;
      for (const auto& g : capture_) globs += fmt::format("{}\"{}\"", globs.empty() ? "" : ",", g);
      o_.sets.push_back("probe.capture=[" + globs + "]");
    }
    ChooseAnalyses();
    if (scales_.empty()) scales_.push_back("");
    LEXP_INPUT_CHECK(o_.name.empty() || scales_.size() == 1,
                     "lexp eval --name names one evaluation: give one --scale with it");
    // Every rule is checked before any evaluation runs.
    for (const auto& sc : scales_)
      if (!sc.empty()) ParseScaleSpec(sc);
    std::vector<std::string> written;
    // One writer at a time in the directory the evaluations go to.
    const OutputLock lock(o_.out_dir.empty()
                              ? std::filesystem::path(o_.run_file).parent_path().string()
                              : o_.out_dir);
    for (const auto& sc : scales_) {
      if (sc == "none" && unchanged && TrainedWithoutScaling(o_.run_file)) {
        written.push_back(o_.run_file);
        PrintLine("--scale none: " + o_.run_file +
                  " itself (trained without a scaling rule: nothing to evaluate again)");
        continue;
      }
      o_.scale = sc;
      written.push_back(EvaluateRunFile(o_).path);
      PrintLine("wrote " + written.back());
    }
    if (written.size() > 1) std::fputs(ScaleComparisonTable(written).c_str(), stdout);
    const std::string dir = std::filesystem::path(written.back()).parent_path().string();
    if (!no_figures_)
      for (const auto& png : DrawAllFigures(dir)) PrintLine(FigureLine(png));
    return WriteReportAndSay(dir.empty() ? "." : dir);
  }

 private:
  static std::string JoinedAnalysisNames() {
    std::string s;
    for (const auto& n : AnalysisNames()) s += (s.empty() ? "" : ", ") + n;
    return s;
  }
  static bool TrainedWithoutScaling(const std::string& run_file) {
    std::string encoding;
    const RecipeConfig cfg = CompletedRunRecipe(run_file, &encoding);
    if (encoding != "rope") return false;  // --scale refuses it with its reason
    const auto options = cfg.encoding_options.find(encoding);
    if (options == cfg.encoding_options.end()) return true;
    const auto scaling = options->second.find("scaling");
    if (scaling == options->second.end()) return true;
    std::string rule = scaling->second;
    rule.erase(std::remove(rule.begin(), rule.end(), '"'), rule.end());
    return rule == "none";
  }
  // --analyses as recipe overrides (probe.* keys do not name the output); without it and without a
  // --set probe.analyses, the geometry alone: what the evaluation's table and figures read.
  void ChooseAnalyses() {
    std::vector<std::string> names;
    for (const auto& a : analyses_)
      for (size_t at = 0; at <= a.size();) {
        const size_t comma = std::min(a.find(',', at), a.size());
        if (comma > at) names.push_back(a.substr(at, comma - at));
        at = comma + 1;
      }
    LEXP_INPUT_CHECK(analyses_.empty() || !names.empty(),
                     "lexp eval --analyses names nothing; allowed: all, none, or names from " +
                         JoinedAnalysisNames());
    bool set_by_key = false, replay_by_key = false;
    std::string set_value;
    for (const auto& set : o_.sets) {
      if (set.rfind("probe.analyses=", 0) == 0) {
        set_by_key = true;
        set_value = set.substr(set.find('=') + 1);
      }
      replay_by_key = replay_by_key || set.rfind("probe.replay=", 0) == 0;
    }
    LEXP_INPUT_CHECK(!(set_by_key && !names.empty()),
                     "lexp eval: give the analyses once, with --analyses or with --set "
                     "probe.analyses, not both");
    if (set_by_key) {
      // The key's "none" with --capture is the capture-only evaluation too.
      std::string bare;
      for (char ch : set_value)
        if (ch != '"' && ch != '[' && ch != ']' && ch != ' ' && ch != '\'') bare += ch;
      o_.capture_only = bare == "none" && !capture_.empty();
      return;
    }
    if (names.empty()) names = {"geometry"};
    std::string list;
    for (const auto& n : names) list += fmt::format("{}\"{}\"", list.empty() ? "" : ",", n);
    SelectAnalyses(names, true, "lexp eval --analyses");  // names checked before anything runs
    // A replay asked for by name runs even when the run's recipe turned the replays off (unless
    // this command's own --set probe.replay says otherwise: then a named replay is refused).
    if (names != std::vector<std::string>{"none"} && !replay_by_key)
      o_.sets.push_back("probe.replay=1");
    o_.sets.push_back("probe.analyses=[" + list + "]");
    o_.capture_only = names == std::vector<std::string>{"none"} && !capture_.empty();
  }

  EvalCommandOptions o_;
  std::vector<std::string> scales_, capture_, analyses_;
  bool no_figures_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeEvalCommand() { return std::make_unique<EvalCommand>(); }

}  // namespace lexp::cli
