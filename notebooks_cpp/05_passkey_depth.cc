// Figure 05: passkey accuracy (exact match) per (length, depth) cell, one heat map per run of a run
// directory whose task has a depth axis. Usage: 05_passkey_depth RUN_DIR
// (writes RUN_DIR/figures/accuracy_by_length_and_depth.{png,gp,dat})
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

std::string DrawDepthHeatmap(const std::string& run_dir) {
  const std::vector<RunData> runs = ReadRuns(run_dir);
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "accuracy_by_length_and_depth";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per run: length index i (the x tics name its length n), depth index k (the "
         "y tics name its depth, percent), exact_match (passkey accuracy)\n";
  std::vector<const RunData*> with;
  int N = 0;
  for (const auto& r : runs) {
    N = std::max(N, r.train_max_length);
    if (r.depth_exact.empty()) continue;
    with.push_back(&r);
    const size_t D = r.depth.size();
    dat << "# " << r.encoding << "\n";
    for (size_t i = 0; i < r.length.size(); ++i) {
      for (size_t k = 0; k < D; ++k)
        dat << i << " " << k << " " << r.depth_exact[i * D + k] << "\n";
    }
    dat << "\n\n";
  }
  dat.close();
  LEXP_INPUT_CHECK(!with.empty(), "no run in '" + run_dir + "' has a depth axis");
  const RunData& f = *with[0];
  std::string xt, yt;
  const size_t step = std::max<size_t>(1, f.length.size() / 8);
  for (size_t i = 0; i < f.length.size(); i += step)
    xt += fmt::format("{}'{:g}' {}", xt.empty() ? "" : ", ", f.length[i], i);
  for (size_t k = 0; k < f.depth.size(); ++k)
    yt +=
        fmt::format("{}'{:g}%%' {}", k ? ", " : "", f.depth[k], k);  // gnuplot: labels are formats
  const int cols = static_cast<int>(std::min<size_t>(3, with.size()));
  const int rows = static_cast<int>((with.size() + cols - 1) / cols);
  std::string s = "# Passkey accuracy per (length, depth) cell; data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size {},{} font 'Sans,10' noenhanced\n", 480 * cols,
                   360 * rows + 40);
  s += "set output '" + name + ".png'\n";
  s += fmt::format(
      "set multiplot layout {},{} title 'exact match by length and depth (trained on 1..{})'\n",
      rows, cols, N);
  s += "set cbrange [0:1]\n" + ViridisPalette() + "unset key\n";
  s += "set xtics (" + xt + ") rotate by -45\nset ytics (" + yt + ")\n";
  // Cells as boxes: gnuplot's "with image" needs a grid of at least 2 x 2 (an evaluation at one
  // length or one depth is 1 x D or L x 1).
  s += fmt::format("set xrange [-0.5:{}]\nset yrange [-0.5:{}]\n", f.length.size() - 0.5,
                   f.depth.size() - 0.5);
  s += "set xlabel 'length n (filler tokens)'\nset ylabel 'depth of the key'\n";
  for (size_t b = 0; b < with.size(); ++b)
    s += fmt::format(
        "set title '{}'\nplot '{}.dat' index {} using 1:2:($1-0.5):($1+0.5):($2-0.5):($2+0.5):3 "
        "with boxxy fs solid noborder fc palette\n",
        with[b]->encoding, name, b);
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawDepthHeatmap);
}
#endif
