// Every run time the project quotes comes from experiments/run_times.toml: each shipped recipe has
// an entry there, its header quotes it on one "# Run time:" line, experiments/README.md's recipe
// table quotes it in its last column, and README.md's two set-up commands quote the default
// recipe's and the test suite's. A recipe header's other paragraphs may state a time only as part
// of a sentence that is a dated measurement record ("Measured (2026-12-01, ...; 1 min 44 s)"), which
// is history, not a promise about the recipe.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <toml++/toml.h>
#include <vector>

namespace lexp {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// How a time is quoted: "about 20 s", "about 1.8 min", "about 21 min", "not measured".
std::string FormatRunTime(double minutes) {
  if (minutes < 0) return "not measured";
  char text[64];
  if (minutes < 1) {
    std::snprintf(text, sizeof text, "about %.0f s", std::round(minutes * 60 / 5) * 5);
  } else if (minutes < 10) {
    std::snprintf(text, sizeof text, "about %.1f min", minutes);
    std::string s = text;
    const size_t zero = s.find(".0 min");
    if (zero != std::string::npos) s.erase(zero, 2);
    return s;
  } else {
    std::snprintf(text, sizeof text, "about %.0f min", minutes);
  }
  return text;
}

struct Source {
  std::map<std::string, double> recipe_minutes;
  double test_suite_minutes = 0;
};

Source ReadSource() {
  const fs::path root(LEXP_SOURCE_DIR);
  const toml::table t = toml::parse_file((root / "experiments" / "run_times.toml").string());
  Source s;
  s.test_suite_minutes = t["suite"]["test_suite_minutes"].value_or(-2.0);
  if (const toml::table* recipes = t["recipes"].as_table()) {
    for (const auto& [name, entry] : *recipes)
      s.recipe_minutes[std::string(name.str())] = entry.as_table()->get("minutes")->value_or(-2.0);
  }
  return s;
}

std::vector<std::string> ShippedRecipes() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fs::path(LEXP_SOURCE_DIR) / "experiments" / "recipes"))
    if (e.path().extension() == ".toml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A phrase that states a duration: "6 min 16 s", "about 11 minutes", "20 s", "seconds", ...
const std::regex& DurationPhrase() {
  static const std::regex r(
      "\\b[0-9]+(\\.[0-9]+)? ?(min|mins|minutes|s|sec|seconds|h|hours)\\b|\\bseconds\\b|"
      "under a minute",
      std::regex::icase);
  return r;
}

TEST(RunTimes, FormatIsTheOneTheQuotesUse) {
  EXPECT_EQ(FormatRunTime(0.33), "about 20 s");
  EXPECT_EQ(FormatRunTime(1.75), "about 1.8 min");
  EXPECT_EQ(FormatRunTime(4), "about 4 min");
  EXPECT_EQ(FormatRunTime(21.4), "about 21 min");
  EXPECT_EQ(FormatRunTime(-1), "not measured");
}

TEST(RunTimes, EveryShippedRecipeHasOneEntryAndNoEntryLacksARecipe) {
  const Source source = ReadSource();
  std::vector<std::string> entries;
  for (const auto& [name, minutes] : source.recipe_minutes) {
    entries.push_back(name);
    EXPECT_GE(minutes, -1.0) << name << ": minutes missing or below -1 (-1 = not measured)";
  }
  EXPECT_EQ(entries, ShippedRecipes());
  EXPECT_GT(source.test_suite_minutes, 0);
}

TEST(RunTimes, EachRecipeHeaderQuotesItsEntryAndStatesNoOtherUndatedTime) {
  const Source source = ReadSource();
  const std::regex dated("20[0-9][0-9]-[01][0-9]-[0-3][0-9]");
  for (const std::string& name : ShippedRecipes()) {
    SCOPED_TRACE(name + ".toml");
    std::istringstream in(Read(fs::path(LEXP_SOURCE_DIR) / "experiments" / "recipes" / (name + ".toml")));
    std::string line, paragraph;
    std::vector<std::string> paragraphs, quotes;
    while (std::getline(in, line) && line.rfind('#', 0) == 0) {
      if (line.rfind("# Run time: ", 0) == 0) {
        quotes.push_back(line);
        continue;
      }
      const bool blank = line.find_first_not_of("# ") == std::string::npos;
      if (blank) {
        paragraphs.push_back(paragraph);
        paragraph.clear();
      } else {
        paragraph += line.substr(1) + "\n";
      }
    }
    paragraphs.push_back(paragraph);
    ASSERT_EQ(quotes.size(), 1u) << "one '# Run time: ' line in the header";
    const std::string want = "# Run time: " + FormatRunTime(source.recipe_minutes.at(name)) +
                             " on 2 cores (experiments/run_times.toml).";
    EXPECT_EQ(quotes[0], want);
    const std::regex sentence_end("\\.\\s+");
    for (const std::string& p : paragraphs) {
      std::string flat = p;
      std::replace(flat.begin(), flat.end(), '\n', ' ');
      for (auto it = std::sregex_token_iterator(flat.begin(), flat.end(), sentence_end, -1);
           it != std::sregex_token_iterator(); ++it) {
        const std::string sentence = *it;
        if (std::regex_search(sentence, dated)) continue;  // a dated measurement record
        std::smatch m;
        EXPECT_FALSE(std::regex_search(sentence, m, DurationPhrase()))
            << "an undated time '" << m.str() << "' in the header sentence: " << sentence;
      }
    }
  }
}

TEST(RunTimes, TheRecipeTableQuotesEveryEntryInItsLastColumn) {
  const Source source = ReadSource();
  std::istringstream in(Read(fs::path(LEXP_SOURCE_DIR) / "experiments" / "README.md"));
  std::string line;
  std::map<std::string, std::string> quoted;
  const std::regex row("^\\| `([a-z_0-9]+)\\.toml` \\|.*\\| ([^|]+) \\|$");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    quoted[m[1]] = m[2];
    // Only the last column states the time.
    const std::string before = line.substr(0, line.size() - m[2].length() - 3);
    std::smatch d;
    EXPECT_FALSE(std::regex_search(before, d, DurationPhrase()))
        << m[1] << ".toml's row states '" << d.str() << "' outside its time column";
  }
  for (const std::string& name : ShippedRecipes()) {
    ASSERT_TRUE(quoted.count(name)) << name << ".toml has no row in experiments/README.md";
    EXPECT_EQ(quoted[name], FormatRunTime(source.recipe_minutes.at(name))) << name;
  }
}

TEST(RunTimes, TheFrontPageQuotesTheDefaultRunAndTheSuite) {
  const Source source = ReadSource();
  const std::string readme = Read(fs::path(LEXP_SOURCE_DIR) / "README.md");
  std::istringstream in(readme);
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.rfind("bash experiments/lexp.sh run ", 0) == 0 &&
        line.find("installs missing Debian packages") != std::string::npos) {
      std::string want = "(";
      want += FormatRunTime(source.recipe_minutes.at("default"));
      want += " after the build on 2 cores)";
      EXPECT_NE(line.find(want), std::string::npos) << line;
      ++checked;
    }
    if (line.rfind("bash experiments/lexp.sh test ", 0) == 0 &&
        line.find("installs missing Debian packages") != std::string::npos) {
      EXPECT_NE(line.find(FormatRunTime(source.test_suite_minutes) + " of tests"),
                std::string::npos)
          << line;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2) << "README.md's two set-up commands";
  // Any other time on the front page is one of the source's too.
  std::set<std::string> allowed = {FormatRunTime(source.test_suite_minutes)};
  for (const auto& [name, minutes] : source.recipe_minutes) allowed.insert(FormatRunTime(minutes));
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), DurationPhrase());
       it != std::sregex_iterator(); ++it) {
    const long at = it->position();
    const std::string quoted = at >= 6 ? readme.substr(at - 6, it->length() + 6) : it->str();
    EXPECT_TRUE(allowed.count(quoted)) << "README.md quotes '" << it->str()
                                       << "', not a time of experiments/run_times.toml";
  }
}

}  // namespace
}  // namespace lexp
