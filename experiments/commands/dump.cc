// lexp dump FILE [PATH]: what an HDF5 file of lexp holds at a path.
#include <cstdio>
#include <filesystem>

#include "experiments/commands/command.h"
#include "experiments/core/dump_command.h"
#include "nn/check.h"

namespace lexp::cli {
namespace {

class DumpCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* dump = app.add_subcommand(
        "dump",
        "print what an HDF5 file of lexp holds at a path: a group's contents, or a dataset "
        "with its shape, axes and units");
    dump->add_option("FILE", file_, "a run file, summary.h5 or any lexp HDF5 file")->required();
    dump->add_option("PATH", path_, "a group or dataset in it, e.g. /eval/token_accuracy")
        ->capture_default_str();
    dump->add_flag("--all", all_, "print every value (default: the first 200)");
    return dump;
  }
  int Run(Shared&) override {
    LEXP_INPUT_CHECK(std::filesystem::is_regular_file(file_),
                     "lexp dump: '" + file_ + "' is not a file");
    std::fputs(DumpHdf5(file_, path_, all_ ? 0 : 200).c_str(), stdout);
    return 0;
  }

 private:
  std::string file_, path_ = "/";
  bool all_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeDumpCommand() { return std::make_unique<DumpCommand>(); }

}  // namespace lexp::cli
