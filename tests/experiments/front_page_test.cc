// README.md's counts are the code's: the number of encodings it lists equals the registry's, and
// the number of published claims it gives for the gallery equals the claim files'.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "experiments/reproduce/embedded_files.h"
#include "pe/registry.h"

namespace lexp {
namespace {

std::string ReadReadme() {
  std::ifstream in(std::filesystem::path(LEXP_SOURCE_DIR) / "README.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(FrontPage, CountsItsEncodingsAndClaimsAsTheCodeDoes) {
  const std::string readme = ReadReadme();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(readme, m, std::regex("\\*\\*Encodings\\*\\* \\(([0-9]+),")));
  EXPECT_EQ(std::stoul(m[1]), ListEncodings().size());
  // Every encoding of the registry is named in the list.
  for (const auto& e : ListEncodings())
    EXPECT_NE(readme.find("`" + e.name + "`"), std::string::npos) << e.name;
  ASSERT_TRUE(std::regex_search(readme, m, std::regex("is the gallery: ([0-9]+) published claims")));
  EXPECT_EQ(std::stoul(m[1]), EmbeddedReproductions().size());
}

}  // namespace
}  // namespace lexp
