// A lexp built for instruction sets this CPU lacks exits 2 naming them and the preset to build,
// before any of its code can die of SIGILL (experiments/startup/cpu_guard.c). Once through the
// check's own hook, once on a really older CPU: QEMU's user-mode emulation of a Nehalem (SSE4.2,
// no AVX), where the same binary with the check skipped dies of SIGILL (the negative control).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "experiments/startup/compiled_isa.h"
#include "tests/testing/lexp_process.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;
using testing::RunLexp;

// The last set the build may use ("" for a build for the x86-64 baseline).
std::string LastCompiledSet() {
  std::string all = lexp_compiled_isa;
  while (!all.empty() && all.back() == ' ') all.pop_back();
  const auto space = all.rfind(' ');
  return space == std::string::npos ? all : all.substr(space + 1);
}

fs::path FreshDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(CpuGuard, ACpuWithoutABuildsSetExitsTwoNamingItAndThePresetsBeforeWritingAnything) {
  const fs::path dir = FreshDir("lexp_cpu_guard");
  const std::string missing = LastCompiledSet();
  // A run of a few seconds, were it to start.
  const auto r = RunLexp(dir, {"--threads", "1", "run", "--out", "out", "--no-figures", "--set",
                               "train.steps=2", "--set", "model.encodings=rope", "--set",
                               "eval.samples=2", "--set", "probe.samples=1"},
                         "LEXP_TEST_HIDE_ISA=" + (missing.empty() ? std::string("sse3,avx2") : missing));
  if (missing.empty()) {
    // A baseline build needs nothing the hook can hide: it runs.
    EXPECT_EQ(r.code, 0) << r.err;
  } else {
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("this CPU lacks " + missing + ","), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("'portable'"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(fs::exists(dir / "out"));
  }
  // The negative control: nothing hidden, the same binary starts.
  const auto ok = RunLexp(dir, {"--version"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.err.find("this CPU lacks"), std::string::npos) << ok.err;
  fs::remove_all(dir);
}

TEST(CpuGuard, TheAvx2PresetIsOfferedOnlyToACpuThatCanRunIt) {
  if (std::string(lexp_compiled_isa).find("avx2") == std::string::npos) {
    GTEST_SKIP() << "this build uses no AVX2 to hide";
  }
  const fs::path dir = FreshDir("lexp_cpu_guard_presets");
  const auto no_avx2 = RunLexp(dir, {"--version"}, "LEXP_TEST_HIDE_ISA=avx2");
  EXPECT_EQ(no_avx2.code, 2);
  EXPECT_NE(no_avx2.err.find("has not the AVX2 set"), std::string::npos) << no_avx2.err;
  EXPECT_EQ(no_avx2.err.find("cmake --preset avx2"), std::string::npos) << no_avx2.err;
  if (std::string(lexp_compiled_isa).find("avx512f") != std::string::npos) {
    const auto no_avx512 = RunLexp(dir, {"--version"}, "LEXP_TEST_HIDE_ISA=avx512f");
    EXPECT_EQ(no_avx512.code, 2);
    EXPECT_NE(no_avx512.err.find("cmake --preset avx2"), std::string::npos) << no_avx512.err;
  }
  fs::remove_all(dir);
}

// QEMU's user-mode emulator, installed with apt when missing (as root); "" when unavailable.
std::string Qemu() {
  if (std::system("command -v qemu-x86_64 > /dev/null 2>&1") != 0 && geteuid() == 0) {
    std::system("apt-get install -y --no-install-recommends qemu-user > /dev/null 2>&1");
  }
  return std::system("command -v qemu-x86_64 > /dev/null 2>&1") == 0 ? "qemu-x86_64" : "";
}

TEST(CpuGuard, OnAnEmulatedOlderCpuTheBinaryExitsTwoWhereUncheckedItDiesOfSigill) {
  const std::string missing = LastCompiledSet();
  if (std::string(lexp_compiled_isa).find("avx") == std::string::npos) {
    GTEST_SKIP() << "this build runs on a Nehalem (no set beyond SSE4.2): nothing to refuse";
  }
  const std::string qemu = Qemu();
  if (qemu.empty()) GTEST_SKIP() << "qemu-user is not installed and cannot be (not root)";
  const fs::path dir = FreshDir("lexp_cpu_guard_qemu");
  const std::string nehalem = qemu + " -cpu Nehalem";
  const auto checked = RunLexp(dir, {"--version"}, nehalem);
  EXPECT_EQ(checked.code, 2) << checked.err;
  EXPECT_NE(checked.err.find("this CPU lacks"), std::string::npos) << checked.err;
  EXPECT_NE(checked.err.find("avx2"), std::string::npos) << checked.err;
  EXPECT_NE(checked.err.find("'portable'"), std::string::npos) << checked.err;
  // The control: the emulated CPU really lacks the sets, and the check is what keeps the binary
  // from running into them.
  const auto unchecked = RunLexp(dir, {"--version"}, "LEXP_TEST_SKIP_CPU_CHECK=1 " + nehalem);
  EXPECT_EQ(unchecked.code, 128 + 4) << "expected SIGILL; " << unchecked.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
