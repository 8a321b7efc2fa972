// Figure 10: rotary pairs of rope runs against the critical dimension (from /analysis/rotary):
// periods covered in training and at the longest evaluation, each pair's contribution to the
// logits, and the post-critical ablation with the predicted boundary.
// Usage: 10_rotary_pairs RUN_DIR   (writes RUN_DIR/figures/rotary_pairs.{png,gp,dat})
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

namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

}  // namespace

std::string DrawRotaryPairs(const std::string& run_dir) {
  struct RunPairs {
    std::string label;
    int P = 0, predicted = 0, measured_freeze = 0, measured_remove = 0, train_tokens = 0;
    std::vector<double> train_periods, eval_periods, near, far;  // per pair
    std::vector<double> beyond_freeze, beyond_remove;            // per cut 0..P
    std::vector<double> lo, hi;  // [2, P+1] 95% intervals of the beyond loss (NaN: not written)
    double chance = std::numeric_limits<double>::quiet_NaN();  // ln V (NaN: not written)
  };
  std::vector<RunPairs> runs;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    const auto& root = r.root();
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("rotary")) continue;
    const h5::Group g = root.OpenGroup("analysis").OpenGroup("rotary");
    if (!g.Has("ablation_loss")) continue;
    RunPairs rp;
    rp.label = RunLabel(root);
    rp.predicted = static_cast<int>(g.AttrInt("predicted_boundary"));
    rp.measured_freeze = static_cast<int>(g.AttrInt("measured_boundary_freeze"));
    rp.measured_remove = static_cast<int>(g.AttrInt("measured_boundary_remove"));
    rp.train_tokens = static_cast<int>(g.AttrInt("train_length"));
    const int N = static_cast<int>(g.AttrInt("train_max_length"));
    // Shapes as rotary_pairs.cc writes them: P pairs from train_angle, E lengths from eval_angle.
    std::vector<uint64_t> tdims, edims, cdims;
    const auto train = g.ReadDoublesShaped("train_angle", {kAny}, &tdims);
    const auto eval = g.ReadDoublesShaped("eval_angle", {kAny, tdims[0]}, &edims);
    const auto near = g.ReadDoublesShaped("contribution_near", {kAny, kAny, tdims[0]}, &cdims);
    const auto far = g.ReadDoublesShaped("contribution_far", cdims);
    const auto abl = g.ReadDoublesShaped("ablation_loss", {2, tdims[0] + 1, edims[0]});
    const auto lengths = g.ReadIntsShaped("eval_length", {edims[0]});
    // The evaluation periods are those of the longest (last) length.
    LEXP_INPUT_CHECK(edims[0] > 0,
                     "file '" + path + "': /analysis/rotary has no evaluation length");
    rp.P = static_cast<int>(train.size());
    const uint64_t E = edims[0], P = rp.P;
    for (uint64_t k = 0; k < P; ++k) {
      rp.train_periods.push_back(train[k] / kTwoPi);
      rp.eval_periods.push_back(eval[(E - 1) * P + k] / kTwoPi);
    }
    rp.near = MeanOverHeads(near, cdims[0] * cdims[1], P);
    rp.far = MeanOverHeads(far, cdims[0] * cdims[1], P);
    for (int m = 0; m < 2; ++m)
      for (uint64_t c = 0; c <= P; ++c) {
        double sum = 0;
        int n = 0;
        for (uint64_t e = 0; e < E; ++e)
          if (lengths[e] > N) {
            sum += abl[(m * (P + 1) + c) * E + e];
            ++n;
          }
        (m == 0 ? rp.beyond_freeze : rp.beyond_remove)
            .push_back(n ? sum / n : std::numeric_limits<double>::quiet_NaN());
      }
    // Files of this version: the intervals over sequences and the uniform guess.
    rp.lo.assign(2 * (P + 1), std::numeric_limits<double>::quiet_NaN());
    rp.hi = rp.lo;
    if (g.Has("beyond_loss_lo")) {
      rp.lo = g.ReadDoublesShaped("beyond_loss_lo", {2, P + 1});
      rp.hi = g.ReadDoublesShaped("beyond_loss_hi", {2, P + 1});
      rp.chance = g.AttrDouble("chance_loss");
    }
    runs.push_back(std::move(rp));
  }
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/rotary (lexp analyze on a rope run)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "rotary_pairs";
  std::ofstream dat(DatFile(dir, name));
  dat << "# per run two blocks. A: pair k, periods covered in training, at the longest "
         "evaluation, mean |c_k| below the training length, at or beyond it. B: cut c, mean loss "
         "beyond training with pairs >= c frozen, removed, and the 95% intervals over sequences "
         "(frozen lo, hi, removed lo, hi; NaN: not in the file)\n";
  std::string s = "# Rotary pairs against the critical dimension; data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size 1650,{} font 'Sans,10' noenhanced\n",
                   470 * runs.size());
  s += "set output '" + name + ".png'\n" + SeriesStyles(4);
  s += fmt::format(
      "set multiplot layout {},3 title 'rotary pairs: training coverage, "
      "contribution and post-critical ablation (predicted boundary dashed)'\n",
      runs.size());
  // Every key below its panel, off the data (the ablation's curves reach the uniform-guess line),
  // in a bottom margin of the same height for all three panels, so that they stay aligned.
  s += "set grid\nset key outside below center horizontal maxcols 3 samplen 2\nset bmargin 6\n";
  // Runs are compared row against row: every column shares its axes across rows (a range over
  // every run's finite values, padded; autoscaled when a column has none).
  struct Range {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    void Add(double x, bool positive_only = false) {
      if (!std::isfinite(x) || (positive_only && x <= 0)) return;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    std::string Set(const char* axis, bool log) const {
      if (!(lo <= hi)) return fmt::format("set autoscale {}\nset {}tics autofreq\n", axis, axis);
      double a = lo, b = hi;
      std::string tics = fmt::format("set {}tics autofreq\n", axis);
      if (log) {
        a /= 1.5;
        b *= 1.5;
        // Under two decades a log axis gets one power of ten or none: ticks at 1, 2, 5 x 10^k.
        if (b / a < 100) {
          std::string list;
          for (int e = static_cast<int>(std::floor(std::log10(a)));
               e <= static_cast<int>(std::ceil(std::log10(b))); ++e)
            for (const double m : {1.0, 2.0, 5.0}) {
              const double v = m * std::pow(10.0, e);
              if (v >= a && v <= b) list += fmt::format("{}{:g}", list.empty() ? "" : ", ", v);
            }
          if (!list.empty()) tics = fmt::format("set {}tics ({})\n", axis, list);
        }
      } else {
        const double pad = std::max(0.05 * (b - a), 1e-3 * std::max(1.0, std::abs(b)));
        a -= pad;
        b += pad;
      }
      return fmt::format("set {}range [{:g}:{:g}]\n", axis, a, b) + tics;
    }
  };
  Range periods, contribution, loss;
  int max_pairs = 0;
  for (const auto& r : runs) {
    max_pairs = std::max(max_pairs, r.P);
    for (int k = 0; k < r.P; ++k) {
      periods.Add(r.train_periods[k], true);
      periods.Add(r.eval_periods[k], true);
      contribution.Add(r.near[k], true);  // drawn on the same log scale as the periods
      contribution.Add(r.far[k], true);
    }
    for (double v : r.beyond_freeze) loss.Add(v);
    for (double v : r.beyond_remove) loss.Add(v);
    if (!std::isnan(r.chance)) loss.Add(r.chance);
  }
  int block = 0;
  for (const auto& r : runs) {
    dat << "# " << r.label << " pairs\n";
    for (int k = 0; k < r.P; ++k)
      dat << k << " " << r.train_periods[k] << " " << r.eval_periods[k] << " " << r.near[k] << " "
          << r.far[k] << "\n";
    dat << "\n\n# " << r.label << " ablation\n";
    for (int c = 0; c <= r.P; ++c)
      dat << c << " " << r.beyond_freeze[c] << " " << r.beyond_remove[c] << " "
          << DatNumber(r.lo[c]) << " " << DatNumber(r.hi[c]) << " " << DatNumber(r.lo[r.P + 1 + c])
          << " " << DatNumber(r.hi[r.P + 1 + c]) << "\n";
    dat << "\n\n";
    const int a = block, b = block + 1;
    block += 2;
    const std::string boundary =
        fmt::format("set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lw 2 lc rgb 'black'\n",
                    r.predicted - 0.5);
    s += boundary;
    s += "set logscale y\nset xlabel 'rotary pair k (slower to the right)'\n";
    s += fmt::format("set xrange [-0.5:{}]\n", max_pairs - 0.5) + periods.Set("y", true);
    s += "set ylabel 'periods covered (log scale)'\n";
    s += fmt::format("set title '{}: angle range / 2 pi (1 = a full period)'\n", r.label);
    s += fmt::format(
        "plot '{0}.dat' index {1} using 1:2 with linespoints ls 1 title 'training ({2} tokens)', "
        "'' index {1} using 1:3 with linespoints ls 2 title 'longest evaluation', 1 with lines dt "
        "3 lc rgb 'gray40' title 'one period'\n",
        name, a, r.train_tokens);
    s +=
        "set ylabel 'mean |contribution| to the logit (log scale)'\n" + contribution.Set("y", true);
    s += "set title \"each pair's share of the logits (longest probe)\"\n";
    s += fmt::format(
        "plot '{0}.dat' index {1} using 1:4 with linespoints ls 1 title 'distance < training', "
        "'' index {1} using 1:5 with linespoints ls 2 title 'distance >= training'\n",
        name, a);
    s += "unset logscale y\nset xlabel 'cut c: pairs k >= c ablated (c = P: "
         "none)'\n";
    s += fmt::format("set xrange [-0.5:{}]\n", max_pairs + 0.5) + loss.Set("y", false);
    s += "set ylabel 'loss beyond training (nats/token)'\n";
    auto cut = [](int c) { return c < 0 ? std::string("none") : std::to_string(c); };
    s += fmt::format("set title 'ablation: measured boundary freeze {}, remove {}; predicted {}'\n",
                     cut(r.measured_freeze), cut(r.measured_remove), r.predicted);
    s +=
        fmt::format("set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lw 2 lc rgb 'black'\n",
                    r.predicted);
    s += fmt::format(
        "plot '{0}.dat' index {1} using 1:2 with linespoints ls 3 title 'frozen (theta = 0)', "
        "'' index {1} using 1:3 with linespoints ls 4 title 'removed (q, k = 0)', "
        "'' index {1} using 1:2:4:5 with yerrorbars ls 3 notitle, "
        "'' index {1} using 1:3:6:7 with yerrorbars ls 4 notitle{2}\n",
        name, b,
        std::isnan(r.chance) ? std::string()
                             : fmt::format(", {} with lines dt 3 lc rgb 'gray40' title 'uniform "
                                           "guess (ln V = {:.2f})'",
                                           r.chance, r.chance));
    s += "unset arrow 1\n";
  }
  s += "unset multiplot\n";
  dat.close();
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawRotaryPairs);
}
#endif
