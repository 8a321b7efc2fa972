// Figure 14: linear probes for position in each residual stream, fitted at the training length and
// tested beyond it, and how far the states leave their training distribution (from
// /analysis/position_probes of each run, written by lexp analyze). Usage: 14_position_probes
// RUN_DIR (writes RUN_DIR/figures/position_probes.{png,gp,dat})
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

std::string DrawPositionProbes(const std::string& run_dir) {
  struct Run {
    std::string label;
    int train_tokens = 0, long_tokens = 0;
    std::vector<double> rmse_in, rmse_out, acc, ood_in, ood_out;
  };
  std::vector<Run> runs;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    const auto& root = r.root();
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("position_probes")) continue;
    const h5::Group g = root.OpenGroup("analysis").OpenGroup("position_probes");
    Run run;
    run.label = RunLabel(root);
    run.train_tokens = static_cast<int>(g.AttrInt("train_tokens"));
    run.long_tokens = static_cast<int>(g.AttrInt("long_tokens"));
    std::vector<uint64_t> k;
    run.rmse_in = g.ReadDoublesShaped("index_rmse_in_range", {kAny}, &k);
    run.rmse_out = g.ReadDoublesShaped("index_rmse_beyond", k);
    run.acc = g.ReadDoublesShaped("beyond_accuracy", k);
    run.ood_in = g.ReadDoublesShaped("ood_in_range", k);
    run.ood_out = g.ReadDoublesShaped("ood_beyond", k);
    runs.push_back(std::move(run));
  }
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/position_probes (lexp analyze)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "position_probes";
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# one block per run, one line per residual stream (0: embedded input, L: last block's "
         "output): index, RMSE of the position probe in range and beyond (tokens), balanced "
         "accuracy of the beyond-training classifier, out-of-distribution fraction in range and "
         "beyond\n";
  std::string p1, p2, p3;
  for (size_t k = 0; k < runs.size(); ++k) {
    const Run& run = runs[k];
    dat << "# " << run.label << "\n";
    for (size_t l = 0; l < run.rmse_in.size(); ++l)
      dat << l << " " << DatNumber(run.rmse_in[l]) << " " << DatNumber(run.rmse_out[l]) << " "
          << DatNumber(run.acc[l]) << " " << DatNumber(run.ood_in[l]) << " "
          << DatNumber(run.ood_out[l]) << "\n";
    dat << "\n\n";
    const std::string sep = k ? ", " : "";
    p1 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:2 with linespoints ls {3} dt 2 title '{4}: in range', "
        "'{1}.dat' index {2} using 1:3 with linespoints ls {3} title '{4}: beyond'",
        sep, name, k, k + 1, run.label);
    p2 += fmt::format("{}'{}.dat' index {} using 1:4 with linespoints ls {} title '{}'", sep, name,
                      k, k + 1, run.label);
    p3 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:5 with linespoints ls {3} dt 2 title '{4}: in range', "
        "'{1}.dat' index {2} using 1:6 with linespoints ls {3} title '{4}: beyond'",
        sep, name, k, k + 1, run.label);
  }
  dat.close();
  std::string s = "# Linear probes for position in the hidden states; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 1650,520 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n" + SeriesStyles(static_cast<int>(runs.size()));
  s += fmt::format(
      "set multiplot layout 1,3 title 'position in the residual stream: probes fitted on {}-token "
      "sequences, tested on {}-token ones'\n",
      runs[0].train_tokens, runs[0].long_tokens);
  s += "set grid\n" + KeyPlacement(static_cast<int>(runs.size()), "top left");
  s += "set xlabel 'residual stream (0: embedded input)'\nset xtics 1\n";
  s += "set ylabel 'RMSE of the absolute index (tokens)'\n";
  s += "set title 'linear probe for the position t'\nplot " + p1 + "\n";
  s += "set ylabel 'balanced accuracy'\nset yrange [0.4:1]\n";
  s += "set title 'linear classifier: is t beyond the training length?'\nplot " + p2 +
       ", 0.5 with lines dt 3 lc rgb 'black' title 'chance'\n";
  s += "set ylabel 'fraction of states'\nset yrange [0:1]\n";
  s += "set title 'states outside the training distribution (99th percentile)'\nplot " + p3 +
       ", 0.01 with lines dt 3 lc rgb 'black' title 'expected in distribution'\n";
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawPositionProbes);
}
#endif
