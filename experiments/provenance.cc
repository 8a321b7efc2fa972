#include "experiments/provenance.h"

#include <fmt/core.h>
#include <oneapi/tbb/version.h>
#include <toml++/toml.h>

#include <Eigen/Core>
#include <boost/version.hpp>
#include <chrono>
#include <ctime>

#include "experiments/build_info.h"

namespace lexp {

std::string UtcNow() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void WriteProvenance(const h5::Group& root, int threads) {
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  root.SetAttr("format", "lexp-run/1");
  root.SetAttr("lexp_version", LEXP_VERSION);
  root.SetAttr("git_commit", kGitCommit);
  root.SetAttr("compiler", kCompiler);
  root.SetAttr("build_type", kBuildType);
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
