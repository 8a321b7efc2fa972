#include "experiments/reproduce/gallery.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "experiments/reproduce/criterion.h"
#include "experiments/reproduce/verdict_file.h"
#include "experiments/training/sweep.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"

namespace lexp {
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

std::string Cell(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::string out;
  for (const char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
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

std::string Measured(const VerdictRecord& r) {
  if (r.verdict.groups.empty()) return "";
  std::string s = r.claim.criterion.metric + ": ";
  bool first = true;
  for (const auto& g : r.verdict.groups) {
    s += first ? "" : "; ";
    first = false;
    if (g.per_seed.empty()) {
      s += g.label + " no completed run";
      continue;
    }
    s += fmt::format("{} {:.3f} [{:.3f}, {:.3f}]", g.label, g.score, g.lo, g.hi);
  }
  return s;
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
    RecipeConfig cfg = ParseRecipe(StageRecipeText(stage.recipe),
                                   IsTomlPath(stage.recipe)
                                       ? stage.recipe
                                       : "experiments/recipes/" + stage.recipe + ".toml");
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
    if (!stage.init_from.empty())
      ApplyOverrides(cfg, {"train.init_from=" +
                           TomlString((fs::path(claim_dir) / "runs" / stage.init_from).string())});
    ValidateRecipe(cfg);
    return cfg;
  } catch (const InputError& e) {
    FailInput(where + ": " + e.what());
  }
}

std::string ClaimDir(const Claim& claim, const ReproduceOptions& opt) {
  return (fs::path(opt.out_root) / opt.budget / claim.DirName()).string();
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
  // Every stage's recipe is checked before the first one trains.
  std::vector<RecipeConfig> recipes;
  for (const auto& stage : claim.stages)
    recipes.push_back(StageRecipe(claim, stage, opt.budget, dir));
  if (!claim.testable) {
    rec.verdict.verdict = "not testable";
    rec.verdict.reason = claim.untestable_reason;
  } else {
    std::vector<std::string> judged_files;
    std::string blocked;  // why a fine-tuning stage could not start
    for (size_t i = 0; i < claim.stages.size() && blocked.empty(); ++i) {
      const ClaimStage& stage = claim.stages[i];
      RecipeConfig cfg = recipes[i];
      if (!stage.init_from.empty() && !RunCompleted(cfg.init_from)) {
        // The earlier stage's run diverged or failed: its file says why; this claim is untested.
        blocked = "stage '" + stage.name + "' starts from '" + stage.init_from +
                  "', which did not complete";
        break;
      }
      if (opt.jobs > 0) cfg.jobs = opt.jobs;
      SweepOptions so;
      so.out_dir = (fs::path(dir) / "runs" / stage.name).string();
      so.resume = !opt.overwrite;
      so.overwrite = opt.overwrite;
      so.figures = opt.figures;
      so.progress = [&](const std::string& s) { say(stage.name + ": " + s); };
      say(fmt::format("stage {} of {}: {} (recipe {}, {} budget) into {}", i + 1,
                      claim.stages.size(), stage.name, stage.recipe, opt.budget, so.out_dir));
      RunRecipe(cfg, so);
      // Only the runs this budget planned are judged (not files an earlier definition left).
      if (stage.name == claim.criterion.stage)
        for (const auto& row : SweepPlan(cfg, so.out_dir))
          if (claim.criterion.task.empty() || row.task == claim.criterion.task)
            judged_files.push_back(row.file);
    }
    if (blocked.empty()) {
      rec.verdict = JudgeCriterion(claim.criterion, judged_files,
                                   (fs::path(dir) / "runs" / claim.criterion.stage).string());
    } else {
      rec.verdict.verdict = "not testable";
      rec.verdict.reason = blocked;
    }
  }
  rec.minutes =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60;
  fs::create_directories(dir);
  const std::string path = (fs::path(dir) / "verdict.h5").string();
  WriteVerdictFile(path, rec);
  if (opt.figures && !rec.verdict.groups.empty()) DrawReproduction(dir);
  say(fmt::format("{} ({}); {:.1f} min; {}", rec.verdict.verdict, rec.verdict.reason, rec.minutes,
                  path));
  return path;
}

std::string WriteGalleryTable(const std::string& budget_dir) {
  std::vector<VerdictRecord> records;
  std::map<std::string, std::string> dir_of;
  if (fs::is_directory(budget_dir))
    for (const auto& e : fs::directory_iterator(budget_dir)) {
      const fs::path v = e.path() / "verdict.h5";
      if (!e.is_directory() || !fs::exists(v)) continue;
      records.push_back(ReadVerdictFile(v.string()));
      dir_of[records.back().claim.id + records.back().claim.name] = e.path().filename().string();
    }
  std::sort(records.begin(), records.end(), [](const VerdictRecord& a, const VerdictRecord& b) {
    return ClaimBefore(a.claim, b.claim);
  });
  const std::string path = (fs::path(budget_dir) / "REPRODUCTIONS.md").string();
  fs::create_directories(budget_dir);
  std::ofstream out(path + ".tmp");
  out << "# Reproductions: published claims judged on small models\n\n"
      << "Generated by `lexp reproduce` from the verdict files of this directory (each "
         "`<id>_<name>/verdict.h5`, layout in data/README.md); do not edit by hand. Each claim's "
         "criterion was written in its file (experiments/reproductions/) before it ran. "
         "Intervals are 95%: Student-t over seeds, or Clopper-Pearson over the sequences of one "
         "run.\n\n"
      << "| id | claim | source | published | lexp measured (budget, minutes) | verdict | figure |\n"
      << "|---|---|---|---|---|---|---|\n";
  for (const auto& r : records) {
    const std::string dir = dir_of[r.claim.id + r.claim.name];
    const bool has_figure = fs::exists(fs::path(budget_dir) / dir / "figures" / "reproduction.png");
    out << "| " << r.claim.id << " | " << Cell(r.claim.statement) << " | " << Cell(r.claim.source)
        << " | " << Cell(r.claim.published) << " | "
        << Cell(Measured(r) + fmt::format(" ({}, {:.1f} min)", r.budget, r.minutes)) << " | **"
        << r.verdict.verdict << "**: " << Cell(r.verdict.reason) << " | "
        << (has_figure ? "[figure](" + dir + "/figures/reproduction.png)" : std::string("-"))
        << " |\n";
  }
  out.close();
  fs::rename(path + ".tmp", path);
  return path;
}

}  // namespace lexp
