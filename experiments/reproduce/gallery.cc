#include "experiments/core/steps_cap.h"
#include "experiments/reproduce/gallery.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "experiments/reproduce/criterion.h"
#include "experiments/reproduce/preregistration.h"
#include "experiments/replay/diagnosis.h"
#include "experiments/reproduce/verdict_file.h"
#include "experiments/training/eval_command.h"
#include "experiments/training/job_list.h"
#include "experiments/training/sweep.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/io/paths.h"
#include "notebooks_cpp/figure_data.h"
#include "notebooks_cpp/figure_kit.h"
#include "notebooks_cpp/figures.h"

namespace lexp {

std::string ScoreText(double x, bool sign) {
  if (x != 0 && std::abs(x) < 1e-3)
    return sign ? fmt::format("{:+.2g}", x) : fmt::format("{:.2g}", x);
  return sign ? fmt::format("{:+.3f}", x) : fmt::format("{:.3f}", x);
}

namespace {

namespace fs = std::filesystem;

// A TOML string literal of a path.
std::string TomlString(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// Whether a run file exists and completed (a diverged or failed pre-training cannot be fine-tuned).
bool RunCompleted(const std::string& path) {
  if (!fs::exists(path)) return false;
  try {
    h5::Reader r(path);
    return r.root().Has("status") &&
           r.root().OpenGroup("status").AttrString("state") == "completed";
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

std::string SmokeMark(const std::string& budget) {
  return budget == "smoke" ? fmt::format("pipeline check (smoke: at most {} training steps, not "
                                         "evidence; --budget full reads the claim): ",
                                         kSmokeSteps)
                           : "";
}

std::vector<std::string> SmokeCaps(const RecipeConfig& cfg) {
  std::vector<std::string> caps = {fmt::format("train.steps_cap={}", kSmokeSteps)};
  if (cfg.eval_samples > kSmokeEvalSamples)
    caps.push_back(fmt::format("eval.samples={}", kSmokeEvalSamples));
  if (cfg.seeds.size() > static_cast<size_t>(kSmokeSeeds))
    caps.push_back(fmt::format(
        "run.seeds=[{}]",
        fmt::join(cfg.seeds.begin(), cfg.seeds.begin() + kSmokeSeeds, ", ")));
  return caps;
}

bool DrawsStageFigures(const ReproduceOptions& opt) { return opt.figures && opt.budget != "smoke"; }

namespace {

// An evaluating stage's overrides at a budget: `set`, then the budget's own.
std::vector<std::string> EvaluationOverrides(const ClaimStage& stage, const std::string& budget) {
  std::vector<std::string> sets = stage.set;
  const auto& more = budget == "full" ? stage.full : stage.smoke;
  sets.insert(sets.end(), more.begin(), more.end());
  return sets;
}

// One evaluation of an evaluating stage: a RoPE scaling rule, or a named set of overrides.
struct StageEvaluation {
  std::string scale, name;
  std::vector<std::string> sets;  // the stage's overrides at the budget, then the evaluation's own
};

std::vector<StageEvaluation> StageEvaluations(const ClaimStage& stage, const std::string& budget) {
  std::vector<StageEvaluation> out;
  for (const auto& scale : stage.scales) out.push_back({scale, "", EvaluationOverrides(stage, budget)});
  // A diagnosis writes one file per run; its labels are one per intervention.
  for (const auto& name : stage.diagnose) out.push_back({"", name, EvaluationOverrides(stage, budget)});
  for (const auto& text : stage.evaluations) {
    const RecipeConfig::Variant v = ParseNamedVariant(text);
    StageEvaluation e{"", v.value, EvaluationOverrides(stage, budget)};
    e.sets.insert(e.sets.end(), v.sets.begin(), v.sets.end());
    out.push_back(e);
  }
  return out;
}

// Every completed run of the evaluated stage, evaluated again under each rule of the stage
// (lexp eval --scale); an evaluation already completed is kept unless --overwrite. A source run
// that did not complete is skipped: its labels then have no run, and the criterion says so.
// A diagnosis already written with every intervention of the stage (run or not applied).
bool DiagnosedWith(const std::string& file, const std::vector<std::string>& interventions) {
  if (!RunCompleted(file)) return false;
  try {
    h5::Reader r(file);
    if (!r.root().Has("diagnosis")) return false;
    const h5::Group g = r.root().OpenGroup("diagnosis");
    std::vector<std::string> done;  // "a,b" and "c: reason; d: reason"
    std::stringstream run(g.AttrString("interventions"));
    for (std::string name; std::getline(run, name, ',');) done.push_back(name);
    const std::string skipped = g.AttrString("not_applied");
    for (size_t at = 0; at < skipped.size();) {
      const size_t colon = skipped.find(':', at);
      if (colon == std::string::npos) break;
      done.push_back(skipped.substr(at, colon - at));
      const size_t next = skipped.find("; ", colon);
      at = next == std::string::npos ? skipped.size() : next + 2;
    }
    for (const auto& i : interventions)
      if (std::find(done.begin(), done.end(), i) == done.end()) return false;
    return true;
  } catch (const Error&) {
    return false;  // damaged: diagnosed again
  }
}

// Every completed run of the diagnosed stage, diagnosed (lexp diagnose) with the stage's
// interventions: the run copied to out_dir with /diagnosis written into the copy (the source
// stays as it was). One already diagnosed with them is kept unless --overwrite.
std::vector<std::string> DiagnoseStage(const ClaimStage& stage,
                                       const std::vector<std::string>& sources,
                                       const ReproduceOptions& opt, const std::string& out_dir,
                                       const std::function<void(const std::string&)>& say) {
  std::vector<std::string> files;
  for (const auto& source : sources) {
    if (!RunCompleted(source)) {
      say("skipped '" + source + "', which did not complete");
      continue;
    }
    const std::string file = (fs::path(out_dir) / fs::path(source).filename()).string();
    files.push_back(file);
    if (!opt.overwrite && DiagnosedWith(file, stage.diagnose)) {
      say("kept diagnosed " + file);
      continue;
    }
    say("diagnosing " + source);
    const Diagnosis d = DiagnoseRun(source, {}, [&](const std::string& s) { say("  " + s); },
                                    stage.diagnose);
    fs::copy_file(source, file, fs::copy_options::overwrite_existing);
    h5::Writer w(file, h5::Writer::Mode::kUpdate);
    say(WriteDiagnosis(d, w.root()));
    w.Commit();
  }
  if (DrawsStageFigures(opt) && !files.empty()) DrawDiagnosis(out_dir);
  return files;
}

std::vector<std::string> EvaluateStage(const ClaimStage& stage,
                                       const std::vector<std::string>& sources,
                                       const ReproduceOptions& opt, const std::string& out_dir,
                                       const std::function<void(const std::string&)>& say) {
  std::vector<std::string> files;
  OwnSubdirectory(opt.out_root, fs::path(out_dir).lexically_relative(opt.out_root));
  if (stage.Diagnoses()) return DiagnoseStage(stage, sources, opt, out_dir, say);
  for (const auto& source : sources) {
    if (!RunCompleted(source)) {
      say("skipped '" + source + "', which did not complete");
      continue;
    }
    for (const StageEvaluation& one : StageEvaluations(stage, opt.budget)) {
      EvalCommandOptions eo;
      eo.run_file = source;
      eo.scale = one.scale;
      eo.sets = one.sets;
      eo.name = one.name;
      eo.out_dir = out_dir;
      eo.force = true;
      eo.progress = say;
      const std::string file = EvaluationFile(eo);
      files.push_back(file);
      if (!opt.overwrite && RunCompleted(file)) {
        say("kept completed " + file);
        continue;
      }
      EvaluateRunFile(eo);
    }
  }
  if (DrawsStageFigures(opt) && !files.empty()) DrawAllFigures(out_dir);
  return files;
}

}  // namespace

std::vector<Claim> SelectClaims(const std::vector<std::string>& ids) {
  const std::vector<Claim> all = BuiltinClaims();
  std::vector<Claim> out;
  for (const auto& id : ids) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Claim& c) { return c.id == id; });
    if (it == all.end()) {
      std::string list;
      for (const auto& c : all) list += (list.empty() ? "" : ", ") + c.id;
      FailInput("'" + id + "' is not a claim of lexp reproduce; claims: " + list +
                " (lexp reproduce --list)");
    }
    out.push_back(*it);
  }
  return out;
}

RecipeConfig StageRecipe(const Claim& claim, const ClaimStage& stage, const std::string& budget,
                         const std::string& claim_dir) {
  const std::string where = "claim '" + claim.file + "', stage '" + stage.name + "'";
  try {
    RecipeConfig cfg = ParseRecipe(
        StageRecipeText(stage.recipe),
        IsTomlPath(stage.recipe) ? stage.recipe : "experiments/recipes/" + stage.recipe + ".toml");
    if (!stage.variants.empty()) {
      std::vector<std::string> kept, names;
      for (const auto& v : cfg.variants) {
        const std::string name = v.substr(0, v.find(':'));
        names.push_back(name);
        if (std::find(stage.variants.begin(), stage.variants.end(), name) != stage.variants.end())
          kept.push_back(v);
      }
      for (const auto& want : stage.variants)
        if (std::find(names.begin(), names.end(), want) == names.end()) {
          std::string list;
          for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
          FailInput("variants: '" + want + "' is not a variant of recipe '" + stage.recipe +
                    "'; its variants: " + (list.empty() ? std::string("none") : list));
        }
      cfg.variants = kept;
    }
    ApplyOverrides(cfg, stage.set);
    ApplyOverrides(cfg, budget == "full" ? stage.full : stage.smoke);
    if (budget == "smoke") ApplyOverrides(cfg, SmokeCaps(cfg));
    if (!stage.init_from.empty())
      ApplyOverrides(cfg, {"train.init_from=" +
                           TomlString((fs::path(claim_dir) / "runs" / stage.init_from).string())});
    ValidateRecipe(cfg);
    // Verdict rule: where a claim fine-tunes, each seed starts from its own pre-training, so the
    // spread over seeds includes the pre-training's (lexp reproduce --help).
    LEXP_INPUT_CHECK(stage.init_from.empty() || cfg.Seeds().size() < 2 ||
                         stage.init_from.find("{seed}") != std::string::npos,
                     fmt::format("init_from = '{}' starts all {} seeds from one pre-training; "
                                 "write {{seed}} in it (e.g. STAGE/rope-seed{{seed}}.h5) and give "
                                 "the earlier stage the same seeds, so that each seed starts from "
                                 "its own pre-training and the intervals include its spread",
                                 stage.init_from, cfg.Seeds().size()));
    return cfg;
  } catch (const InputError& e) {
    FailInput(where + ": " + e.what());
  }
}

std::vector<RecipeConfig> StageRecipes(const Claim& claim, const std::string& budget,
                                       const std::string& claim_dir) {
  std::vector<RecipeConfig> recipes;
  for (const auto& stage : claim.stages) {
    if (!stage.EvaluatesOnly()) {
      recipes.push_back(StageRecipe(claim, stage, budget, claim_dir));
      continue;
    }
    size_t k = 0;  // the evaluated stage, an earlier one (ParseClaim checked it)
    while (claim.stages[k].name != stage.evaluate) ++k;
    RecipeConfig check = recipes[k];
    try {
      for (const StageEvaluation& e : StageEvaluations(stage, budget)) {
        RecipeConfig one = check;
        ApplyOverrides(one, e.sets);
        ValidateEvaluationRecipe(one);
      }
      ApplyOverrides(check, EvaluationOverrides(stage, budget));
      ValidateEvaluationRecipe(check);
    } catch (const InputError& e) {
      FailInput("claim '" + claim.file + "', stage '" + stage.name + "': " + e.what());
    }
    recipes.push_back(check);
  }
  return recipes;
}

// Labels from the plans: a training stage's rows (seeds grouped), an evaluating stage's sources
// with the name each rule adds.
void CheckCriterionNamesPlannedRuns(const Claim& claim, const std::vector<RecipeConfig>& recipes,
                                    const std::string& budget, const std::string& claim_dir) {
  std::map<std::string, std::vector<std::string>> labels, tasks;  // by stage, in plan order
  auto add = [](std::vector<std::string>& to, const std::string& v) {
    if (std::find(to.begin(), to.end(), v) == to.end()) to.push_back(v);
  };
  for (size_t i = 0; i < claim.stages.size(); ++i) {
    const ClaimStage& stage = claim.stages[i];
    if (stage.EvaluatesOnly()) {
      for (const auto& source : labels[stage.evaluate])
        for (const StageEvaluation& e : StageEvaluations(stage, budget))
          add(labels[stage.name],
              source + (e.name.empty() ? EvaluationNameSuffix(e.scale, e.sets) : "+" + e.name));
      tasks[stage.name] = tasks[stage.evaluate];
      continue;
    }
    for (const auto& row : SweepPlan(recipes[i], (fs::path(claim_dir) / "runs" / stage.name).string())) {
      add(labels[stage.name], GroupKey(row.label));
      add(tasks[stage.name], row.task);
    }
  }
  const ClaimCriterion& k = claim.criterion;
  const std::string where = "claim '" + claim.file + "' [criterion]";
  const std::vector<std::string>& planned = labels[k.stage];
  LEXP_INPUT_CHECK(k.task.empty() || std::find(tasks[k.stage].begin(), tasks[k.stage].end(),
                                               k.task) != tasks[k.stage].end(),
                   fmt::format("{}.task = '{}': stage '{}' trains no run of it at the {} budget; "
                               "its tasks: {}",
                               where, k.task, k.stage, budget, fmt::join(tasks[k.stage], ", ")));
  std::vector<std::pair<std::string, std::string>> named;  // (label, where it is named)
  for (const auto& h : k.holds) {
    const Comparison c = ParseComparison(h, where + ".holds");
    named.emplace_back(c.a, "holds '" + h + "'");
    if (!c.b_is_number) named.emplace_back(c.b, "holds '" + h + "'");
  }
  for (const auto& p : k.premises) {
    const Comparison c = ParseComparison(p, where + ".requires");
    named.emplace_back(c.a, "requires '" + p + "'");
    if (!c.b_is_number) named.emplace_back(c.b, "requires '" + p + "'");
  }
  for (const auto& a : k.also) named.emplace_back(a, "also");
  for (auto& [label, in] : named) label = SplitLabelMetric(label, k.metric).label;
  for (const auto& [label, in] : named)
    LEXP_INPUT_CHECK(std::find(planned.begin(), planned.end(), label) != planned.end(),
                     fmt::format("{}.{} names '{}', which stage '{}' does not write at the {} "
                                 "budget; its run labels: {}",
                                 where, in, label, k.stage, budget, fmt::join(planned, ", ")));
}

std::string ClaimDir(const Claim& claim, const ReproduceOptions& opt) {
  return (fs::path(opt.out_root) / opt.budget / claim.DirName()).string();
}

namespace {

// Runs every stage of a claim with these recipes into <runs_root>/runs/<stage>/ and judges the
// criterion on the judged stage's planned files.
Verdict RunStagesAndJudge(const Claim& claim, const std::vector<RecipeConfig>& recipes,
                          const std::string& runs_root, const ReproduceOptions& opt,
                          const std::function<void(const std::string&)>& say) {
  std::map<std::string, std::vector<std::string>> stage_files;  // planned run files by stage
  for (size_t i = 0; i < claim.stages.size(); ++i) {
    const ClaimStage& stage = claim.stages[i];
    const std::string out_dir = (fs::path(runs_root) / "runs" / stage.name).string();
    auto stage_say = [&](const std::string& s) { say(stage.name + ": " + s); };
    if (stage.EvaluatesOnly()) {
      say(fmt::format("stage {} of {}: {} ({} stage {} {} {}) into {}", i + 1,
                      claim.stages.size(), stage.name,
                      stage.Diagnoses() ? "diagnoses" : "evaluates", stage.evaluate,
                      stage.Diagnoses() ? "with" : "under",
                      fmt::join(stage.Diagnoses()       ? stage.diagnose
                                : stage.scales.empty() ? stage.evaluations
                                                       : stage.scales,
                                ", "),
                      out_dir));
      stage_files[stage.name] =
          EvaluateStage(stage, stage_files[stage.evaluate], opt, out_dir, stage_say);
      continue;
    }
    RecipeConfig cfg = recipes[i];
    // A pre-training (of each seed, with {seed}) that diverged or failed: its file says why; the
    // claim is untested.
    for (const int seed : cfg.Seeds()) {
      const std::string from = cfg.For(cfg.task, seed).init_from;
      if (stage.init_from.empty() || RunCompleted(from)) continue;
      Verdict v;
      v.verdict = "not testable";
      v.reason = "stage '" + stage.name + "' starts from '" +
                 fs::path(from).lexically_relative(fs::path(runs_root) / "runs").string() +
                 "', which did not complete";
      return v;
    }
    if (opt.jobs > 0) cfg.jobs = opt.jobs;
    if (opt.collect_only) {
      // The arrays of lexp reproduce --slurm trained this stage; judge only what they completed.
      // A diverged run is final (judged as not completed, as in one process); a missing,
      // running or failed one is not.
      for (const auto& st : ReadRowStates(SweepPlan(cfg, out_dir))) {
        const PlanRow& row = st.row;
        LEXP_INPUT_CHECK(st.state == RowState::kDone || st.state == RowState::kDiverged,
                         "claim " + claim.id + ": stage '" + stage.name + "': run file '" +
                             row.file + "' is " + RowStateName(st.state) +
                             "; --collect trains nothing: the stage's array (lexp reproduce "
                             "--slurm) must finish first (lexp status " + out_dir + ")");
        if (claim.criterion.task.empty() || stage.name != claim.criterion.stage ||
            row.task == claim.criterion.task)
          stage_files[stage.name].push_back(row.file);
      }
      say(fmt::format("stage {} of {}: {}: {} completed runs in {}", i + 1, claim.stages.size(),
                      stage.name, stage_files[stage.name].size(), out_dir));
      continue;
    }
    SweepOptions so;
    so.out_dir = out_dir;
    so.resume = !opt.overwrite;
    so.overwrite = opt.overwrite;
    so.figures = DrawsStageFigures(opt);
    so.progress = stage_say;
    say(fmt::format("stage {} of {}: {} (recipe {}, {} budget, {} steps) into {}", i + 1,
                    claim.stages.size(), stage.name, stage.recipe, opt.budget, WithStepsCap(cfg).steps,
                    so.out_dir));
    RunRecipe(cfg, so);
    // Only the runs this budget planned are judged (not files an earlier definition left).
    for (const auto& row : SweepPlan(cfg, so.out_dir))
      if (claim.criterion.task.empty() || stage.name != claim.criterion.stage ||
          row.task == claim.criterion.task)
        stage_files[stage.name].push_back(row.file);
  }
  return JudgeCriterion(claim.criterion, stage_files[claim.criterion.stage],
                        (fs::path(runs_root) / "runs" / claim.criterion.stage).string());
}

}  // namespace

std::vector<ClaimRoot> PlanClaimRoots(const Claim& claim, const std::string& budget,
                                      const std::string& dir) {
  // Every stage's recipe is checked before the first one trains, at every step count of the
  // trend too.
  std::vector<ClaimRoot> roots;
  roots.push_back({0, true, dir, StageRecipes(claim, budget, dir)});
  const std::vector<RecipeConfig>& recipes = roots.front().recipes;
  if (claim.testable) CheckCriterionNamesPlannedRuns(claim, recipes, budget, dir);
  const std::vector<int> trend_steps = budget == "full" ? claim.trend.full : claim.trend.smoke;
  if (trend_steps.empty()) return roots;
  size_t trend_stage = 0;
  while (claim.stages[trend_stage].name != claim.trend.stage) ++trend_stage;
  roots.front().steps = recipes[trend_stage].steps;
  for (const int steps : trend_steps) {
    if (steps == roots.front().steps) continue;  // the budget's own point
    const std::string root = (fs::path(dir) / fmt::format("steps{}", steps)).string();
    std::vector<RecipeConfig> r = StageRecipes(claim, budget, root);
    try {
      ApplyOverrides(r[trend_stage], {fmt::format("train.steps={}", steps)});
      ValidateRecipe(r[trend_stage]);
    } catch (const InputError& e) {
      FailInput("claim '" + claim.file + "' [trend]: " + e.what());
    }
    roots.push_back({steps, false, root, std::move(r)});
  }
  return roots;
}

std::string ReproduceClaim(const Claim& claim, const ReproduceOptions& opt) {
  LEXP_INPUT_CHECK(opt.budget == "smoke" || opt.budget == "full",
                   "--budget '" + opt.budget + "'; allowed: smoke, full");
  const std::string dir = ClaimDir(claim, opt);
  const auto start = std::chrono::steady_clock::now();
  auto say = [&](const std::string& s) {
    if (opt.progress) opt.progress(claim.id + ": " + s);
  };
  VerdictRecord rec;
  rec.claim = claim;
  rec.budget = opt.budget;
  const std::vector<ClaimRoot> roots = PlanClaimRoots(claim, opt.budget, dir);
  if (roots.size() > 1) rec.trend_stage = claim.trend.stage;
  // Whether an earlier call's runs are kept (their time is that call's verdict's).
  bool kept_runs = false;
  for (const ClaimRoot& root : roots)
    for (size_t i = 0; i < claim.stages.size() && !opt.overwrite && !kept_runs; ++i)
      if (!claim.stages[i].EvaluatesOnly())
        for (const auto& row :
             SweepPlan(root.recipes[i], (fs::path(root.dir) / "runs" / claim.stages[i].name).string()))
          kept_runs = kept_runs || fs::exists(row.file);
  if (!claim.testable) {
    rec.verdict.verdict = "not testable";
    rec.verdict.reason = claim.untestable_reason;
  } else {
    for (const ClaimRoot& root : roots) {
      if (root.budget) {
        rec.verdict = RunStagesAndJudge(claim, root.recipes, root.dir, opt, say);
        if (roots.size() > 1) rec.trend.push_back({root.steps, true, rec.verdict});
        continue;
      }
      say(fmt::format("trend: stage {} at {} steps", claim.trend.stage, root.steps));
      const Verdict v = RunStagesAndJudge(claim, root.recipes, root.dir, opt,
                                          [&](const std::string& s) {
                                            say(fmt::format("{} steps: {}", root.steps, s));
                                          });
      say(fmt::format("trend: {} steps: {} ({})", root.steps, v.verdict, v.reason));
      rec.trend.push_back({root.steps, false, v});
    }
    std::sort(rec.trend.begin(), rec.trend.end(),
              [](const TrendPoint& a, const TrendPoint& b) { return a.steps < b.steps; });
  }
  rec.minutes =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60;
  OwnSubdirectory(opt.out_root, fs::path(dir).lexically_relative(opt.out_root));
  const std::string path = (fs::path(dir) / "verdict.h5").string();
  // Runs kept from earlier calls were timed by those calls: their verdict's minutes count too,
  // so the time is that of every run the verdict was judged on (an --overwrite, or an earlier
  // verdict whose runs are gone, starts again).
  if (kept_runs && fs::exists(path)) {
    try {
      rec.minutes += ReadVerdictFile(path).minutes;
    } catch (const Error&) {
      // An unreadable earlier verdict is replaced; its time is unknown.
    }
  }
  WriteVerdictFile(path, rec);
  if (opt.figures && !rec.verdict.groups.empty()) say(FigureLine(DrawReproduction(dir)));
  if (opt.figures && !rec.trend.empty()) say(FigureLine(DrawReproductionTrend(dir)));
  say(fmt::format("{}{} ({}); {:.1f} min; {}", SmokeMark(opt.budget), rec.verdict.verdict,
                  rec.verdict.reason, rec.minutes, path));
  return path;
}

}  // namespace lexp
