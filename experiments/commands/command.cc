#include "experiments/commands/command.h"
#include "experiments/report/report_page.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiments/core/default_recipe.h"
#include "nn/check.h"

namespace lexp::cli {

void Shared::AddFormatOption(CLI::App* command) {
  command
      ->add_option("--format", figure_formats,
                   "figure formats besides PNG, comma-separated: png, svg, pdf (e.g. --format "
                   "png,svg,pdf)")
      ->delimiter(',');
}

void AddSlurmOptions(CLI::App* cmd, SlurmOptions& o) {
    cmd->add_option("--partition", o.partition, "SLURM partition");
    cmd->add_option("--account", o.account, "SLURM account");
    cmd->add_option("--qos", o.qos, "SLURM quality of service");
    cmd->add_option("--time", o.time, "time limit per array task (HH:MM:SS)")
        ->capture_default_str();
    cmd
        ->add_option("--cpus-per-task", o.cpus_per_task,
                     "CPUs per array task, each a model (1: the fastest packing measured)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    cmd->add_option("--mem", o.mem,
                      "memory per task, e.g. 2G (default: lexp's estimate of one model's peak, "
                      "with half again)");
    cmd
        ->add_option("--max-parallel", o.max_parallel,
                     "array tasks at once (--array=...%N; 0: no limit)")
        ->check(CLI::Range(0, 100000));
    cmd->add_option("--setup", o.setup,
                      "shell lines run before lexp in each job, before strict mode, e.g. "
                      "'module load gcc'");
    cmd->add_option("--binary", o.binary,
                      "the lexp binary the jobs run (default: this one); it must start on "
                      "every node of the array");
    cmd->add_option("--build-preset", o.build_preset,
                      "run this source tree's build of a preset instead: avx2 (x86-64-v3, "
                      "AVX2 CPUs) or portable (any x86-64 CPU) for nodes of several CPU kinds, "
                      "release (this machine's CPU)");
    cmd->add_option("--collect-time", o.collect_time, "time limit of the collect job")
        ->capture_default_str();
    cmd->add_option("--collect-mem", o.collect_mem,
                      "memory of the collect job (default: an array task's; it may replay a "
                      "model to analyse it against its NoPE reference)");
}

int WriteReportAndSay(const std::string& dir) {
  const ReportPage page = WriteReport(dir);
  PrintLine("report: " + page.path);
  for (const std::string& r : page.refused)
    std::fprintf(stderr, "lexp: error: the report refused %s\n", r.c_str());
  return page.refused.empty() ? 0 : 2;
}

void PrintLine(const std::string& s) {
  std::fputs((s + "\n").c_str(), stdout);
  std::fflush(stdout);
}

std::string ReadRecipeFile(const std::string& path) {
  LEXP_INPUT_CHECK(!path.empty(),
                   "the recipe path is empty (omit it to run the embedded default recipe)");
  LEXP_INPUT_CHECK(std::filesystem::exists(path), "recipe '" + path + "' does not exist");
  LEXP_INPUT_CHECK(std::filesystem::is_regular_file(path),
                   "recipe '" + path + "' is not a file (a TOML recipe was expected)");
  std::ifstream f(path);
  LEXP_INPUT_CHECK(f.good(), "cannot read recipe '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

RecipeConfig LoadRecipe(bool given, const std::string& path,
                        const std::vector<std::string>& overrides) {
  RecipeConfig c = given ? ParseRecipe(ReadRecipeFile(path), path)
                         : ParseRecipe(kDefaultRecipeToml, "<embedded default recipe>");
  ApplyOverrides(c, overrides);
  ValidateRecipe(c);
  return c;
}

std::string DefaultRunDir(const RecipeConfig& c) {
  return (std::filesystem::path("data") / "runs" / c.name).string();
}

std::string RecipeKeysHelp() {
  RecipeConfig c;
  std::string s =
      "Recipe keys (TOML sections [run] [task] [model] [train] [eval] [probe]; "
      "defaults in brackets):\n";
  const auto fields = Fields(c);
  size_t width = 0;  // the longest key's: every type starts in one column
  for (const auto& f : fields) width = std::max(width, f.key.size());
  for (const auto& f : fields)
    s += fmt::format("  {:<{}} {:<16} {}  [{}]\n", f.key, width, FieldTypeName(f), f.help,
                     FieldValueString(f));
  s += "  encoding_options.<encoding>.<option>   per-encoding options (lexp list encodings)\n";
  return s;
}

namespace {

// Hidden: fails an internal check, so that tests can see exit code 3 and its message.
class InternalErrorCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    return app.add_subcommand("internal-error-for-tests", "")->group("");
  }
  int Run(Shared&) override {
    LEXP_CHECK(false, "this check fails on purpose (internal-error-for-tests)");
    return 3;
  }
};

}  // namespace

std::vector<std::unique_ptr<Command>> AllCommands() {
  std::vector<std::unique_ptr<Command>> all;
  all.push_back(MakeRunCommand());
  all.push_back(MakeDumpCommand());
  all.push_back(MakePlanCommand());
  all.push_back(MakeStatusCommand());
  all.push_back(MakeCollectCommand());
  all.push_back(MakeSlurmCommand());
  all.push_back(MakeEvalCommand());
  all.push_back(MakePeTableCommand());
  all.push_back(MakeTheoryCommand());
  all.push_back(MakeAnalyzeCommand());
  all.push_back(MakeCompressCommand());
  all.push_back(MakeDiagnoseCommand());
  all.push_back(MakeBaseLawCommand());
  all.push_back(MakeReproduceCommand());
  all.push_back(MakeFiguresCommand());
  all.push_back(MakeReportCommand());
  all.push_back(MakeListCommand());
  all.push_back(MakeBenchCommand());
  all.push_back(std::make_unique<InternalErrorCommand>());
  return all;
}

}  // namespace lexp::cli
