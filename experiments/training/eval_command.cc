#include "experiments/training/eval_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "experiments/core/assembled_model.h"
#include "experiments/core/memory_estimate.h"
#include "experiments/core/recipe.h"
#include "experiments/core/run_file.h"
#include "experiments/training/longrope_search.h"
#include "experiments/replay/analyze.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "pe/registry.h"
#include "pe/rope_scaling.h"

namespace lexp {

ScaleSpec ParseScaleSpec(const std::string& text) {
  ScaleSpec s;
  const auto colon = text.find(':');
  s.rule = text.substr(0, colon);
  std::string known;
  bool ok = false;
  for (const auto& r : RopeScalingRules()) {
    known += (known.empty() ? "" : ", ") + r;
    ok = ok || r == s.rule;
  }
  LEXP_INPUT_CHECK(s.rule != "log_n",
                   "--scale log_n: log-n scaling is not a frequency rule but an option of rope; "
                   "give it as --set encoding_options.rope.log_n=true");
  LEXP_INPUT_CHECK(ok, "--scale '" + text + "': unknown rule '" + s.rule + "'; rules: " + known);
  if (colon == std::string::npos) return s;
  std::stringstream ss(text.substr(colon + 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    LEXP_INPUT_CHECK(
        eq != std::string::npos && eq > 0,
        "--scale '" + text + "': expected RULE:key=value,key=value, got '" + item + "'");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    std::string options, default_value;
    bool known_key = false;
    for (const auto& o : FindEncoding("rope").options()) {
      options += (options.empty() ? "" : ", ") + o.name;
      if (o.name == key) {
        known_key = true;
        default_value = o.default_value;
      }
    }
    LEXP_INPUT_CHECK(known_key && key != "scaling", "--scale '" + text + "': '" + key +
                                                        "' is not an option of rope's scaling; "
                                                        "options: " +
                                                        options);
    // A value of the option's kind, as its default shows it: a number, or true/false.
    auto number = [](const std::string& v) {
      char* end = nullptr;
      std::strtod(v.c_str(), &end);
      return !v.empty() && end && *end == '\0';
    };
    if (number(default_value))
      LEXP_INPUT_CHECK(number(value),
                       "--scale '" + text + "': " + key + " = '" + value + "' is not a number");
    if (default_value == "true" || default_value == "false")
      LEXP_INPUT_CHECK(
          value == "true" || value == "false",
          "--scale '" + text + "': " + key + " = '" + value + "'; allowed: true, false");
    s.options[key] = value;
  }
  return s;
}

std::string EvaluationNameSuffix(const std::string& scale, const std::vector<std::string>& sets) {
  std::string name = "+eval";
  if (!scale.empty()) {
    // The name carries every option given, so two evaluations never share a file.
    const ScaleSpec spec = ParseScaleSpec(scale);
    name = "+" + spec.rule;
    if (spec.options.count("factor")) name += "x" + spec.options.at("factor");
    for (const auto& [k, v] : spec.options)
      if (k != "factor") name += "-" + k + v;
  }
  // Overrides of the model or its encoding name the output too (rope+eval-patternlambda,
  // rope+yarnx4-pattern_window16); evaluation settings (eval.*, probe.*, run.*) do not.
  for (const auto& set : sets) {
    const auto eq = set.find('=');
    if (set.rfind("probe.capture=", 0) == 0) {
      // Captured sites name the output too (rope+eval-capture-layer1.resid_post), a glob's *
      // written "any", so that evaluations capturing other sites never share a file.
      std::string sites;
      for (char ch : set.substr(eq + 1)) {
        if (ch == '[' || ch == ']' || ch == '"' || ch == ' ') continue;
        if (ch == ',')
          sites += '-';
        else if (ch == '*')
          sites += "any";
        else if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_')
          sites += ch;
      }
      if (!sites.empty()) name += "-capture-" + sites;
      continue;
    }
    if (set.rfind("task.name=", 0) == 0) {  // another task of the family: its name
      std::string task = set.substr(eq + 1);
      task.erase(std::remove(task.begin(), task.end(), '"'), task.end());
      name += "-" + task;
      continue;
    }
    if (eq == std::string::npos ||
        (set.rfind("model.", 0) != 0 && set.rfind("encoding_options.", 0) != 0))
      continue;
    const auto dot = set.rfind('.', eq);
    name += fmt::format("-{}{}", set.substr(dot == std::string::npos ? 0 : dot + 1, eq - (dot + 1)),
                        set.substr(eq + 1));
  }
  return name;
}

void ValidateEvaluationRecipe(const RecipeConfig& cfg) {
  RecipeConfig check = cfg;
  auto it = check.encoding_options.find("rope");
  LongropeSearchRequest request;
  if (it == check.encoding_options.end() || !it->second.count("long_factors") ||
      !ParseLongropeSearch(it->second.at("long_factors"), &request)) {
    ValidateRecipe(cfg);
    return;
  }
  auto& o = it->second;
  LEXP_INPUT_CHECK(o.count("scaling") && o.at("scaling") == "longrope",
                   "long_factors = \"search\" belongs to scaling 'longrope' (set "
                   "encoding_options.rope.scaling = \"longrope\")");
  char* end = nullptr;
  const std::string f = o.count("factor") ? o.at("factor") : "1";
  const double s = std::strtod(f.c_str(), &end);
  LEXP_INPUT_CHECK(end && *end == '\0' && s > 1,
                   "long_factors = \"search\" needs encoding_options.rope.factor = s > 1, the "
                   "extension the factors are searched for; got '" + f + "'");
  LEXP_INPUT_CHECK(!o.count("start_tokens"),
                   "long_factors = \"search\" searches start_tokens (n-hat) too; do not set it");
  // Checked as PI until the search has found the factors.
  o.erase("long_factors");
  o["scaling"] = "pi";
  ValidateRecipe(check);
}

namespace {

// What an evaluation will run: the source run's recipe with the rule and overrides applied, and
// the file it will write.
struct PreparedEvaluation {
  RecipeConfig cfg;
  std::string encoding, name, out_dir;
  // encoding_options.rope.long_factors = "search[:...]": LongRoPE's search runs before the
  // evaluation (EvaluateRunFile) and its factors replace the request in cfg.
  bool search = false;
  LongropeSearchRequest search_request;
};

PreparedEvaluation Prepare(const EvalCommandOptions& opt) {
  PreparedEvaluation p;
  p.cfg = CompletedRunRecipe(opt.run_file, &p.encoding);
  // An evaluation trains nothing and reads the run's own task: keys of training, of the task and
  // of the sweep would be ignored, so they are refused; task.name may name another task of the
  // run's task's family (the same symbols, another distribution: flip_flop_sparse for flip_flop).
  const std::string trained_task = p.cfg.tasks.size() == 1 ? p.cfg.tasks[0] : p.cfg.task;
  for (const auto& set : opt.sets) {
    if (set.rfind("task.name=", 0) == 0) continue;
    for (const char* ignored : {"train.", "task.", "run."})
      LEXP_INPUT_CHECK(
          set.rfind(ignored, 0) != 0,
          "lexp eval --set " + set + ": an evaluation does not " +
              (std::string(ignored) == "train." ? "train" : "change its run's task or sweep") +
              "; allowed: eval.*, probe.*, model.* and encoding_options.* keys, and task.name = "
              "another task of the run's task's family");
  }
  const std::string given_task = p.cfg.task;
  ApplyOverrides(p.cfg, opt.sets);
  if (p.cfg.task != given_task) {
    p.cfg.tasks.clear();
    const std::string family = CreateTask(trained_task, p.cfg.TaskOpts())->Family();
    LEXP_INPUT_CHECK(CreateTask(p.cfg.task, p.cfg.TaskOpts())->Family() == family,
                     "lexp eval --set task.name=" + p.cfg.task + ": the run was trained on '" +
                         trained_task + "', and an evaluation reads a task of its family only ('" +
                         family + "': the same symbols, another distribution)");
  }
  // Output names start from the run's own name (rope-base500+yarnx4), so evaluations of two runs
  // of one encoding never share a file.
  if (!opt.scale.empty()) {
    LEXP_INPUT_CHECK(p.encoding == "rope", "--scale applies to RoPE runs; '" + opt.run_file +
                                               "' was trained with '" + p.encoding + "'");
    const ScaleSpec spec = ParseScaleSpec(opt.scale);
    auto& o = p.cfg.encoding_options[p.encoding];
    o["scaling"] = spec.rule;
    for (const auto& [k, v] : spec.options) o[k] = v;
  }
  if (p.cfg.encoding_options.count(p.encoding) &&
      p.cfg.encoding_options.at(p.encoding).count("long_factors"))
    p.search = ParseLongropeSearch(p.cfg.encoding_options.at(p.encoding).at("long_factors"),
                                   &p.search_request);
  LEXP_INPUT_CHECK(!p.search || p.encoding == "rope",
                   "long_factors = \"search\" applies to rope runs; '" + opt.run_file +
                       "' was trained with '" + p.encoding + "'");
  LEXP_INPUT_CHECK(opt.name.empty() || IsPlainFileName(opt.name),
                   "lexp eval --name '" + opt.name +
                       "': a plain name (letters, digits, . _ -), the file's suffix after '+'");
  p.name = ReadRunFileHead(opt.run_file).label +
           (opt.name.empty() ? EvaluationNameSuffix(opt.scale, opt.sets) : "+" + opt.name);
  ValidateEvaluationRecipe(p.cfg);
  p.out_dir = opt.out_dir.empty() ? std::filesystem::path(opt.run_file).parent_path().string()
                                  : opt.out_dir;
  if (p.out_dir.empty()) p.out_dir = ".";
  return p;
}

}  // namespace

std::string EvaluationFile(const EvalCommandOptions& opt) {
  const PreparedEvaluation p = Prepare(opt);
  return RunFilePath(p.out_dir, p.name);
}

RunSummary EvaluateRunFile(const EvalCommandOptions& opt) {
  PreparedEvaluation p = Prepare(opt);
  CheckMemoryFits(p.cfg);
  RunOptions ro;
  ro.out_dir = p.out_dir;
  const std::string out = RunFilePath(ro.out_dir, p.name);
  ro.weights_from = std::filesystem::absolute(opt.run_file).lexically_normal().string();
  ro.capture_only = opt.capture_only;
  LEXP_INPUT_CHECK(!opt.capture_only || !p.cfg.probe_capture.empty(),
                   "a capture-only evaluation stores capture sites: name them with --capture");
  if (!opt.force && std::filesystem::exists(out)) {
    // An evaluation of the same weights killed before its analysis ended is finished, as lexp run
    // --resume finishes a run; anything else of that name is an earlier evaluation, kept.
    const RunFileHead h = ReadRunFileHead(out);
    std::string from;
    bool was_capture_only = false;
    if (h.state == RunState::kAnalyzing) {
      h5::Reader r(out);
      if (r.root().HasAttr("weights_from")) from = r.root().AttrString("weights_from");
      was_capture_only = r.root().Has("eval") && r.root().OpenGroup("eval").HasAttr("skipped");
    }
    // Finished only when it is the same kind of evaluation (probe.* keys do not name the file).
    LEXP_INPUT_CHECK(
        !(h.state == RunState::kAnalyzing && from == ro.weights_from &&
          was_capture_only != opt.capture_only),
        "'" + out + "' holds an interrupted " +
            (was_capture_only ? std::string("capture-only evaluation") : "scored evaluation") +
            " of the same name, and this one is " +
            (opt.capture_only ? "capture-only" : "scored") +
            "; pass --force to replace it, or --name for another file");
    if (h.state == RunState::kAnalyzing && from == ro.weights_from) {
      if (opt.progress)
        opt.progress("finishing the analysis of the interrupted evaluation '" + out + "'");
      std::stringstream lines(AnalyzeRunFile(out, "", p.cfg.Analyses(), true));
      for (std::string line; std::getline(lines, line);)
        if (opt.progress) opt.progress("analysis: " + line);
      RunSummary s;
      s.encoding = p.encoding;
      s.label = p.name;
      s.state = "completed";
      s.path = out;
      return s;
    }
    FailInput("'" + out +
              "' holds an earlier evaluation of the same name; pass --force to replace it, or "
              "--out for another directory");
  }
  if (p.search) {  // the factors found become this evaluation's recipe
    SearchLongropeFactors(ReadTrainedRun(opt.run_file), p.cfg, p.search_request, opt.progress);
    ValidateRecipe(p.cfg);
  }
  ro.name = p.name;
  ro.label = p.name;
  ro.progress = opt.progress;
  return TrainAndEvaluate(p.cfg, p.encoding, ro);
}

std::string ScaleComparisonTable(const std::vector<std::string>& run_files) {
  struct Column {
    std::string label;
    std::vector<int64_t> lengths;
    std::vector<double> entropy, max_logit;
  };
  std::vector<Column> cols;
  std::vector<int64_t> lengths;
  for (const auto& f : run_files) {
    Column c;
    c.label = ReadRunFileHead(f).label;
    h5::Reader r(f);
    const h5::Group an = r.root().OpenGroup("analysis");
    std::vector<uint64_t> got;
    c.lengths = an.ReadIntsShaped("probe_length", {h5::Group::kAnySize}, &got);
    c.entropy = an.ReadDoublesShaped("entropy_mean", got);
    c.max_logit = an.ReadDoublesShaped("max_logit_mean", got);
    for (int64_t n : c.lengths)
      if (std::find(lengths.begin(), lengths.end(), n) == lengths.end()) lengths.push_back(n);
    cols.push_back(std::move(c));
  }
  std::sort(lengths.begin(), lengths.end());
  std::string out =
      "attention entropy (nats) / max logit by probe length, mean over layers and "
      "heads:\n" +
      fmt::format("{:<28}", "run");
  for (int64_t n : lengths) out += fmt::format(" {:>15}", "n=" + std::to_string(n));
  out += "\n";
  for (const auto& c : cols) {
    out += fmt::format("{:<28}", c.label);
    for (int64_t n : lengths) {
      const auto at = std::find(c.lengths.begin(), c.lengths.end(), n);
      if (at == c.lengths.end()) {
        out += fmt::format(" {:>15}", "-");
        continue;
      }
      const size_t i = static_cast<size_t>(at - c.lengths.begin());
      out += fmt::format(" {:>15}", fmt::format("{:.3f} / {:.2f}", c.entropy[i], c.max_logit[i]));
    }
    out += "\n";
  }
  return out;
}

}  // namespace lexp
