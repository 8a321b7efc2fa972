// Figure 20: shift invariance of attention (from /analysis/position_shift of each run, written by
// lexp analyze; Wang et al. 2024, arXiv:2411.13476, Eq. 4). Usage: 20_position_shift RUN_DIR
// (writes RUN_DIR/figures/position_shift.{png,gp,dat})
// Compiled twice: into the figure library that `lexp` draws from, and with LEXP_FIGURE_PROGRAM as
// this program on its own; copy the file to make a figure of your own.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_data.h"
#include "notebooks_cpp/figure_kit.h"
#include "notebooks_cpp/figures.h"

namespace fs = std::filesystem;

namespace lexp {

std::string DrawPositionShift(const std::string& run_dir) {
  struct Run {
    std::string label, precision;
    std::vector<double> shifts, tokens;
    std::vector<std::vector<double>> move;  // [shift][probe] mean over layers and heads
    std::vector<double> first_share, first_mass;  // [shift] at the longest probe
  };
  std::vector<Run> runs;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    const auto& root = r.root();
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("position_shift")) continue;
    const h5::Group g = root.OpenGroup("analysis").OpenGroup("position_shift");
    Run run;
    run.label = RunLabel(root);
    run.precision = g.AttrString("precision");
    std::vector<uint64_t> d;  // [shift, probe, layer, head]
    const auto l1 = g.ReadDoublesShaped("row_l1", {kAny, kAny, kAny, kAny}, &d);
    const auto first = g.ReadDoublesShaped("first_key_l1", d);
    const auto mass = g.ReadDoublesShaped("first_key_mass", {d[1], d[2], d[3]});
    run.shifts = g.ReadDoublesShaped("shift", {d[0]});
    for (auto t : g.ReadIntsShaped("sequence_length", {d[1]}))
      run.tokens.push_back(static_cast<double>(t));
    const uint64_t P = d[1], LH = d[2] * d[3];
    // The longest probe (probe.lengths may be given in any order).
    const uint64_t L = static_cast<uint64_t>(
        std::max_element(run.tokens.begin(), run.tokens.end()) - run.tokens.begin());
    double longest_mass = 0;
    for (uint64_t lh = 0; lh < LH; ++lh) longest_mass += mass[L * LH + lh] / LH;
    for (uint64_t k = 0; k < d[0]; ++k) {
      std::vector<double> per_probe(P);
      double row = 0, on_first = 0;
      for (uint64_t p = 0; p < P; ++p) {
        double sum = 0;
        for (uint64_t lh = 0; lh < LH; ++lh) sum += l1[(k * P + p) * LH + lh] / LH;
        per_probe[p] = sum;
      }
      for (uint64_t lh = 0; lh < LH; ++lh) {
        row += l1[(k * P + L) * LH + lh];
        on_first += first[(k * P + L) * LH + lh];
      }
      run.move.push_back(per_probe);
      run.first_share.push_back(row > 0 ? on_first / row : std::nan(""));
      run.first_mass.push_back(longest_mass);
    }
    runs.push_back(std::move(run));
  }
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/position_shift (lexp analyze)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "position_shift";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per (run, shift): model sequence length (tokens), attention moved (L1 per "
         "row, mean over queries, layers and heads; NaN where exactly 0)\n";
  std::string left, right;
  int block = 0, style = 0;
  std::vector<std::string> exact;  // runs whose attention did not move at all: not on a log axis
  for (const auto& run : runs) {
    ++style;
    bool any = false, all_zero = true;  // NaN (a shift not replayed) is neither
    for (const auto& m : run.move)
      for (double x : m) {
        any = any || x > 0;
        all_zero = all_zero && x == 0;
      }
    if (all_zero) exact.push_back(run.label);
    for (size_t k = 0; k < run.shifts.size(); ++k) {
      dat << "# " << run.label << " shift " << run.shifts[k] << "\n";
      for (size_t p = 0; p < run.tokens.size(); ++p) {
        const double x = run.move[k][p];
        dat << run.tokens[p] << " " << (x > 0 ? DatNumber(x) : std::string("NaN")) << "\n";
      }
      dat << "\n\n";
      if (any)  // the first shift (the paper's) solid and named, the far ones dashed
        left += fmt::format(
            "{}'{}.dat' index {} using 1:2 with linespoints ls {}{} {}", left.empty() ? "" : ", ",
            name, block, style, k == 0 ? "" : " dt 2",
            k == 0 ? "title " + Quote(fmt::format("{} ({})", run.label, run.precision))
                   : std::string("notitle"));
      ++block;
    }
  }
  // Right panel: the first key's share of the move against its share of attention (longest probe).
  const int points = block;
  dat << "# first key at the longest probe: one row per (run, shift): its attention (fraction), "
         "its share of the move\n";
  for (const auto& run : runs)
    for (size_t k = 0; k < run.shifts.size(); ++k)
      dat << DatNumber(run.first_mass[k]) << " " << DatNumber(run.first_share[k]) << "\n";
  dat << "\n\n";
  block = points;
  style = 0;
  size_t row = 0;
  for (const auto& run : runs) {
    ++style;
    const size_t n = run.shifts.size();
    bool finite = false;  // a run that did not move has no share to show
    for (double x : run.first_share) finite = finite || std::isfinite(x);
    if (finite)
      right += fmt::format("{}'{}.dat' index {} every ::{}::{} using 1:2 with points ls {} pt 7 "
                         "ps 1.5 title {}",
                         right.empty() ? "" : ", ", name, block, row, row + n - 1, style,
                         Quote(run.label));
    row += n;
  }
  dat.close();
  std::string s = "# Shift invariance of attention; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 1300,520 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n" + SeriesStyles(static_cast<int>(runs.size()));
  s += "set multiplot layout 1,2 title 'attention under a shift of every position id (Wang et "
       "al. 2024, Eq. 4; 0 for an exactly relative encoding)'\n";
  s += "set grid\nset key below\nset format y '%.0e'\n";
  s += "set logscale y\nset xlabel 'sequence length (tokens)'\n";
  s += "set ylabel 'attention moved: L1 per row (log scale)'\n";
  std::string shifts;
  for (size_t k = 1; k < runs[0].shifts.size(); ++k)
    shifts += fmt::format("{}+{:g}", shifts.empty() ? "" : ", ", runs[0].shifts[k]);
  s += "set title " +
       Quote(fmt::format("mean over queries, layers, heads; solid: shift +{:g}, dashed: {}",
                         runs[0].shifts[0], shifts)) +
       "\n";
  std::string zero_note;
  for (const auto& e : exact) zero_note += (zero_note.empty() ? "" : ", ") + e;
  if (!zero_note.empty())
    s += "set label 1 " + Quote("exactly 0 (not drawn): " + zero_note) +
         " at graph 0.02,0.95 left front\n";
  if (!left.empty())
    s += "plot " + left + "\n";
  else
    s += "unset logscale y\nset yrange [-1:1]\nplot 0 with lines lc rgb 'black' title "
         "'every run: exactly 0'\n";
  s += "unset label 1\nset format y '%g'\n";
  // Equal ranges on both axes, so that the diagonal of equal shares is at 45 degrees.
  double top = 0;
  for (const auto& run : runs)
    for (size_t k = 0; k < run.shifts.size(); ++k)
      for (double x : {run.first_mass[k], run.first_share[k]})
        if (std::isfinite(x)) top = std::max(top, x);
  top = std::min(1.0, top > 0 ? 1.2 * top : 1.0);
  s += fmt::format("unset logscale y\nset xrange [0:{0}]\nset yrange [0:{0}]\n", top);
  s += "set xlabel 'first key: its share of the attention (longest probe)'\n";
  s += "set ylabel 'first key: its share of the move (at most 0.5)'\n";
  s += "set title 'above the diagonal: the move concentrates on the first token'\n";
  s += "set key top left inside\n";
  s += (right.empty() ? std::string("plot x with lines dt 3 lc rgb 'black' title 'equal shares'")
                      : "plot " + right + ", x with lines dt 3 lc rgb 'black' title 'equal shares'") +
       "\n";
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawPositionShift);
}
#endif
