// lexp reproduce: the gallery of published claims (experiments/reproduce/gallery.h): list them,
// or run some or all at a budget, judge each by its criterion and write the verdicts and table.
#include <fmt/core.h>

#include <cstdio>
#include <filesystem>

#include "experiments/commands/command.h"
#include "experiments/core/output_lock.h"
#include "experiments/reproduce/criterion.h"
#include "experiments/reproduce/gallery.h"

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
    cmd->add_flag("--list", list_, "print every claim, one per line starting with its id");
    cmd->add_flag("--all", all_, "run every claim");
    cmd->add_option("--budget", budget_,
                    "smoke: minutes per claim, what a new user tries; full: the budget the "
                    "gallery table reports")
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
      for (const auto& c : BuiltinClaims()) {
        std::string time = c.smoke_minutes > 0 ? fmt::format(" [smoke ~{:g} min, full ~{:g} min]",
                                                             c.smoke_minutes, c.full_minutes)
                                               : "";
        if (!c.testable) time = " [not testable at this scale]";
        PrintLine(fmt::format("{:<4} {:<24} {} ({}){}", c.id, c.name, c.statement, c.source, time));
      }
      return 0;
    }
    LEXP_INPUT_CHECK(all_ != !ids_.empty(),
                     "lexp reproduce: name claims by id, or --all, or --list (ids: lexp "
                     "reproduce --list)");
    // A claim by id, or a claim file of one's own by path (*.toml).
    std::vector<Claim> claims;
    if (all_) claims = BuiltinClaims();
    for (const auto& id : ids_) {
      claims.push_back(IsTomlPath(id) ? ParseClaim(ReadRecipeFile(id), id)
                                      : SelectClaims({id}).front());
    }
    ReproduceOptions opt;
    if (!out_.empty()) opt.out_root = out_;
    opt.budget = budget_;
    opt.jobs = jobs_;
    opt.overwrite = overwrite_;
    opt.figures = !no_figures_;
    opt.progress = PrintLine;
    std::vector<std::string> verdicts;
    const OutputLock lock((std::filesystem::path(opt.out_root) / opt.budget).string());
    for (size_t i = 0; i < claims.size(); ++i) {
      PrintLine(fmt::format("lexp reproduce: claim {} of {}: {} {}", i + 1, claims.size(),
                            claims[i].id, claims[i].statement));
      verdicts.push_back(ReproduceClaim(claims[i], opt));
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
    return 0;
  }

 private:
  std::vector<std::string> ids_;
  bool list_ = false, all_ = false, overwrite_ = false, no_figures_ = false;
  std::string budget_ = "smoke", out_;
  int jobs_ = 0;
};

}  // namespace

std::unique_ptr<Command> MakeReproduceCommand() { return std::make_unique<ReproduceCommand>(); }

}  // namespace lexp::cli
