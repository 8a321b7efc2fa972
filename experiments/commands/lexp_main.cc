// The `lexp` command: registers every command of this folder (one per file, command.h) and runs
// the one given. Exit codes: 0 success; 1 a model of the sweep diverged (its run file says so);
// 2 bad input (recipe, options, files, memory), also when found while a model ran; 3 internal
// error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "experiments/commands/command.h"
#include "experiments/core/build_info.h"
#include "experiments/core/output_lock.h"
#include "experiments/startup/compiled_isa.h"
#include "nn/check.h"
#include "nn/parallel.h"
#include "notebooks_cpp/figure_kit.h"

int main(int argc, char** argv) {
  CLI::App app{
      "lexp: length-extrapolation experiments with positional encodings.\n"
      "Trains small transformers from scratch on synthetic tasks, evaluates them past their\n"
      "training length, measures attention, and writes one HDF5 file per model plus figures."};
  app.set_version_flag("--version", fmt::format("lexp {} ({} build; instruction sets it needs: {})",
                                                 LEXP_VERSION, lexp::kBuildFlavour,
                                                 lexp::CompiledInstructionSets()));
  app.require_subcommand(1);
  lexp::cli::Shared shared;
  app.add_option("--threads", shared.threads,
                 "worker threads (0 = all cores; results do not depend on it)")
      ->check(CLI::Validator(
          [](std::string& v) {
            const bool digits = !v.empty() && v.size() < 6 &&
                                v.find_first_not_of("0123456789") == std::string::npos;
            return digits ? std::string()
                          : "'" + v + "': allowed: 0 (every core) or a number of threads";
          },
          "THREADS"));
  std::vector<std::unique_ptr<lexp::cli::Command>> commands = lexp::cli::AllCommands();
  std::vector<CLI::App*> subcommands;
  for (auto& c : commands) subcommands.push_back(c->Declare(app, shared));

  // The first word that is not an option must name a command (CLI11 would only say that a
  // subcommand is required).
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads") {
      ++i;
      continue;
    }
    if (a.rfind("-", 0) == 0) continue;
    bool known = false;
    std::string names;
    for (const auto* sub : subcommands) {
      known = known || sub->get_name() == a;
      if (!sub->get_group().empty()) names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "lexp: error: unknown command '%s'; commands: %s (lexp --help)\n",
                   a.c_str(), names.c_str());
      return 2;
    }
    break;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    std::string command_line = "lexp";
    for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];
    lexp::SetLockHolderCommand(command_line);
    lexp::ThreadLimit limit(shared.threads);
    lexp::SetFigureFormats(shared.figure_formats);
    for (size_t k = 0; k < commands.size(); ++k)
      if (subcommands[k]->parsed()) return commands[k]->Run(shared);
    return 2;  // require_subcommand(1) makes this unreachable
  } catch (const lexp::InputError& e) {
    std::fprintf(stderr, "lexp: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "lexp: error: out of memory; ask for less (shorter eval.lengths or "
                 "probe.lengths, smaller eval.batch_size or probe.samples)\n");
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    std::string paths = "'" + e.path1().string() + "'";
    if (!e.path2().empty()) paths += " / '" + e.path2().string() + "'";
    std::fprintf(stderr, "lexp: error: %s: %s\n", paths.c_str(), e.code().message().c_str());
    return 2;
  } catch (const lexp::Error& e) {
    std::fprintf(stderr, "lexp: internal error (please report): %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lexp: internal error (please report): %s\n", e.what());
    return 3;
  }
}
