// Figure 01: token accuracy and exact match vs evaluation length, one line per encoding.
// Usage: 01_accuracy_vs_length RUN_DIR   (writes RUN_DIR/figures/accuracy_vs_length.{png,gp,dat})
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

std::string DrawAccuracyVsLength(const std::string& run_dir) {
  const std::vector<RunData> runs = ReadRuns(run_dir);
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "accuracy_vs_length";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per encoding (blocks separated by two blank lines)\n"
      << "# columns: length(tokens) token_accuracy exact_match band_low band_high\n"
      << "# one run: token accuracy, exact match and the Clopper-Pearson 95% band of the token\n"
      << "# accuracy; several seeds: their mean and the min..max band over seeds\n";
  // Curves in order of first appearance; each collects the completed runs of its key.
  std::vector<std::pair<std::string, std::vector<const RunData*>>> groups;
  int N = 0;
  for (const auto& r : runs) {
    N = std::max(N, r.train_max_length);
    if (r.length.empty()) continue;
    const std::string key = GroupKey(r.encoding);
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, {}});
      it = groups.end() - 1;
    }
    if (it->second.empty() || it->second[0]->length == r.length) it->second.push_back(&r);
  }
  double max_len = 1, chance = std::numeric_limits<double>::quiet_NaN();
  std::string plot_acc, plot_em;
  int block = 0;
  for (const auto& [key, members] : groups) {
    const RunData& first = *members[0];
    if (std::isfinite(first.chance))
      chance = std::isnan(chance) ? first.chance : std::max(chance, first.chance);
    dat << "# encoding " << key << " (" << members.size() << " run(s))\n";
    for (size_t i = 0; i < first.length.size(); ++i) {
      double acc = 0, em = 0, lo = 1, hi = 0;
      for (const RunData* m : members) {
        acc += m->accuracy[i] / members.size();
        em += m->exact[i] / members.size();
        lo = std::min(lo, m->accuracy[i]);
        hi = std::max(hi, m->accuracy[i]);
      }
      if (members.size() == 1) {
        lo = first.accuracy_lo.empty() ? acc : first.accuracy_lo[i];
        hi = first.accuracy_hi.empty() ? acc : first.accuracy_hi[i];
      }
      dat << first.length[i] << " " << acc << " " << em << " " << lo << " " << hi << "\n";
      max_len = std::max(max_len, first.length[i]);
    }
    dat << "\n\n";
    const std::string sep = block ? ", " : "";
    const std::string title =
        members.size() > 1 ? fmt::format("{} (mean of {} seeds)", key, members.size()) : key;
    plot_acc += fmt::format(
        "{0}'{1}.dat' index {2} using 1:4:5 with filledcurves ls {3} fs transparent solid 0.18 "
        "notitle, '{1}.dat' index {2} using 1:2 with linespoints ls {3} title '{4}'",
        sep, name, block, block + 1, title);
    plot_em += fmt::format("{}'{}.dat' index {} using 1:3 with linespoints ls {} title '{}'", sep,
                           name, block, block + 1, title);
    ++block;
  }
  dat.close();
  LEXP_INPUT_CHECK(block > 0, "no run in '" + run_dir + "' has evaluation results");
  // Chance: a uniform guess over the task's output alphabet (the runs of a directory share a task).
  if (std::isfinite(chance))
    plot_acc += fmt::format(
        ", {} with lines dt 3 lw 2 lc rgb 'black' title 'uniform guess ({:.3g})'", chance,
        chance);
  std::string s;
  s += "# Accuracy vs evaluation length; data in " + name +
       ".dat (written by lexp from the run files)\n";
  s += fmt::format("set terminal pngcairo size {},520 font 'Sans,10' noenhanced\n",
                   block > 6 ? 1600 : 1200);
  s += "set output '" + name + ".png'\n";
  s += "set multiplot layout 1,2 title 'Length extrapolation: trained on lengths 1.." +
       std::to_string(N) + "'\n";
  s += "set grid\n" + KeyPlacement(block) + "set yrange [0:1.02]\n";
  s += fmt::format("set xrange [1:{}]\n", max_len);
  s += "set logscale x 2\n";
  s += "set xlabel 'evaluation length n (task length: input symbols; log scale)'\n";
  s += fmt::format("set arrow 1 from {},0 to {},1.02 nohead dashtype 2 lc rgb 'gray40'\n", N, N);
  // Along the dashed line, on its left, half way up: where the curves are not (every curve is near
  // 1 within the training lengths; at the bottom the uniform-guess line runs).
  s += fmt::format(
      "set label 1 'train max N={}' at {},graph 0.5 center rotate by 90 offset -0.9,0 textcolor "
      "rgb 'gray40'\n",
      N, N);
  s += SeriesStyles(block);
  s += "set ylabel 'token accuracy (fraction)'\n";
  s += "set title 'token accuracy (band: 95% Clopper-Pearson, or min..max over seeds)'\n";
  s += "plot " + plot_acc + "\n";
  s += "set ylabel 'exact match (fraction of sequences)'\nset title 'sequence exact match'\n";
  s += "plot " + plot_em + "\n";
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawAccuracyVsLength);
}
#endif
