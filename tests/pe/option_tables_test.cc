// Every encoding's options are declared once (pe/options.h): pe/README.md's option tables are
// those declarations, row for row; every declared default reads back as itself; a value of the
// wrong kind or outside what a declaration allows is refused naming the option and what it
// allows; and the run file's record is the parsed value, not the text as given.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "nn/check.h"
#include "pe/registry.h"

namespace lexp {
namespace {

std::vector<std::string> ReadmeLines() {
  std::ifstream in(std::filesystem::path(LEXP_SOURCE_DIR) / "pe" / "README.md");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The cells of a table row "| a | b \| c | d |", trimmed, backticks removed, "\|" read as "|".
std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (row[i] == '|') {
      std::string c;
      for (char ch : cell)
        if (ch != '`') c += ch;
      c.erase(0, c.find_first_not_of(' '));
      c.erase(c.find_last_not_of(' ') + 1);
      cells.push_back(c);
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return cells;
}

// The markdown table pe/README.md should hold for these specs.
std::string ExpectedTable(const std::vector<OptionSpec>& specs) {
  auto escape = [](const std::string& s) {
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string t = "| option | default | allowed | meaning |\n|---|---|---|---|\n";
  for (const auto& o : specs) {
    const std::string d = o.default_value.empty() ? "(none)" : o.default_value;
    t += "| `" + o.name + "` | " + (o.kind == "text" ? "`" + d + "`" : d) + " | " +
         escape(o.allowed.empty() ? o.kind : o.allowed) + " | " + escape(o.help) + " |\n";
  }
  return t;
}

// The table under the line "Options of `name`..." in pe/README.md: each row's cells; `found`
// false when there is no such line; `none` when the line says the encoding takes none; `rest_as`
// the encoding named by "(the rest as `X`)".
struct ReadmeTable {
  bool found = false, none = false;
  std::string rest_as;
  std::vector<std::vector<std::string>> rows;
};

ReadmeTable FindTable(const std::vector<std::string>& lines, const std::string& name) {
  ReadmeTable t;
  const std::string head = "Options of `" + name + "`";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind(head, 0) != 0) continue;
    const std::string rest = lines[i].substr(head.size());
    if (rest.empty() || (rest[0] != ':' && rest[0] != ' ')) continue;
    t.found = true;
    t.none = rest.rfind(": none", 0) == 0;
    const std::string as = "(the rest as `";
    if (auto p = rest.find(as); p != std::string::npos)
      t.rest_as = rest.substr(p + as.size(), rest.find('`', p + as.size()) - p - as.size());
    // A blank line, the header, the separator, then the rows.
    for (size_t j = i + 4; i + 3 < lines.size() && lines[i + 2].rfind("| option |", 0) == 0 &&
                           j < lines.size() && lines[j].rfind("|", 0) == 0;
         ++j)
      t.rows.push_back(Cells(lines[j]));
    return t;
  }
  return t;
}

TEST(OptionTables, ReadmeTablesAreTheDeclarations) {
  const auto lines = ReadmeLines();
  ASSERT_FALSE(lines.empty()) << "pe/README.md not found";
  for (const auto& e : ListEncodings()) {
    const auto& specs = e.options();
    const ReadmeTable t = FindTable(lines, e.name);
    ASSERT_TRUE(t.found) << "pe/README.md has no line 'Options of `" << e.name << "`'; expected:\n"
                         << (specs.empty() ? "Options of `" + e.name + "`: none."
                                           : ExpectedTable(specs));
    if (specs.empty()) {
      EXPECT_TRUE(t.none) << e.name << " takes no options: its line should say 'none'";
      continue;
    }
    // The rows the encoding's table must hold: its own, or its base's with its own overrides.
    std::map<std::string, std::vector<std::string>> rows;
    if (!t.rest_as.empty()) {
      const ReadmeTable base = FindTable(lines, t.rest_as);
      for (const auto& r : base.rows) rows[r.at(0)] = r;
    }
    for (const auto& r : t.rows) rows[r.at(0)] = r;
    EXPECT_EQ(rows.size(), specs.size()) << e.name << ": the README lists other options than the "
                                         << "declaration; expected:\n" << ExpectedTable(specs);
    for (const auto& o : specs) {
      auto it = rows.find(o.name);
      ASSERT_TRUE(it != rows.end()) << e.name << ": option " << o.name << " missing; expected:\n"
                                    << ExpectedTable(specs);
      ASSERT_EQ(it->second.size(), 4u) << e.name << " " << o.name;
      EXPECT_EQ(it->second[1], o.default_value.empty() ? "(none)" : o.default_value)
          << e.name << " " << o.name << " default";
      EXPECT_EQ(it->second[2], o.allowed.empty() ? o.kind : o.allowed)
          << e.name << " " << o.name << " allowed";
      EXPECT_EQ(it->second[3], o.help) << e.name << " " << o.name << " meaning";
    }
  }
}

TEST(OptionTables, EveryDefaultReadsBackAsItself) {
  for (const auto& e : ListEncodings()) {
    std::map<std::string, std::string> given;
    for (const auto& o : e.options()) given[o.name] = o.default_value;
    const auto values = ResolvedEncodingOptions(e.name, given);
    ASSERT_EQ(values.size(), e.options().size()) << e.name;
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(values[i].first, e.options()[i].name);
      EXPECT_EQ(values[i].second, e.options()[i].default_value) << e.name << " " << values[i].first;
    }
  }
}

// The message of the input error `f` throws ("" if none).
template <typename F>
std::string InputErrorOf(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(OptionTables, AWrongValueIsRefusedNamingTheOptionAndWhatItAllows) {
  int refused = 0;
  for (const auto& e : ListEncodings())
    for (const auto& o : e.options()) {
      std::vector<std::string> wrong;
      if (o.kind == "number" || o.kind == "integer") wrong = {"abc", "nan"};
      if (o.kind == "integer") wrong.push_back("1.5");
      if (o.kind == "true or false") wrong = {"yes"};
      if (o.kind == "text" && !o.allowed.empty()) wrong = {"bogus"};
      if (o.allowed.rfind(">", 0) == 0 || o.allowed.rfind("in ", 0) == 0) wrong.push_back("-1e9");
      for (const std::string& v : wrong) {
        const std::string msg =
            InputErrorOf([&] { ResolvedEncodingOptions(e.name, {{o.name, v}}); });
        EXPECT_NE(msg.find("'" + o.name + "' = '" + v + "'"), std::string::npos)
            << e.name << " " << o.name << " = " << v << ": " << msg;
        if (!o.allowed.empty() && (v == "bogus" || v == "-1e9")) {
          EXPECT_NE(msg.find(o.allowed), std::string::npos) << msg;
        }
        ++refused;
      }
    }
  EXPECT_GT(refused, 100);
  const std::string unknown = InputErrorOf([] { ResolvedEncodingOptions("rope", {{"bse", "3"}}); });
  EXPECT_NE(unknown.find("has no option 'bse'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("base (default 10000)"), std::string::npos) << unknown;
}

TEST(OptionTables, TheRunFileRecordsTheParsedValue) {
  std::map<std::string, std::string> record;
  for (const auto& [k, v] : ResolvedEncodingOptions("rope", {{"base", "1e4"}, {"ablate_from", "2.0"}}))
    record[k] = v;
  EXPECT_EQ(record.at("base"), "10000");
  EXPECT_EQ(record.at("ablate_from"), "2");
  EXPECT_EQ(record.at("scaling"), "none");
  std::map<std::string, std::string> partial;
  for (const auto& [k, v] : ResolvedEncodingOptions("rope_partial", {})) partial[k] = v;
  EXPECT_EQ(partial.at("fraction"), "0.25");
  std::map<std::string, std::string> fire;
  for (const auto& [k, v] : ResolvedEncodingOptions("fire", {})) fire[k] = v;
  EXPECT_EQ(fire.at("eps"), "1e-6");
}

}  // namespace
}  // namespace lexp
