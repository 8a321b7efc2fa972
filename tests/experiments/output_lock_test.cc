// One writer per output directory (experiments/core/output_lock.h), tried as users meet it: a
// second `lexp run` into the --out a first one is writing exits 2 naming the first's pid and
// command, and the first finishes with nothing of its files lost; two array tasks of one row
// cannot both run it, while tasks of two rows run side by side.
#include "experiments/core/output_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "nn/check.h"
#include "tests/testing/lexp_process.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

// A recipe that trains for a few seconds: long enough for a second writer to meet it.
std::string Recipe(const std::string& marker, int steps) {
  return "# " + marker + "\n" + R"([task]
name = "copy"
vocab = 8
[model]
d_model = 32
n_heads = 2
n_layers = 2
encodings = ["nope", "rope"]
[train]
max_length = 4
batch_size = 16
warmup_steps = 2
log_every = 1000
checkpoint_every = 1000
steps = )" +
         std::to_string(steps) + R"(
[eval]
lengths = [2, 4]
samples = 4
batch_size = 4
[probe]
lengths = [4]
samples = 1
stored_samples = 1
replay = 0
)";
}

// True once some process holds `file` exclusively.
bool HeldExclusively(const fs::path& file) {
  const int fd = open(file.c_str(), O_RDONLY);
  if (fd < 0) return false;
  const bool held = flock(fd, LOCK_SH | LOCK_NB) != 0;
  if (!held) flock(fd, LOCK_UN);
  close(fd);
  return held;
}

void WaitUntil(const std::function<bool()>& ready) {
  const auto start = std::chrono::steady_clock::now();
  while (!ready() && std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

TEST(OutputLock, ASecondWriterIsRefusedAndTheFirstLosesNothing) {
  const fs::path dir = testing::FreshTempDir("output_lock");
  std::ofstream(dir / "first.toml") << Recipe("the first recipe", 3000);
  std::ofstream(dir / "second.toml") << Recipe("the second recipe", 10);
  testing::LexpResult first;
  std::thread writer([&] {
    first = testing::RunLexp(dir, {"run", "first.toml", "--out", "out", "--no-figures"});
  });
  WaitUntil([&] { return HeldExclusively(dir / "out" / ".lexp.lock"); });
  const testing::LexpResult second =
      testing::RunLexp(dir, {"run", "second.toml", "--out", "out", "--no-figures"});
  writer.join();
  EXPECT_EQ(second.code, 2) << second.err;
  EXPECT_NE(second.err.find("'out' is being written by another lexp (pid "), std::string::npos)
      << second.err;
  EXPECT_NE(second.err.find("lexp run first.toml --out out"), std::string::npos) << second.err;
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(testing::Slurp(dir / "out" / "plan" / "source.toml").find("the first recipe"),
            std::string::npos)
      << "the plan is the first run's";
  for (const char* f : {"nope.h5", "rope.h5"}) EXPECT_TRUE(fs::exists(dir / "out" / f)) << f;
  // Once the first is done the directory is free again: the same run resumes into it.
  const testing::LexpResult again =
      testing::RunLexp(dir, {"run", "first.toml", "--out", "out", "--no-figures", "--resume"});
  EXPECT_EQ(again.code, 0) << again.err;
  fs::remove_all(dir);
}

TEST(OutputLock, TwoTasksOfOneRowCannotBothRunItWhileTwoRowsRunSideBySide) {
  const fs::path dir = testing::FreshTempDir("output_lock_rows");
  std::ofstream(dir / "r.toml") << Recipe("rows", 6000);
  ASSERT_EQ(testing::RunLexp(dir, {"plan", "r.toml", "--out", "out"}).code, 0);
  testing::LexpResult row0, row1;
  std::thread a([&] {
    row0 = testing::RunLexp(dir, {"run", "r.toml", "--out", "out", "--job", "0"});
  });
  WaitUntil([&] { return HeldExclusively(dir / "out" / ".lexp-row0.lock"); });
  std::thread b([&] {
    row1 = testing::RunLexp(dir, {"run", "r.toml", "--out", "out", "--job", "1"});
  });
  const testing::LexpResult twin =
      testing::RunLexp(dir, {"run", "r.toml", "--out", "out", "--job", "0"});
  EXPECT_EQ(twin.code, 2) << twin.err;
  EXPECT_NE(twin.err.find("row 0 of the plan in 'out' is being written by another lexp"),
            std::string::npos)
      << twin.err;
  // A writer of the whole directory the rows share (collect) is refused while they run.
  const testing::LexpResult whole = testing::RunLexp(dir, {"collect", "out"});
  EXPECT_EQ(whole.code, 2) << whole.err;
  EXPECT_NE(whole.err.find("rows of its plan run by lexp run --job"), std::string::npos)
      << whole.err;
  a.join();
  b.join();
  EXPECT_EQ(row0.code, 0) << row0.err;
  EXPECT_EQ(row1.code, 0) << row1.err;
  fs::remove_all(dir);
}

TEST(OutputLock, AProcessTakesItsOwnLockOnce) {
  const fs::path dir = testing::FreshTempDir("output_lock_own");
  {
    const OutputLock outer(dir.string());
    const OutputLock inner(dir.string());  // a part of lexp that locks what its command locked
    EXPECT_TRUE(HeldExclusively(dir / ".lexp.lock"));
  }
  EXPECT_FALSE(HeldExclusively(dir / ".lexp.lock")) << "released with the outer lock";
  fs::remove_all(dir);
}

// `lexp eval rope.h5` run from the run's own directory locks the working directory: the run file's
// parent path is empty, which is no directory to create (it was refused as "cannot create the
// output directory ''").
TEST(OutputLock, AnEmptyDirectoryIsTheWorkingDirectory) {
  const fs::path dir = testing::FreshTempDir("output_lock_cwd");
  const fs::path before = fs::current_path();
  fs::current_path(dir);
  {
    const OutputLock lock("");
    EXPECT_TRUE(HeldExclusively(dir / ".lexp.lock"));
  }
  fs::current_path(before);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
