// lexp reproduce: the gallery of published claims (experiments/reproduce/gallery.h): list them,
// or run some or all at a budget, judge each by its criterion and write the verdicts and table.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "experiments/commands/command.h"
#include "experiments/core/output_lock.h"
#include "experiments/reproduce/criterion.h"
#include "experiments/reproduce/claim_slurm.h"
#include "experiments/reproduce/gallery.h"
#include "experiments/reproduce/preregistration.h"

namespace lexp::cli {
namespace {

class ReproduceCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared& shared) override {
    auto* cmd = app.add_subcommand(
        "reproduce",
        "run published claims (experiments/reproductions/) and judge each by the criterion "
        "written in its file: reproduced, partly, no effect, contradicted, or not testable at "
        "this scale");
    cmd->add_option("IDS", ids_,
                    "claims to run by id (P2, X6, M3, ...; lexp reproduce --list), or claim files "
                    "of your own (*.toml, in the format of experiments/reproductions/)");
    cmd->add_flag("--list", list_,
                  "print every claim, one per line starting with its id: its compute at each "
                  "budget, the commit of its criterion and the build that judged its full-budget "
                  "verdict (pre-registration: the criterion's commit comes first)");
    cmd->add_flag("--all", all_, "run every claim");
    cmd->add_flag("--table", table_,
                  "run nothing: write the budget's table again from its verdict files (with the "
                  "default --out and the full budget, ./REPRODUCTIONS.md too)");
    cmd->add_option("--budget", budget_,
                    fmt::format("smoke: a check of the pipeline, seconds per claim (each "
                                "stage's smoke overrides, then at most {} training steps, the "
                                "recipe's schedule shrunk in proportion, the first {} seeds, {} "
                                "sequences per evaluated length, and only the claim's figure; its "
                                "verdicts are not evidence); full: the budget the gallery table "
                                "reports, which reads the claim",
                                kSmokeSteps, kSmokeSeeds, kSmokeEvalSamples))
        ->check(CLI::IsMember({"smoke", "full"}));
    cmd->add_option("--jobs", jobs_, "models of each stage trained at once (as lexp run --jobs)")
        ->check(CLI::Range(1, 64));
    cmd->add_option("--out", out_,
                    "output root (default data/reproductions): <budget>/<id>_<name>/ holds the "
                    "runs, verdict.h5 and figures, <budget>/REPRODUCTIONS.md the table; with the "
                    "default root, --budget full also writes ./REPRODUCTIONS.md, the gallery's "
                    "table at the top of the checkout");
    cmd->add_flag("--overwrite", overwrite_,
                  "train every run again (default: keep the completed runs of an earlier "
                  "reproduce and continue the others)");
    cmd->add_flag("--no-figures", no_figures_, "draw no figures");
    cmd->add_flag("--slurm", slurm_,
                  "instead of running: write the claims' stages as SLURM job arrays (one per "
                  "stage that trains, each after the one before) and a job that judges them "
                  "(<dir>/<budget>/<id>_<name>/slurm/submit.sh submits them in order)");
    cmd->add_flag("--submit", slurm_options_.submit, "with --slurm: submit them (sbatch)");
    cmd->add_flag("--collect", collect_,
                  "train nothing: judge from the runs the arrays of --slurm made (every planned "
                  "run must be complete), running the stages that only evaluate");
    AddSlurmOptions(cmd, slurm_options_);
    shared.AddFormatOption(cmd);
    cmd->footer(
        "Each claim's file states the claim, its source, the published figure, the protocol, "
        "lexp's deviations, the stages (recipes of experiments/recipes/ with overrides per "
        "budget) and the criterion.\n\n" +
        VerdictRules());
    return cmd;
  }

  int Run(Shared&) override {
    if (list_) {
      // Pre-registration, from the checkout lexp was built from: the commit of each claim's
      // criterion and the build that judged its full-budget verdict (under --out when given).
      const std::string repo = SourceTree();
      const bool in_git = Git(repo, {"rev-parse", "--git-dir"}).ok;
      const std::string root = out_.empty() ? "data/reproductions" : out_;
      for (const auto& c : BuiltinClaims()) {
        // Minutes are wall time on 2 cores (the full budget's estimate in the claim file; the
        // smoke budget is a pipeline check of seconds).
        std::string time =
            c.full_minutes > 0
                ? fmt::format(" [compute: full ~{:g} min = {:.2f} core-h, on 2 cores]",
                              c.full_minutes, c.full_minutes * 2 / 60)
                : "";
        if (!c.testable) time = " [not testable at this scale]";
        std::string history = " [criterion: not in a git checkout]";
        if (in_git) {
          const ClaimHistory h = HistoryOf(c, repo, root, "full");
          history = fmt::format(
              " [criterion {}, full verdict {}]",
              h.criterion_commit.empty() ? "uncommitted" : h.criterion_commit.substr(0, 12),
              h.verdict_file.empty() ? std::string("none")
                                     : (h.verdict_commit.empty() ? "of an unrecorded build"
                                                                 : "by " + h.verdict_commit));
        }
        PrintLine(fmt::format("{:<4} {:<24} {} ({}){}{}", c.id, c.name, c.statement, c.source,
                              time, history));
      }
      return 0;
    }
    if (table_) {
      LEXP_INPUT_CHECK(ids_.empty() && !all_, "lexp reproduce --table runs nothing: give no claim");
      const std::string root = out_.empty() ? "data/reproductions" : out_;
      const std::string dir = (std::filesystem::path(root) / budget_).string();
      LEXP_INPUT_CHECK(std::filesystem::is_directory(dir),
                       "lexp reproduce --table: '" + dir + "' holds no verdicts of the " +
                           budget_ + " budget");
      const OutputLock lock(dir);
      PrintLine("table of every verdict of the " + budget_ + " budget: " + WriteGalleryTable(dir));
      if (budget_ == "full" && out_.empty())
        PrintLine("the gallery's table: " + WriteGalleryTable(dir, "REPRODUCTIONS.md"));
      return 0;
    }
    LEXP_INPUT_CHECK(all_ != !ids_.empty(),
                     "lexp reproduce: name claims by id, or --all, or --list (ids: lexp "
                     "reproduce --list)");
    // A claim by id, or a claim file of one's own by path (*.toml).
    std::vector<Claim> claims;
    std::vector<std::string> claim_refs;  // how a job names each claim again
    if (all_) claims = BuiltinClaims();
    for (const auto& c : claims) claim_refs.push_back(c.id);
    for (const auto& id : ids_) {
      claim_refs.push_back(id);
      claims.push_back(IsTomlPath(id) ? ParseClaim(ReadRecipeFile(id), id)
                                      : SelectClaims({id}).front());
    }
    LEXP_INPUT_CHECK(!(slurm_ && collect_),
                     "lexp reproduce: --slurm writes the jobs, --collect judges what they made; "
                     "give one");
    LEXP_INPUT_CHECK(slurm_ || !slurm_options_.submit,
                     "lexp reproduce: --submit goes with --slurm");
    ReproduceOptions opt;
    if (!out_.empty()) opt.out_root = out_;
    opt.collect_only = collect_;
    opt.budget = budget_;
    opt.jobs = jobs_;
    opt.overwrite = overwrite_;
    opt.figures = !no_figures_;
    opt.progress = PrintLine;
    std::vector<std::string> verdicts;
    int report_code = 0;
    const OutputLock lock((std::filesystem::path(opt.out_root) / opt.budget).string());
    if (slurm_) {
      slurm_options_.print = PrintLine;
      for (size_t i = 0; i < claims.size(); ++i)
        WriteClaimSlurm(claims[i], IsTomlPath(claim_refs[i])
                                       ? std::filesystem::absolute(claim_refs[i]).string()
                                       : claims[i].id,
                        opt, slurm_options_);
      return 0;
    }
    for (size_t i = 0; i < claims.size(); ++i) {
      PrintLine(fmt::format("lexp reproduce: claim {} of {}: {} {}", i + 1, claims.size(),
                            claims[i].id, claims[i].statement));
      verdicts.push_back(ReproduceClaim(claims[i], opt));
      report_code = std::max(report_code, WriteReportAndSay(ClaimDir(claims[i], opt)));
    }
    const std::string table =
        WriteGalleryTable((std::filesystem::path(opt.out_root) / opt.budget).string());
    PrintLine("table of every verdict of the " + opt.budget + " budget: " + table);
    // The full budget's table is the gallery's: REPRODUCTIONS.md at the top of the checkout
    // (the working directory, as for every recipe path), committed with its figures.
    if (opt.budget == "full" && out_.empty()) {
      const std::string top = WriteGalleryTable(
          (std::filesystem::path(opt.out_root) / opt.budget).string(), "REPRODUCTIONS.md");
      PrintLine("the gallery's table: " + top);
    }
    return report_code;
  }

 private:
  std::vector<std::string> ids_;
  bool list_ = false, all_ = false, overwrite_ = false, no_figures_ = false;
  bool slurm_ = false, collect_ = false, table_ = false;
  SlurmOptions slurm_options_;
  std::string budget_ = "smoke", out_;
  int jobs_ = 0;
};

}  // namespace

std::unique_ptr<Command> MakeReproduceCommand() { return std::make_unique<ReproduceCommand>(); }

}  // namespace lexp::cli
