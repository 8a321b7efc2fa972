// Figure 14: linear probes for position in each residual stream, fitted at the lengths <= N and
// tested beyond them, and how far the states leave their training distribution (from
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
    int train_tokens = 0, long_tokens = 0, long_length = 0;
    std::string fit_lengths;
    std::vector<double> rmse_in, rmse_out, acc, ood_in, ood_out;  // RMSEs relative to a constant
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
    run.long_length = static_cast<int>(g.AttrInt("long_length"));
    run.fit_lengths = g.AttrString("fit_lengths");
    // "1,2,...,16" as "1..16" when the lengths run without a gap.
    const std::vector<std::string> fl = SplitCommas(run.fit_lengths);
    bool runs_on = fl.size() > 2;
    for (size_t i = 1; runs_on && i < fl.size(); ++i)
      runs_on = std::stoi(fl[i]) == std::stoi(fl[i - 1]) + 1;
    if (runs_on) run.fit_lengths = fl.front() + ".." + fl.back();
    std::vector<uint64_t> k;
    run.rmse_in = g.ReadDoublesShaped("index_rmse_in_range", {kAny}, &k);
    run.rmse_out = g.ReadDoublesShaped("index_rmse_beyond", k);
    const auto chance_in = g.ReadDoublesShaped("index_chance_in_range", k);
    const auto chance_out = g.ReadDoublesShaped("index_chance_beyond", k);
    for (size_t l = 0; l < k[0]; ++l) {
      run.rmse_in[l] /= chance_in[l];
      run.rmse_out[l] /= chance_out[l];
    }
    run.acc = g.ReadDoublesShaped("beyond_accuracy", k);
    run.ood_in = g.ReadDoublesShaped("ood_seen", k);
    run.ood_out = g.ReadDoublesShaped("ood_unseen", k);
    runs.push_back(std::move(run));
  }
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/position_probes (lexp analyze)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "position_probes";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per run, one line per residual stream (0: embedded input, L: last block's "
         "output): index, RMSE of the position probe in range and beyond divided by that of the "
         "fit set's mean index on the same rows (1: no linear signal), balanced accuracy of the "
         "classifier of unseen positions within segments, out-of-distribution fraction at seen "
         "and unseen positions\n";
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
        "{0}'{1}.dat' index {2} using 1:5 with linespoints ls {3} dt 2 title '{4}: seen', "
        "'{1}.dat' index {2} using 1:6 with linespoints ls {3} title '{4}: unseen'",
        sep, name, k, k + 1, run.label);
  }
  dat.close();
  std::string s = "# Linear probes for position in the hidden states; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 1650,520 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n" + SeriesStyles(static_cast<int>(runs.size()));
  s += fmt::format(
      "set multiplot layout 1,3 title 'position in the residual stream: probes fitted at n = {} "
      "(up to {} tokens), tested at n = {} ({} tokens)'\n",
      runs[0].fit_lengths, runs[0].train_tokens, runs[0].long_length, runs[0].long_tokens);
  s += "set grid\n" + KeyPlacement(static_cast<int>(runs.size()));
  s += "set xlabel 'residual stream (0: embedded input)'\nset xtics 1\n";
  s += "set ylabel 'RMSE / RMSE of a constant (1: no signal)'\n";
  s += "set title 'linear probe for the index t (in range: t within the fit set)'\nplot " + p1 +
       ", 1 with lines dt 3 lc rgb 'black' title 'no signal'\n";
  s += "set ylabel 'balanced accuracy'\nset yrange [0.4:1]\n";
  s += "set title 'is the position unseen for its segment? (within segments)'\nplot " + p2 +
       ", 0.5 with lines dt 3 lc rgb 'black' title 'chance'\n";
  s += "set ylabel 'fraction of states'\nset yrange [0:1]\n";
  s += "set title 'states outside the training states of their segment (99th pct)'\nplot " + p3 +
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
