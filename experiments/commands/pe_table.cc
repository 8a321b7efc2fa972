// lexp pe-table: closed-form tables of the RoPE scaling rules and the bias families, no training
// (experiments/training/pe_table.h).
#include "experiments/training/pe_table.h"

#include "experiments/commands/command.h"
#include "notebooks_cpp/figures.h"
#include "notebooks_cpp/figure_kit.h"

namespace lexp::cli {
namespace {

class PeTableCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* t = app.add_subcommand(
        "pe-table",
        "closed-form tables without training: RoPE scaling rules per pair, bias families "
        "vs distance (HDF5 + figure)");
    t->add_option("--head-dim", o_.head_dim, "rotary head dimension D")->capture_default_str();
    t->add_option("--base", o_.base, "RoPE base")->capture_default_str();
    t->add_option("--train-length", o_.train_length, "training length L of the rules")
        ->capture_default_str();
    t->add_option("--factor", o_.factor, "scale s of the rules")->capture_default_str();
    t->add_option("--heads", o_.heads, "heads of the bias families")->capture_default_str();
    t->add_option("--max-distance", o_.max_distance, "largest distance tabulated")
        ->capture_default_str();
    t->add_option("--out", o_.out_file, "HDF5 file to write")->capture_default_str();
    t->add_option("--run", o_.runs,
                  "completed run file of a bias encoding (t5, fire, kerple_*, ...): tabulate its "
                  "learned b(d) too (repeatable)")
        ->check(CLI::ExistingFile);
    return t;
  }
  int Run(Shared&) override {
    PrintLine("wrote " + WritePeTable(o_));
    PrintLine(FigureLine(DrawPeTable(o_.out_file)));
    return 0;
  }

 private:
  PeTableOptions o_;
};

}  // namespace

std::unique_ptr<Command> MakePeTableCommand() { return std::make_unique<PeTableCommand>(); }

}  // namespace lexp::cli
