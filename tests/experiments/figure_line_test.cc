// FigureLine (notebooks_cpp/figure_kit.h): a figure whose gnuplot run printed anything says so in
// the progress line that names it, with its .log; a clean figure is named alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "notebooks_cpp/figure_kit.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

TEST(FigureLine, NamesTheLogOfAFigureGnuplotComplainedAbout) {
  const fs::path dir = testing::FreshTempDir("figure_line");
  const std::string head = "set terminal pngcairo size 200,120\n";
  const std::string clean =
      Render(dir, "clean", head + "set output 'clean.png'\nplot x title 'x'\n");
  EXPECT_EQ(FigureLine(clean), "figure: " + clean);
  // Drawn, but without one of its curves: gnuplot says it found no data for it.
  const std::string broken =
      Render(dir, "broken", head + "set output 'broken.png'\nplot x, 'missing.dat'\n");
  ASSERT_TRUE(fs::exists(broken));
  const std::string line = FigureLine(broken);
  EXPECT_NE(line.find("gnuplot printed messages"), std::string::npos) << line;
  EXPECT_NE(line.find((dir / "broken.log").string()), std::string::npos) << line;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
