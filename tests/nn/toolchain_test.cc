// The toolchain's own correctness where lexp has seen it fail. GCC 12.2 (Debian 12) at -O2/-O3
// with -march=x86-64-v4 (AVX-512) stored {1, 1, 1, 1} for `value = {1.0, 1.0, 1.0, 0.0}` in the
// loop of tests/nn/toolchain_probe.cc (the value numbering of an SLP-vectorized constant store:
// the store into the vector's new buffer became a broadcast of its first lane; -fno-tree-fre or
// -fno-tree-slp-vectorize avoid it). CMakeLists.txt builds lexp with -fno-tree-slp-vectorize
// under GCC for it; without that flag this test fails on an AVX-512 machine.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

std::vector<double> ToolchainProbeLastValues(int n, const std::map<std::string, double>& limit);

namespace lexp {
namespace {

TEST(Toolchain, AConstantListAssignedInALoopKeepsEveryElement) {
  const std::vector<double> last = ToolchainProbeLastValues(16, {{"a@exact", 40}, {"b@loss", 48}});
  EXPECT_EQ(last, (std::vector<double>{0, 0, 0, 10, 10, 10}));
}

}  // namespace
}  // namespace lexp
