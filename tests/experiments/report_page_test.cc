// The report page (experiments/report/report_page.h) says what the files say: its score table has
// one row per intact run file, each score the mean of that file's /eval rows over its range; a
// damaged or foreign .h5 file beside the runs is listed as refused and read into no table; the
// page holds no script and fetches nothing. (Chromium opens it in tests/report/.)
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "experiments/core/run_file.h"
#include "experiments/report/report_page.h"
#include "experiments/training/sweep.h"
#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ScoreTable(const std::string& page) {
  const size_t from = page.find("<table class=\"scores\">");
  const size_t to = page.find("</table>", from);
  return from == std::string::npos ? "" : page.substr(from, to - from);
}

int Rows(const std::string& table) {
  int rows = 0;
  for (size_t at = table.find("<tr><td>"); at != std::string::npos;
       at = table.find("<tr><td>", at + 1))
    ++rows;
  return rows;
}

class Report : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testing::FreshTempDir("report_page");
    SweepOptions so;
    so.out_dir = dir_.string();
    so.figures = false;
    ASSERT_EQ(RunRecipe(testing::TinyCopyRecipe({"model.encodings=nope,rope", "train.steps=20"}),
                        so)
                  .size(),
              2u);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static fs::path dir_;
};
fs::path Report::dir_;

TEST_F(Report, ScoresAreTheMeansOfEachFilesEvalRows) {
  const std::string page = Read(WriteReport(dir_.string()).path);
  const std::string table = ScoreTable(page);
  EXPECT_EQ(Rows(table), 2);
  for (const std::string label : {"nope", "rope"}) {
    const auto rows = ReadEvalRows((dir_ / (label + ".h5")).string());
    const int n = ReadRunFileHead((dir_ / (label + ".h5")).string()).train_max_length;
    double in = 0, beyond = 0;
    int n_in = 0, n_beyond = 0;
    for (const EvalRow& r : rows) {
      if (r.length <= n) {
        in += r.token_accuracy;
        ++n_in;
      } else {
        beyond += r.token_accuracy;
        ++n_beyond;
      }
    }
    ASSERT_GT(n_in, 0);
    ASSERT_GT(n_beyond, 0);
    const std::string want = fmt::format(
        "<tr><td>{}</td><td>copy</td><td class=\"num\">{}</td><td>completed</td><td "
        "class=\"num\">{}</td><td>{}</td><td class=\"num\">{:.3f}</td><td "
        "class=\"num\">{:.3f}</td>",
        label, ReadRunFileHead((dir_ / (label + ".h5")).string()).seed, n,
        DecodingName(rows.front().decoding), in / n_in, beyond / n_beyond);
    EXPECT_NE(table.find(want), std::string::npos) << want << "\nnot in\n" << table;
  }
  EXPECT_NE(page.find("None: every run file here is complete."), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_FALSE(std::regex_search(page, std::regex("(src|href)=\"https?:")));
  EXPECT_NE(page.find("No figure in this directory"), std::string::npos) << "figures were off";
}

TEST_F(Report, ADamagedOrForeignFileIsRefusedAndReadIntoNothing) {
  {
    const std::string bytes = Read(dir_ / "rope.h5");
    std::ofstream(dir_ / "damaged.h5", std::ios::binary) << bytes.substr(0, bytes.size() / 3);
    std::ofstream(dir_ / "foreign.h5") << "not an HDF5 file\n";
  }
  const ReportPage report = WriteReport(dir_.string());
  const std::string page = Read(report.path);
  ASSERT_EQ(report.refused.size(), 2u);
  EXPECT_EQ(report.refused[0].rfind((dir_ / "damaged.h5").string() + ": ", 0), 0u)
      << report.refused[0];
  EXPECT_EQ(Rows(ScoreTable(page)), 2);
  EXPECT_NE(page.find("damaged.h5: refused, not read into this page: "), std::string::npos);
  EXPECT_NE(page.find("foreign.h5: refused, not read into this page: "), std::string::npos);
  EXPECT_EQ(page.find("None: every run file here is complete."), std::string::npos);
  fs::remove(dir_ / "damaged.h5");
  fs::remove(dir_ / "foreign.h5");
}

TEST_F(Report, AFigureIsEmbeddedAndAFailedOneNamesItsLog) {
  fs::create_directories(dir_ / "figures");
  // A 1x1 PNG, and a figure whose gnuplot run failed (a log, no picture).
  const unsigned char png[] = {
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
      0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f,
      0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8,
      0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00,
      0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
  std::ofstream(dir_ / "figures" / "dot.png", std::ios::binary)
      .write(reinterpret_cast<const char*>(png), sizeof png);
  std::ofstream(dir_ / "figures" / "broken.log") << "line 3: undefined variable: x\n";
  const std::string page = Read(WriteReport(dir_.string()).path);
  EXPECT_NE(page.find("<img alt=\"figures/dot.png\" src=\"data:image/png;base64,iVBORw0KGgo"),
            std::string::npos);
  EXPECT_NE(page.find("figure figures/broken.log was not drawn: line 3: undefined variable: x"),
            std::string::npos);
  fs::remove_all(dir_ / "figures");
}

TEST(ReportPageInput, AClaimDirectoryLeadsWithItsVerdict) {
  const fs::path dir = testing::FreshTempDir("report_claim");
  {
    h5::Writer w((dir / "verdict.h5").string());
    w.root().SetAttr("id", "Z9");
    w.root().SetAttr("statement", "planted claim <b>");
    w.root().SetAttr("verdict", "contradicted");
    w.root().SetAttr("budget", "full");
    w.root().SetAttr("reason", "1 of 1 comparisons against the claim");
    w.Commit();
  }
  const std::string page = Read(WriteReport(dir.string()).path);
  EXPECT_NE(page.find("<h2 id=\"verdict\">Claim Z9: contradicted</h2>\n<p>planted claim &lt;b&gt;</p>"),
            std::string::npos)
      << page.substr(0, 2000);
  EXPECT_NE(page.find("1 of 1 comparisons against the claim"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ReportPageInput, NotADirectoryIsAnInputError) {
  EXPECT_THROW(WriteReport("/nonexistent/lexp/report/dir"), InputError);
}

}  // namespace
}  // namespace lexp
