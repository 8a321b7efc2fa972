// lexp run [RECIPE]: train and evaluate every model of a recipe (or rows of its plan, --job).
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "experiments/commands/command.h"
#include "experiments/core/default_recipe.h"
#include "experiments/training/job_list.h"
#include "experiments/training/sweep.h"
#include "nn/parallel.h"

namespace lexp::cli {
namespace {

class RunCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared& shared) override {
    auto* run = app.add_subcommand("run", "train and evaluate every model of a recipe");
    recipe_option_ = run->add_option(
        "RECIPE", recipe_path_,
        "TOML recipe (default: the embedded default recipe, experiments/recipes/default.toml)");
    run->add_option("--set", sets_,
                    "override a recipe key: --set train.steps=200 "
                    "--set model.encodings=rope,alibi --set encoding_options.rope.base=500")
        ->take_all();
    run->add_option("--out", out_dir_, "output directory (default: data/runs/<run.name>)");
    run->add_flag("--resume", resume_,
                  "continue interrupted models from their checkpoints; keep models already done");
    run->add_flag("--overwrite", overwrite_,
                  "train every model again even where the output directory holds its run file")
        ->excludes("--resume");
    run->add_flag("--no-figures", no_figures_, "do not draw figures at the end");
    run->add_option(
           "--jobs", jobs_,
           "models of the sweep trained at once, each with its share of --threads (as "
           "run.jobs, whose default 0 packs one model per thread as memory allows; run files "
           "are the same as one at a time)")
        ->check(CLI::Range(1, 64));
    run->add_flag("--print-recipe", print_recipe_, "print the effective recipe and exit");
    job_option_ =
        run->add_option(
               "--job", job_,
               "run only these rows of the sweep's plan (lexp plan): K, K1-K2 or a list "
               "0,3,7-9; a row whose run file is complete is skipped, an interrupted one "
               "resumes from its checkpoint; no figures or summary (lexp collect makes them)")
            ->excludes("--overwrite");
    shared.AddFormatOption(run);
    run->footer(RecipeKeysHelp());
    return run;
  }

  int Run(Shared& shared) override {
    const bool given = recipe_option_->count() > 0;
    RecipeConfig cfg = given ? ParseRecipe(ReadRecipeFile(recipe_path_), recipe_path_)
                             : ParseRecipe(kDefaultRecipeToml, "<embedded default recipe>");
    // A job of a planned sweep reads the frozen recipe of its run directory with the source it
    // was made from, so that its run file records what a single-process run of the sweep records.
    std::error_code same_ec;
    if (!job_.empty() && !out_dir_.empty() && given &&
        std::filesystem::equivalent(recipe_path_, FrozenRecipePath(out_dir_), same_ec))
      cfg = ReadFrozenRecipe(out_dir_);
    ApplyOverrides(cfg, sets_);
    if (jobs_ > 0) cfg.jobs = jobs_;
    ValidateRecipe(cfg);
    const std::string out_dir = out_dir_.empty() ? DefaultRunDir(cfg) : out_dir_;
    if (print_recipe_) {
      std::fputs(RecipeToToml(cfg).c_str(), stdout);
      // What the run will write, as TOML comments (the plan's rows).
      std::string files = "\n# files this run writes (lexp plan lists them as rows):\n";
      for (const auto& row : SweepPlan(cfg, out_dir)) files += "#   " + row.file + "\n";
      files +=
          "#   " + PlanDirectory(out_dir) + "/, figures/ beside the run files" +
          (!cfg.IsSweep() ? std::string("\n")
                          : ", " + (std::filesystem::path(out_dir) / "summary.h5").string() + "\n");
      std::fputs(files.c_str(), stdout);
      return 0;
    }
    // The recipe's run.threads, unless --threads says otherwise.
    std::unique_ptr<ThreadLimit> limit;
    if (cfg.threads > 0 && shared.threads == 0) limit = std::make_unique<ThreadLimit>(cfg.threads);
    const size_t models = SweepPlan(cfg, out_dir).size();
    const int jobs = SweepJobs(cfg, models);
    PrintLine(fmt::format("lexp run: recipe {}, task {}, {} model(s), {} threads{}, output {}",
                          cfg.source_name, fmt::format("{}", fmt::join(cfg.Tasks(), ",")), models,
                          ThreadLimit::Active(),
                          jobs > 1 ? fmt::format(", {} models at once", jobs) : "", out_dir));
    // NoPE sees a set, not a sequence, without a causal mask: in the encoder layout it cannot
    // tell positions apart, and its runs measure that.
    if (cfg.layout == "encoder" &&
        std::find(cfg.encodings.begin(), cfg.encodings.end(), "nope") != cfg.encodings.end())
      PrintLine(
          "note: nope in the encoder layout is order-blind (no causal mask, no positions): its "
          "outputs cannot depend on where a token is");
    SweepOptions so;
    so.out_dir = out_dir;
    so.resume = resume_;
    so.overwrite = overwrite_;
    so.figures = !no_figures_;
    so.progress = PrintLine;
    if (job_option_->count() > 0) so.rows = ParseJobList(job_);  // "" too: refused there
    const auto runs = RunRecipe(cfg, so);
    if (!so.rows.empty())
      PrintLine(
          fmt::format("rows {} done; lexp status {} counts the sweep's rows, lexp collect {} "
                      "summarises them",
                      JobListText(so.rows), out_dir, out_dir));
    else if (cfg.tasks.empty() && cfg.seeds.empty())
      std::fputs(SummaryTable(cfg, runs).c_str(), stdout);
    else
      std::fputs(SeedSummaryTable(cfg, runs).c_str(), stdout);
    const int report_code = so.rows.empty() ? WriteReportAndSay(out_dir) : 0;
    // A model that failed on bad input or on a bug gives the exit code of that error once the
    // sweep is done; one that diverged (or failed otherwise) gives 1.
    int code = 0;
    for (const auto& r : runs) {
      if (r.state == "failed")
        std::fprintf(stderr, "lexp: %s: %s failed: %s\n",
                     r.failure == RunSummary::Failure::kInternal ? "internal error" : "error",
                     (r.label.empty() ? r.encoding : r.label).c_str(), r.message.c_str());
      if (r.failure == RunSummary::Failure::kInternal) code = 3;
      if (r.failure == RunSummary::Failure::kInput && code != 3) code = 2;
      if ((r.state == "diverged" || r.state == "failed") && code == 0) code = 1;
    }
    return std::max(code, report_code);
  }

 private:
  CLI::Option* recipe_option_ = nullptr;
  std::string recipe_path_, out_dir_, job_;
  CLI::Option* job_option_ = nullptr;
  std::vector<std::string> sets_;
  bool resume_ = false, overwrite_ = false, no_figures_ = false, print_recipe_ = false;
  int jobs_ = 0;
};

}  // namespace

std::unique_ptr<Command> MakeRunCommand() { return std::make_unique<RunCommand>(); }

}  // namespace lexp::cli
