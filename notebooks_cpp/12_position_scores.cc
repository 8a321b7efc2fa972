// Figure 12: loss by absolute position and the last-window decomposition into the cost of extra
// keys and of unseen positions (from /analysis/position_scores of each run, written by lexp
// analyze). Usage: 12_position_scores RUN_DIR   (writes
// RUN_DIR/figures/position_scores.{png,gp,dat})
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

std::string DrawPositionScores(const std::string& run_dir) {
  struct Run {
    std::string label;
    int window = 0, train_tokens = 0, longest = 0;
    std::string not_applicable;           // why the window split is not computed ("": it is)
    std::vector<double> loss_at_longest;  // by position
    std::vector<double> lengths, dilution, unseen, full, last, only;
  };
  std::vector<Run> runs;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    const auto& root = r.root();
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("position_scores")) continue;
    const h5::Group g = root.OpenGroup("analysis").OpenGroup("position_scores");
    Run run;
    run.label = RunLabel(root);
    run.window = static_cast<int>(g.AttrInt("window"));
    run.train_tokens = static_cast<int>(g.AttrInt("train_tokens"));
    if (g.HasAttr("window_split_not_applicable"))
      run.not_applicable = g.AttrString("window_split_not_applicable");
    std::vector<uint64_t> em;  // [length, position]
    const auto by_pos = g.ReadDoublesShaped("loss_by_position", {kAny, kAny}, &em);
    const auto n = g.ReadIntsShaped("length", {em[0]});
    LEXP_INPUT_CHECK(em[0] > 0, "file '" + path + "': /analysis/position_scores has no length");
    const auto loss = g.ReadDoublesShaped("loss", {em[0]});
    const auto last = g.ReadDoublesShaped("last_window_loss", {em[0]});
    const auto only = g.ReadDoublesShaped("window_only_loss", {em[0]});
    const auto shifted = g.ReadDoublesShaped("window_shifted_loss", {em[0]});
    const auto T = g.ReadIntsShaped("sequence_length", {em[0]});
    run.longest = static_cast<int>(n.back());
    run.loss_at_longest.assign(by_pos.end() - static_cast<long>(em[1]),
                               by_pos.end() - static_cast<long>(em[1] - T.back()));
    for (uint64_t x = 0; x < em[0]; ++x) {
      run.lengths.push_back(static_cast<double>(n[x]));
      run.full.push_back(loss[x]);
      run.last.push_back(last[x]);
      run.only.push_back(only[x]);
      run.dilution.push_back(last[x] - shifted[x]);
      run.unseen.push_back(shifted[x] - only[x]);
    }
    runs.push_back(std::move(run));
  }
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/position_scores (lexp analyze)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "position_scores";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per run at its longest evaluation length: position t (tokens), loss of the "
         "target scored there (nats, NaN: none scored); then one block per run over the "
         "evaluation lengths: length n, loss, last-window loss with the whole sequence, "
         "last window alone from position 0, extra keys (last window with the sequence - alone "
         "at its own positions), unseen positions (alone at its own positions - alone from 0)\n";
  std::string p1, p2, p3;
  const size_t R = runs.size();
  for (size_t k = 0; k < R; ++k) {
    dat << "# " << runs[k].label << " n = " << runs[k].longest << "\n";
    for (size_t t = 0; t < runs[k].loss_at_longest.size(); ++t)
      dat << t << " " << DatNumber(runs[k].loss_at_longest[t]) << "\n";
    dat << "\n\n";
    p1 += fmt::format("{}'{}.dat' index {} using 1:2 with lines ls {} title '{} (n = {})'",
                      k ? ", " : "", name, k, k + 1, runs[k].label, runs[k].longest);
  }
  for (size_t k = 0; k < R; ++k) {
    const Run& run = runs[k];
    dat << "# " << run.label << " by length\n";
    for (size_t x = 0; x < run.lengths.size(); ++x)
      dat << run.lengths[x] << " " << DatNumber(run.full[x]) << " " << DatNumber(run.last[x]) << " "
          << DatNumber(run.only[x]) << " " << DatNumber(run.dilution[x]) << " "
          << DatNumber(run.unseen[x]) << "\n";
    dat << "\n\n";
    if (!run.not_applicable.empty()) continue;  // no window split to draw
    p2 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:5 with linespoints ls {3} title '{4}: extra keys', "
        "'{1}.dat' index {2} using 1:6 with linespoints ls {3} dt 2 pt 6 title '{4}: unseen "
        "positions'",
        p2.empty() ? "" : ", ", name, R + k, k + 1, run.label);
    p3 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:3 with linespoints ls {3} title '{4}: last window, whole "
        "sequence', '{1}.dat' index {2} using 1:4 with lines ls {3} dt 3 title '{4}: last window "
        "alone'",
        p3.empty() ? "" : ", ", name, R + k, k + 1, run.label);
  }
  dat.close();
  const int T0 = runs[0].train_tokens;
  std::string s =
      "# Scores by position and the last-window decomposition; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 1650,520 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n" + SeriesStyles(static_cast<int>(R));
  s += fmt::format(
      "set multiplot layout 1,3 title 'where the loss goes beyond training (teacher forced; "
      "window = the {} tokens of a training sequence)'\n",
      runs[0].window);
  s += "set grid\n" + KeyPlacement(static_cast<int>(R));
  s += fmt::format(
      "set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lw 1.5 lc rgb 'gray30'\n", T0);
  s += "set xlabel 'position t in the sequence (tokens)'\nset ylabel 'loss (nats per target)'\n";
  s += "set title 'loss by absolute position (dashed: end of a training sequence)'\nplot " + p1 +
       "\n";
  s += "unset arrow 1\nset logscale x 2\nset xlabel 'evaluation length n (log scale)'\n";
  if (p2.empty()) {
    // No run's task is a stationary source: say so where the split would be drawn.
    s += "unset logscale x\nunset xlabel\nunset ylabel\nunset border\nunset tics\nunset grid\n"
         "set xrange [0:1]\nset yrange [0:1]\n";
    s += "set label 1 \"not applicable: the task is not a stationary source;\\nits targets "
         "answer a prompt before the last window,\\nwhich the window alone lacks\" at graph "
         "0.5,0.5 center\n";
    s += "set title 'last window: extra keys and unseen positions'\nplot NaN notitle\n";
    s += "set title 'last window with the whole sequence vs alone'\nplot NaN notitle\n";
    s += "unset label 1\n";
  } else {
    s += "set ylabel 'loss difference (nats per target)'\n";
    s += "set title 'last window: what the extra keys and the unseen positions cost'\nplot " + p2 +
         "\n";
    s += "set ylabel 'loss (nats per target)'\n";
    s += "set title 'last window with the whole sequence vs alone'\nplot " + p3 + "\n";
  }
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawPositionScores);
}
#endif
