#include "experiments/core/provenance.h"

#include <fmt/core.h>
#include <oneapi/tbb/version.h>
#include <toml++/toml.h>

#include <Eigen/Core>
#include <boost/version.hpp>
#include <chrono>
#include <ctime>
#include <fstream>
#include <string>

#include "experiments/core/build_info.h"
#include "nn/ops/gemm.h"

namespace lexp {

std::string UtcNow() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string CompiledSimd() {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (on) s += (s.empty() ? "" : ", ") + std::string(name);
  };
#if defined(__AVX512F__)
  add(true, "AVX512F");
#endif
#if defined(__AVX2__)
  add(true, "AVX2");
#endif
#if defined(__FMA__)
  add(true, "FMA");
#endif
#if defined(__AVX__)
  add(true, "AVX");
#endif
#if defined(__SSE4_2__)
  add(true, "SSE4.2");
#endif
#if defined(__SSE2__)
  add(true, "SSE2");
#endif
#if defined(__ARM_NEON)
  add(true, "NEON");
#endif
  return s.empty() ? "none" : s;
}

std::string CpuModel() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto start = line.find_first_not_of(" \t", line.find(':') + 1);
      return start == std::string::npos ? "unknown" : line.substr(start);
    }
  return "unknown";
}

std::string CpuInstructionSets() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  std::string level = "x86-64";
  if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt")) level = "x86-64-v2";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi2"))
    level = "x86-64-v3";
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    level = "x86-64-v4";
  std::string sets;
  auto add = [&](bool has, const char* name) {
    if (has) sets += std::string(sets.empty() ? "" : " ") + name;
  };
  add(__builtin_cpu_supports("sse4.2"), "sse4.2");
  add(__builtin_cpu_supports("avx"), "avx");
  add(__builtin_cpu_supports("avx2"), "avx2");
  add(__builtin_cpu_supports("fma"), "fma");
  add(__builtin_cpu_supports("avx512f"), "avx512f");
  return level + " (" + sets + ")";
#else
  return "not x86-64";
#endif
}

void WriteProvenance(const h5::Group& root, int threads) {
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  root.SetAttr("format", "lexp-run/3");
  root.SetAttr("lexp_version", LEXP_VERSION);
  root.SetAttr("git_commit", std::string(GitCommit()));
  root.SetAttr("compiler", kCompiler);
  root.SetAttr("build_type", kBuildType);
  root.SetAttr("compile_flags", kCompileFlags);
  root.SetAttr("build_flavour", kBuildFlavour);
  root.SetAttr("gemm_backend", kGemmBackend);
  root.SetAttr("gemm_jit_target", std::string(GemmJitTarget()));
  root.SetAttr("bf16_backend", std::string(Bf16BackendName()));
  // Native code (the release preset) makes results depend on the CPU's instruction sets; the
  // portable preset does not.
  root.SetAttr("simd_compiled", CompiledSimd());
  root.SetAttr("cpu_model", CpuModel());
  root.SetAttr("cpu_instruction_sets", CpuInstructionSets());
  root.SetAttr("eigen_version", fmt::format("{}.{}.{}", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
                                            EIGEN_MINOR_VERSION));
  root.SetAttr("tbb_version", std::string(TBB_VERSION_STRING));
  root.SetAttr("hdf5_version", fmt::format("{}.{}.{}", maj, min, rel));
  root.SetAttr("boost_version", fmt::format("{}.{}.{}", BOOST_VERSION / 100000,
                                            BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100));
  root.SetAttr("tomlplusplus_version",
               fmt::format("{}.{}.{}", TOML_LIB_MAJOR, TOML_LIB_MINOR, TOML_LIB_PATCH));
  root.SetAttr("fmt_version", fmt::format("{}", FMT_VERSION));
  root.SetAttr("threads", threads);
}

}  // namespace lexp
