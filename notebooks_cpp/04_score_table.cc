// Figure 04: the task x encoding score table of a sweep (max over seeds of the token accuracy on
// lengths N+1..M, mean ± sd in each cell when there are several seeds), from the summary.h5 that
// `lexp run` writes for a task or seed sweep.
// Usage: 04_score_table SUMMARY_FILE   (writes <file's dir>/figures/score_table.*)
// Compiled twice: into the figure library that `lexp` draws from, and with LEXP_FIGURE_PROGRAM as
// this program on its own; copy the file to make a figure of your own.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_data.h"
#include "notebooks_cpp/figure_kit.h"
#include "notebooks_cpp/figures.h"

namespace fs = std::filesystem;

namespace lexp {

std::string DrawScoreTable(const std::string& file) {
  h5::Reader r(file);
  const auto& root = r.root();
  const fs::path dir = FigureDirNextTo(file);
  const std::string name = "score_table";
  const auto tasks = SplitCommas(root.AttrString("tasks"));
  const auto encs = SplitCommas(root.AttrString("encodings"));
  h5::Group g = root.OpenGroup("scores");
  const size_t E = encs.size();
  // [task, encoding], as the two list attributes name them.
  const std::vector<uint64_t> shape = {tasks.size(), E};
  const auto mx = g.ReadDoublesShaped("ruoss_max", shape),
             mean = g.ReadDoublesShaped("ruoss_mean", shape),
             sd = g.ReadDoublesShaped("ruoss_sd", shape);
  std::ofstream dat(DatFile(dir, name));
  dat << "# encoding_index task_index ruoss_max ruoss_mean ruoss_sd (tasks: "
      << root.AttrString("tasks") << "; encodings: " << root.AttrString("encodings") << ")\n";
  for (size_t t = 0; t < tasks.size(); ++t)
    for (size_t e = 0; e < E; ++e)
      dat << e << " " << t << " " << mx[t * E + e] << " " << mean[t * E + e] << " " << sd[t * E + e]
          << "\n";
  dat.close();
  std::string s = "# Score table: max over seeds of token accuracy on lengths N+1..M; data in " +
                  name + ".dat\n";
  s += fmt::format("set terminal pngcairo size {},{} font 'Sans,10' noenhanced\n",
                   std::max<size_t>(700, 140 * E + 260),
                   std::max<size_t>(320, 70 * tasks.size() + 170));
  s += "set output '" + name + ".png'\n";
  // One seed has no spread: its cell shows the score alone, and the title says it is one seed.
  const bool one_seed = SplitCommas(root.AttrString("seeds")).size() == 1;
  s += one_seed ? fmt::format("set title 'token accuracy on lengths {}..{} (one seed, {})'\n",
                              root.AttrInt("train_max_length") + 1,
                              root.AttrInt("max_eval_length"), root.AttrString("seeds"))
                : fmt::format(
                      "set title 'token accuracy on lengths {}..{}: max over seeds {} (mean ± sd "
                      "below)'\n",
                      root.AttrInt("train_max_length") + 1, root.AttrInt("max_eval_length"),
                      root.AttrString("seeds"));
  s += "set cbrange [0:1]\nset cblabel 'accuracy (fraction)'\n" + ViridisPalette();
  s += fmt::format("set xrange [-0.5:{}]\nset yrange [{}:-0.5]\n", E - 0.5, tasks.size() - 0.5);
  std::string xt, yt;
  for (size_t e = 0; e < E; ++e) xt += fmt::format("{}'{}' {}", e ? ", " : "", encs[e], e);
  for (size_t t = 0; t < tasks.size(); ++t)
    yt += fmt::format("{}'{}' {}", t ? ", " : "", tasks[t], t);
  s += "set xtics (" + xt + ") rotate by -30\nset ytics (" + yt + ")\n";
  s += "set xlabel 'encoding'\nset ylabel 'task'\nunset key\n";
  // Cells as boxes (gnuplot's "with image" needs a grid of at least 2 x 2; one task is 1 x E);
  // the text white on the dark half of the colour map, black on the light half.
  const std::string text =
      one_seed ? "sprintf('%.2f', $3)" : "sprintf('%.2f\\n%.2f±%.2f', $3, $4, $5)";
  s += fmt::format(
      "plot '{0}.dat' using 1:2:($1-0.5):($1+0.5):($2-0.5):($2+0.5):3 with boxxy fs solid "
      "fc palette, '{0}.dat' using 1:2:($3 < 0.5 ? {1} : '') with labels font 'Sans,9' tc rgb "
      "'white', '{0}.dat' using 1:2:($3 < 0.5 ? '' : {1}) with labels font 'Sans,9' tc rgb "
      "'black'\n",
      name, text);
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawScoreTable);
}
#endif
