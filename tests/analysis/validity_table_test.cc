// The validity table of analysis/README.md ("Where each reading is meaningful") names, for every
// reading, the planted test and the negative control that show it means what it says: each test it
// names must exist, so the table cannot point at a test that was renamed or removed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace lexp {
namespace {

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ValidityTable, EveryTestItNamesExists) {
  const std::filesystem::path root(LEXP_SOURCE_DIR);
  const std::string readme = Read(root / "analysis" / "README.md");
  const size_t from = readme.find("## Where each reading is meaningful");
  const size_t to = readme.find("## Notation");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  const std::string table = readme.substr(from, to - from);
  std::string tests;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root / "tests"))
    if (e.path().string().size() > 8 &&
        e.path().string().compare(e.path().string().size() - 8, 8, "_test.cc") == 0)
      tests += Read(e.path());
  const std::regex named("`([A-Z][A-Za-z0-9]+)\\.([A-Z][A-Za-z0-9]+)`");
  int found = 0;
  for (auto it = std::sregex_iterator(table.begin(), table.end(), named);
       it != std::sregex_iterator(); ++it, ++found) {
    const std::string suite = (*it)[1], name = (*it)[2];
    const bool there = tests.find("TEST(" + suite + ", " + name + ")") != std::string::npos ||
                       tests.find("TEST_F(" + suite + ", " + name + ")") != std::string::npos;
    EXPECT_TRUE(there) << "analysis/README.md names " << suite << "." << name
                       << ", which no test defines";
  }
  EXPECT_GE(found, 30) << "the table names the tests of every reading";
}

}  // namespace
}  // namespace lexp
