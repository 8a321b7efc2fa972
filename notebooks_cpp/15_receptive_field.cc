// Figure 15: the gradient receptive field, the share of the input gradient of the scored rows by
// distance from each row and the effective context against length (from /analysis/receptive_field
// of each run, written by lexp analyze). Usage: 15_receptive_field RUN_DIR   (writes
// RUN_DIR/figures/receptive_field.{png,gp,dat})
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

std::string DrawReceptiveField(const std::string& run_dir) {
  struct Run {
    std::string label;
    int train_tokens = 0, longest = 0;
    std::vector<double> share;  // at the longest length, by distance
    std::vector<double> lengths, c50, c90;
  };
  std::vector<Run> runs;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    const auto& root = r.root();
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("receptive_field")) continue;
    const h5::Group g = root.OpenGroup("analysis").OpenGroup("receptive_field");
    Run run;
    run.label = RunLabel(root);
    run.train_tokens = static_cast<int>(g.AttrInt("train_tokens"));
    std::vector<uint64_t> em;  // [length, distance]
    const auto share = g.ReadDoublesShaped("gradient_share", {kAny, kAny}, &em);
    LEXP_INPUT_CHECK(em[0] > 0, "file '" + path + "': /analysis/receptive_field has no length");
    const auto T = g.ReadIntsShaped("sequence_length", {em[0]});
    run.c50 = g.ReadDoublesShaped("context_50", {em[0]});
    run.c90 = g.ReadDoublesShaped("context_90", {em[0]});
    // The figure's one length unit is the token: each evaluation length by its sequence.
    for (auto v : T) run.lengths.push_back(static_cast<double>(v));
    run.longest = static_cast<int>(T.back());
    run.share.assign(share.end() - static_cast<long>(em[1]),
                     share.end() - static_cast<long>(em[1] - T.back()));
    runs.push_back(std::move(run));
  }
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/receptive_field (lexp analyze)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "receptive_field";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per run at its longest evaluation length: distance d from the scored "
         "row (tokens), share of the input gradient there; then one block per run over the "
         "evaluation lengths: sequence length (tokens), distance holding 50% and 90% of the "
         "gradient (tokens)\n";
  std::string p1, p2;
  const size_t R = runs.size();
  for (size_t k = 0; k < R; ++k) {
    dat << "# " << runs[k].label << " " << runs[k].longest << " tokens\n";
    for (size_t d = 0; d < runs[k].share.size(); ++d)
      dat << d << " " << DatNumber(runs[k].share[d]) << "\n";
    dat << "\n\n";
    p1 += fmt::format("{}'{}.dat' index {} using 1:2 with lines ls {} title '{} ({} tokens)'",
                      k ? ", " : "", name, k, k + 1, runs[k].label, runs[k].longest);
  }
  for (size_t k = 0; k < R; ++k) {
    dat << "# " << runs[k].label << " by length\n";
    for (size_t x = 0; x < runs[k].lengths.size(); ++x)
      dat << runs[k].lengths[x] << " " << DatNumber(runs[k].c50[x]) << " "
          << DatNumber(runs[k].c90[x]) << "\n";
    dat << "\n\n";
    p2 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:2 with linespoints ls {3} dt 2 title '{4}: 50%', "
        "'{1}.dat' index {2} using 1:3 with linespoints ls {3} title '{4}: 90%'",
        k ? ", " : "", name, R + k, k + 1, runs[k].label);
  }
  dat.close();
  const int T0 = runs[0].train_tokens;
  std::string s = "# Gradient receptive field; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 1300,520 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n" + SeriesStyles(static_cast<int>(R));
  s += "set multiplot layout 1,2 title 'how far back a scored prediction depends on its input "
       "(gradient of ln p(target) at the scored rows)'\n";
  s += "set grid\n" + KeyPlacement(static_cast<int>(R));
  s += fmt::format(
      "set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lw 1.5 lc rgb 'gray30'\n", T0);
  s += "set logscale y\nset format y '%g'\nset xlabel 'distance d from the scored row (tokens)'\n";
  s += "set ylabel 'share of the input gradient (log scale)'\n";
  s += "set title 'gradient by distance (dashed: a training sequence)'\nplot " + p1 + "\n";
  s += "unset logscale y\nset format y\nunset arrow 1\nset logscale x 2\n";
  s += "set xlabel 'evaluation sequence length (tokens, log scale)'\nset ylabel 'effective context "
       "(tokens)'\n";
  s += fmt::format(
      "set title 'distance holding 50% / 90% of the gradient'\nplot {}, {} with lines "
      "dt 3 lc rgb 'black' title 'training sequence ({} tokens)'\n",
      p2, T0, T0);
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawReceptiveField);
}
#endif
