// The scripts of `lexp slurm` run as a compute node runs them, without a scheduler: each array
// task is `SLURM_ARRAY_TASK_ID=k bash sweep.sbatch`, the collect job `bash collect.sbatch` on a
// node without gnuplot. A --setup that reads an unset variable runs (it comes before strict mode),
// HDF5's file locking is turned off before lexp starts, the collect job has its own limits, and a
// node-local --out is warned of. The same scripts on a real one-node SLURM cluster:
// tests/slurm/slurm_array_test.sh.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testing/lexp_process.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;
using testing::RunLexp;
using testing::ShellQuote;
using testing::Slurp;

const char* kRecipe = R"(
[run]
seeds = [1, 2]
[task]
name = "copy"
vocab = 12
[model]
d_model = 16
n_heads = 2
n_layers = 1
encodings = ["rope"]
[train]
max_length = 4
steps = 20
batch_size = 8
warmup_steps = 3
log_every = 10
checkpoint_every = 10
[eval]
lengths = [2, 4, 6]
samples = 8
batch_size = 8
[probe]
lengths = [4]
samples = 2
stored_samples = 1
)";

// A --setup line that fails under `set -u`, as module and virtualenv scripts often do.
const std::string kSetup =
    "lexp_setup=\"ran${LEXP_SURELY_UNSET_IN_SETUP}\"; echo \"setup $lexp_setup\"";

struct Shell {
  int code;
  std::string output;
};
Shell RunBash(const fs::path& cwd, const std::string& line) {
  const fs::path out = cwd / ".bash_output";
  const int status =
      std::system(("cd " + ShellQuote(cwd.string()) + " && " + line + " > " +
                   ShellQuote(out.string()) + " 2>&1")
                      .c_str());
  Shell r{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), Slurp(out)};
  fs::remove(out);
  return r;
}

// Positions of the lines in a script, in order; npos when one is missing.
size_t At(const std::string& text, const std::string& line) { return text.find(line); }

TEST(ClusterScripts, RunOnANodeWithASetupOfUnsetVariablesAndWithoutGnuplot) {
  const fs::path dir = fs::path("/tmp") / ("lexp_slurm_scripts_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "tiny.toml") << kRecipe;
  const auto made = RunLexp(dir, {"slurm", "tiny.toml", "--out", "out", "--setup", kSetup,
                                  "--collect-time", "00:20:00", "--collect-mem", "3G"});
  ASSERT_EQ(made.code, 0) << made.err;
  // /tmp is node-local on a cluster: said, and the scripts are still written.
  EXPECT_NE(made.err.find("is node-local"), std::string::npos) << made.err;
  EXPECT_NE(made.out.find("every node of the array needs the instruction sets"), std::string::npos)
      << made.out;

  const std::string sweep = Slurp(dir / "out/slurm/sweep.sbatch");
  const std::string collect = Slurp(dir / "out/slurm/collect.sbatch");
  for (const std::string* script : {&sweep, &collect}) {
    const size_t setup = At(*script, kSetup), strict = At(*script, "set -euo pipefail\n"),
                 hdf5 = At(*script, "export HDF5_USE_FILE_LOCKING=FALSE\n"),
                 exec = At(*script, "exec ");
    ASSERT_NE(setup, std::string::npos) << *script;
    ASSERT_NE(exec, std::string::npos) << *script;
    EXPECT_LT(setup, strict) << *script;
    EXPECT_LT(strict, hdf5) << *script;
    EXPECT_LT(hdf5, exec) << *script;
    EXPECT_NE(script->find("instruction sets it needs"), std::string::npos) << *script;
  }
  EXPECT_NE(collect.find("#SBATCH --time=00:20:00\n"), std::string::npos) << collect;
  EXPECT_NE(collect.find("#SBATCH --mem=3G\n"), std::string::npos) << collect;
  EXPECT_NE(sweep.find("#SBATCH --time=04:00:00\n"), std::string::npos) << sweep;
  EXPECT_EQ(sweep.find("#SBATCH --mem=3G\n"), std::string::npos) << sweep;

  // The control: the same setup under strict mode fails, so it does read an unset variable.
  EXPECT_NE(RunBash(dir, "bash -c " + ShellQuote("set -euo pipefail\n" + kSetup)).code, 0);

  // Each array task as a node runs it.
  for (const std::string row : {"0", "1"}) {
    const Shell task =
        RunBash(dir, "SLURM_ARRAY_TASK_ID=" + row + " SLURM_CPUS_PER_TASK=1 bash out/slurm/sweep.sbatch");
    EXPECT_EQ(task.code, 0) << task.output;
    EXPECT_NE(task.output.find("setup ran\n"), std::string::npos) << task.output;
  }
  // The collect job on a node where no gnuplot is on the PATH: data and scripts, no image.
  const Shell gathered =
      RunBash(dir, "env -i PATH=/nonexistent-lexp-path /bin/bash out/slurm/collect.sbatch");
  EXPECT_EQ(gathered.code, 0) << gathered.output;
  EXPECT_NE(gathered.output.find("no gnuplot on"), std::string::npos) << gathered.output;
  EXPECT_TRUE(fs::exists(dir / "out/summary.h5")) << gathered.output;
  int scripts = 0, images = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir / "out")) {
    scripts += e.path().extension() == ".gp";
    images += e.path().extension() == ".png";
  }
  EXPECT_GT(scripts, 0);
  EXPECT_EQ(images, 0);
  fs::remove_all(dir);
}

// Whether `dir` is on a node-local file system by the shell's own account (stat -f), for the
// negative control below.
bool LooksNodeLocal(const fs::path& dir) {
  const std::string d = fs::absolute(dir).string();
  for (const std::string local : {"/tmp/", "/var/tmp/", "/dev/shm/"})
    if (d.rfind(local, 0) == 0) return true;
  return RunBash(dir, "stat -f -c %T . | grep -qx tmpfs").code == 0;
}

TEST(ClusterScripts, AnOutputOnASharedDiskIsNotWarnedOf) {
  const fs::path dir = fs::path(LEXP_BINARY_DIR) / ("slurm_scripts_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (LooksNodeLocal(dir)) {
    fs::remove_all(dir);
    GTEST_SKIP() << "the build directory is itself node-local";
  }
  std::ofstream(dir / "tiny.toml") << kRecipe;
  const auto made = RunLexp(dir, {"slurm", "tiny.toml", "--out", "out"});
  EXPECT_EQ(made.code, 0) << made.err;
  EXPECT_EQ(made.err.find("node-local"), std::string::npos) << made.err;
  // Without --setup, strict mode is the script's first command.
  const std::string sweep = Slurp(dir / "out/slurm/sweep.sbatch");
  EXPECT_EQ(sweep.find("--setup"), std::string::npos) << sweep;
  std::istringstream lines(sweep);
  std::vector<std::string> commands;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != '#') commands.push_back(line);
  ASSERT_GE(commands.size(), 3u) << sweep;
  EXPECT_EQ(commands[0], "set -euo pipefail");
  EXPECT_EQ(commands[1], "export HDF5_USE_FILE_LOCKING=FALSE");
  fs::remove_all(dir);
}

TEST(ClusterScripts, TheJobsRunTheBinaryAskedForAndSayWhatItNeeds) {
  const fs::path dir = testing::FreshTempDir("slurm_binary");
  std::ofstream(dir / "tiny.toml") << kRecipe;
  auto exec_line = [&](const std::string& out) {
    const std::string sweep = Slurp(dir / out / "slurm/sweep.sbatch");
    return sweep.substr(sweep.find("\nexec ") + 1);
  };
  // A preset's build in this source tree: the release build is the binary under test; one not
  // built is refused with the lines that build it.
  for (const std::string preset : {"release", "avx2", "portable"}) {
    const fs::path bin = fs::path(LEXP_SOURCE_DIR) / "build" / preset / "lexp";
    const auto r = RunLexp(dir, {"slurm", "tiny.toml", "--out", preset, "--build-preset", preset});
    if (fs::exists(bin)) {
      EXPECT_EQ(r.code, 0) << r.err;
      EXPECT_EQ(exec_line(preset).rfind("exec " + ShellQuote(bin.string()) + " ", 0), 0u)
          << exec_line(preset);
    } else {
      EXPECT_EQ(r.code, 2);
      EXPECT_NE(r.err.find("cmake --preset " + preset + " && cmake --build --preset " + preset),
                std::string::npos)
          << r.err;
      EXPECT_FALSE(fs::exists(dir / preset));
    }
  }
  // A binary that does not start on this machine (built for the compute nodes' CPU: here a
  // wrapper whose start-up check is told this CPU lacks AVX2) is written with what it said.
  const fs::path wrapper = dir / "node_lexp";
  std::ofstream(wrapper) << "#!/bin/sh\nLEXP_TEST_HIDE_ISA=avx2 exec " +
                                ShellQuote(testing::kLexpBinary) + " \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_exec, fs::perm_options::add);
  const auto r = RunLexp(dir, {"slurm", "tiny.toml", "--out", "wrapped", "--binary", "node_lexp"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(exec_line("wrapped").rfind("exec " + ShellQuote(wrapper.string()) + " ", 0), 0u)
      << exec_line("wrapped");
  if (std::string(r.out).find("does not start here") == std::string::npos) {
    // A build that uses no AVX2 starts anyway: it says which sets it needs.
    EXPECT_NE(r.out.find("instruction sets"), std::string::npos) << r.out;
  } else {
    EXPECT_NE(r.out.find("this CPU lacks avx2"), std::string::npos) << r.out;
    EXPECT_NE(Slurp(dir / "wrapped/slurm/sweep.sbatch").find("does not start on the machine"),
              std::string::npos);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
