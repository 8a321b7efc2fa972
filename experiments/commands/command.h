// One `lexp` command per file in this folder: each declares its subcommand and options on the
// CLI11 application and runs once the command line is parsed. lexp_main.cc only registers them
// (AllCommands) and dispatches to the one given, with the exit codes of every command:
// 0 success; 1 a model of the sweep diverged (its run file says so); 2 bad input (recipe, options,
// files, memory), also when found while a model ran; 3 internal error.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "experiments/core/recipe.h"
#include "experiments/training/slurm.h"

namespace lexp::cli {

// What the commands share: the global --threads and the figure formats of every command that
// draws (--format).
struct Shared {
  int threads = 0;
  std::vector<std::string> figure_formats;
  // --format on a command that draws figures.
  void AddFormatOption(CLI::App* command);
};

class Command {
 public:
  virtual ~Command() = default;
  // Declares the subcommand and its options on app and returns it.
  virtual CLI::App* Declare(CLI::App& app, Shared& shared) = 0;
  // Runs the parsed command; returns its exit code. Input errors are thrown (InputError).
  virtual int Run(Shared& shared) = 0;
};

// Every command, in the order `lexp --help` lists them.
std::vector<std::unique_ptr<Command>> AllCommands();

// The SLURM options of lexp slurm and lexp reproduce --slurm: resources, --setup, the binary.
void AddSlurmOptions(CLI::App* cmd, SlurmOptions& o);

// A line on stdout, flushed (progress of long work).
void PrintLine(const std::string& s);
// Writes DIR/report.html (experiments/report/) and says where; each file the page lists as refused
// (damaged or foreign) is named on stderr, and the result is then 2, the exit code of bad input
// (the page is still written); 0 otherwise.
int WriteReportAndSay(const std::string& dir);
// A recipe named on the command line (or the embedded default when not given), with its --set
// overrides applied and the whole checked.
RecipeConfig LoadRecipe(bool given, const std::string& path,
                        const std::vector<std::string>& overrides);
// The text of a recipe file; input errors name the path.
std::string ReadRecipeFile(const std::string& path);
// data/runs/<run.name>: where a recipe's runs go without --out.
std::string DefaultRunDir(const RecipeConfig& c);
// Every recipe key with its type, help and default (lexp list keys, lexp run --help).
std::string RecipeKeysHelp();

std::unique_ptr<Command> MakeRunCommand();
std::unique_ptr<Command> MakeDumpCommand();
std::unique_ptr<Command> MakePlanCommand();
std::unique_ptr<Command> MakeStatusCommand();
std::unique_ptr<Command> MakeCollectCommand();
std::unique_ptr<Command> MakeSlurmCommand();
std::unique_ptr<Command> MakeEvalCommand();
std::unique_ptr<Command> MakePeTableCommand();
std::unique_ptr<Command> MakeTheoryCommand();
std::unique_ptr<Command> MakeAnalyzeCommand();
std::unique_ptr<Command> MakeCompressCommand();
std::unique_ptr<Command> MakeDiagnoseCommand();
std::unique_ptr<Command> MakeBaseLawCommand();
std::unique_ptr<Command> MakeReproduceCommand();
std::unique_ptr<Command> MakeFiguresCommand();
std::unique_ptr<Command> MakeListCommand();
std::unique_ptr<Command> MakeBenchCommand();
std::unique_ptr<Command> MakeReportCommand();

}  // namespace lexp::cli
