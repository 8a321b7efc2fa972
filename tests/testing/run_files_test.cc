// The bit-identity comparator of run files (tests/testing/run_files.h) catches what "==" does not:
// -0 against +0 (and accepts the same NaN on both sides).
#include "tests/testing/run_files.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

std::string Write(const std::filesystem::path& dir, const char* name, double x, float y) {
  const std::string path = (dir / name).string();
  h5::Writer w(path);
  w.root().WriteDoubles("x", {1.5, x}, {2}, "i");
  w.root().WriteFloats("y", {y}, {1}, "i");
  w.Commit();
  return path;
}

TEST(RunFileComparator, TellsSignedZerosApartAndMatchesTheSameNaN) {
  const auto dir = testing::FreshTempDir("comparator");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::string a = Write(dir, "a.h5", nan, 0.0f), b = Write(dir, "b.h5", nan, 0.0f);
  EXPECT_EQ(testing::ExpectSameRunFiles(a, b), 2);
  const std::string c = Write(dir, "c.h5", -0.0, 1.0f), d = Write(dir, "d.h5", 0.0, 1.0f);
  EXPECT_NONFATAL_FAILURE(testing::ExpectSameRunFiles(c, d), "/x[1]");
  const std::string e = Write(dir, "e.h5", 2.0, -0.0f), f = Write(dir, "f.h5", 2.0, 0.0f);
  EXPECT_NONFATAL_FAILURE(testing::ExpectSameRunFiles(e, f), "/y[0]");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
