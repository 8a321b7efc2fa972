// Figures of the analyses that compare prediction with measurement: entropy under the remedies for
// its growth, the rotary pairs against the critical dimension, and the RoPE base-scaling law.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_kit.h"
#include "notebooks_cpp/figures.h"

namespace fs = std::filesystem;

namespace lexp {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;
// A shape entry that matches any extent: the anchor dataset of a group fixes the others' shapes.
constexpr uint64_t kAny = h5::Group::kAnySize;

}  // namespace

std::string DrawEntropyVariants(const std::string& run_dir) {
  struct Panel {
    std::string label;
    int train_tokens = 0, input_tokens = 0;  // input_tokens: 0 when unknown
    std::vector<std::string> names;
    std::vector<std::vector<double>> entropy, visible;
  };
  std::vector<Panel> panels;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    const auto& root = r.root();
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("entropy_variants")) continue;
    const h5::Group g = root.OpenGroup("analysis").OpenGroup("entropy_variants");
    Panel p;
    p.label = RunLabel(root);
    p.train_tokens = static_cast<int>(g.AttrInt("train_tokens"));
    if (g.HasAttr("input_tokens")) p.input_tokens = static_cast<int>(g.AttrInt("input_tokens"));
    for (const char* v : {"plain", "log_n", "yarn", "lambda"}) {
      if (!g.Has(v)) continue;
      const h5::Group vg = g.OpenGroup(v);
      std::vector<uint64_t> dims;  // [layer, head, query]
      const auto e = vg.ReadDoublesShaped("entropy_by_query", {kAny, kAny, kAny}, &dims);
      p.names.push_back(v);
      p.entropy.push_back(MeanOverHeads(e, dims[0] * dims[1], dims[2]));
      p.visible.push_back(vg.ReadDoublesShaped("visible_keys", {dims[2]}));
    }
    if (!p.names.empty()) panels.push_back(std::move(p));
  }
  LEXP_INPUT_CHECK(!panels.empty(),
                   "no run in '" + run_dir + "' has /analysis/entropy_variants (lexp analyze)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "entropy_variants";
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# one block per (run, variant): query position (tokens before it, inclusive), entropy "
         "(nats, mean over layers and heads), keys the query may see\n";
  const int cols = std::min<int>(3, static_cast<int>(panels.size()));
  const int rows = (static_cast<int>(panels.size()) + cols - 1) / cols;
  std::string s =
      "# Attention entropy under log-n, YaRN and the Lambda mask; data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size {},{} font 'Sans,10' noenhanced\n", 520 * cols,
                   420 * rows);
  s += "set output '" + name + ".png'\n" + SeriesStyles(5);
  s += fmt::format(
      "set multiplot layout {},{} title 'attention entropy of the longest probe under "
      "evaluation-time remedies (mean over layers and heads)'\n",
      rows, cols);
  s += "set grid\nset key below\nset xlabel 'query position i'\nset ylabel 'entropy "
       "(nats)'\n";
  int block = 0;
  for (const auto& p : panels) {
    std::string plot;
    for (size_t v = 0; v < p.names.size(); ++v) {
      dat << "# " << p.label << " " << p.names[v] << "\n";
      for (size_t i = 0; i < p.entropy[v].size(); ++i)
        dat << i << " " << p.entropy[v][i] << " " << p.visible[v][i] << "\n";
      dat << "\n\n";
      const int style = p.names[v] == "plain"   ? 1
                        : p.names[v] == "log_n" ? 2
                        : p.names[v] == "yarn"  ? 3
                                                : 4;
      plot += fmt::format("{}'{}.dat' index {} using 1:2 with lines ls {} title '{}'",
                          plot.empty() ? "" : ", ", name, block++, style, p.names[v]);
    }
    // The uniform bound over the keys each query sees unmasked (i + 1 in the decoder layout, all
    // T in the encoder layout), from the first variant's visible keys (plain's).
    plot += fmt::format(
        ", '{}.dat' index {} using 1:(log($3)) with lines dt 3 lw 2 lc rgb 'black' title "
        "'uniform over the visible keys: ln(visible)'",
        name, block - static_cast<int>(p.names.size()));
    // Under the Lambda mask a query sees fewer keys: its uniform reference is ln(visible keys).
    for (size_t v = 0; v < p.names.size(); ++v)
      if (p.names[v] == "lambda")
        plot += fmt::format(
            ", '{}.dat' index {} using 1:(log($3)) with lines dt 3 lw 2 lc rgb 'gray50' title "
            "'uniform over the keys Lambda leaves: ln(visible)'",
            name, block - static_cast<int>(p.names.size()) + static_cast<int>(v));
    s += fmt::format("set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lc rgb 'gray40'\n",
                     p.train_tokens - 1);
    s += "unset arrow 2\nunset label 2\n";
    if (p.input_tokens > 0)
      s += fmt::format(
          "set arrow 2 from {0},graph 0 to {0},graph 1 nohead dt 4 lc rgb 'gray60'\n"
          "set label 2 'input | answer' at {0},graph 0.12 right offset -0.5,0 tc rgb 'gray50'\n",
          p.input_tokens - 0.5);
    s += fmt::format("set title '{} (dashed: training length {})'\nplot {}\n", p.label,
                     p.train_tokens, plot);
  }
  s += "unset multiplot\n";
  dat.close();
  return Render(dir, name, s);
}

std::string DrawRotaryPairs(const std::string& run_dir) {
  struct RunPairs {
    std::string label;
    int P = 0, predicted = 0, measured_freeze = 0, measured_remove = 0, train_tokens = 0;
    std::vector<double> train_periods, eval_periods, near, far;  // per pair
    std::vector<double> beyond_freeze, beyond_remove;            // per cut 0..P
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
    runs.push_back(std::move(rp));
  }
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/rotary (lexp analyze on a rope run)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "rotary_pairs";
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# per run two blocks. A: pair k, periods covered in training, at the longest "
         "evaluation, mean |c_k| below the training length, at or beyond it. B: cut c, mean loss "
         "beyond training with pairs >= c frozen, removed\n";
  std::string s = "# Rotary pairs against the critical dimension; data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size 1650,{} font 'Sans,10' noenhanced\n",
                   420 * runs.size());
  s += "set output '" + name + ".png'\n" + SeriesStyles(4);
  s += fmt::format(
      "set multiplot layout {},3 title 'rotary pairs: training coverage, "
      "contribution and post-critical ablation (predicted boundary dashed)'\n",
      runs.size());
  s += "set grid\n";
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
      if (!(lo <= hi)) return fmt::format("set autoscale {}\n", axis);
      double a = lo, b = hi;
      if (log) {
        a /= 1.5;
        b *= 1.5;
      } else {
        const double pad = std::max(0.05 * (b - a), 1e-3 * std::max(1.0, std::abs(b)));
        a -= pad;
        b += pad;
      }
      return fmt::format("set {}range [{:g}:{:g}]\n", axis, a, b);
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
  }
  int block = 0;
  for (const auto& r : runs) {
    dat << "# " << r.label << " pairs\n";
    for (int k = 0; k < r.P; ++k)
      dat << k << " " << r.train_periods[k] << " " << r.eval_periods[k] << " " << r.near[k] << " "
          << r.far[k] << "\n";
    dat << "\n\n# " << r.label << " ablation\n";
    for (int c = 0; c <= r.P; ++c)
      dat << c << " " << r.beyond_freeze[c] << " " << r.beyond_remove[c] << "\n";
    dat << "\n\n";
    const int a = block, b = block + 1;
    block += 2;
    const std::string boundary =
        fmt::format("set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lw 2 lc rgb 'black'\n",
                    r.predicted - 0.5);
    s += boundary;
    s += "set key top right\nset logscale y\nset xlabel 'rotary pair k (slower to the right)'\n";
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
    s += "unset logscale y\nset xlabel 'cut c: pairs k >= c ablated (c = P: none)'\n";
    s += fmt::format("set xrange [-0.5:{}]\n", max_pairs + 0.5) + loss.Set("y", false);
    s += "set ylabel 'loss beyond training (nats/token)'\n";
    s += r.measured_freeze < 0
             ? fmt::format(
                   "set title 'ablation: no length beyond training, no measured cut; "
                   "predicted {}'\n",
                   r.predicted)
             : fmt::format(
                   "set title 'ablation: best cut freeze {}, remove {}; predicted {}'\n",
                   r.measured_freeze >= r.P ? "none helps" : std::to_string(r.measured_freeze),
                   r.measured_remove >= r.P ? "none helps" : std::to_string(r.measured_remove),
                   r.predicted);
    s +=
        fmt::format("set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lw 2 lc rgb 'black'\n",
                    r.predicted);
    s += fmt::format(
        "plot '{0}.dat' index {1} using 1:2 with linespoints ls 3 title 'frozen (theta = 0)', "
        "'' index {1} using 1:3 with linespoints ls 4 title 'removed (q, k = 0)'\n",
        name, b);
    s += "unset arrow 1\n";
  }
  s += "unset multiplot\n";
  dat.close();
  return Render(dir, name, s);
}

std::string DrawBaseLaw(const std::string& file) {
  h5::Reader r(file);
  const auto& root = r.root();
  LEXP_INPUT_CHECK(root.Has("measured_limit"),
                   "'" + file + "' is not a base_law.h5 file (lexp base-law)");
  // One entry per run, as many as `base` has.
  std::vector<uint64_t> got;
  const auto base = root.ReadDoublesShaped("base", {kAny}, &got);
  LEXP_INPUT_CHECK(!base.empty(), "file '" + file + "': dataset 'base' lists no run");
  const auto pred = root.ReadDoublesShaped("predicted_limit", got);
  const auto own = root.ReadDoublesShaped("predicted_limit_own", got);
  const auto meas = root.ReadDoublesShaped("measured_limit", got);
  const auto cens = root.ReadIntsShaped("censored", got);
  const auto learnt = root.Has("learnt") ? root.ReadIntsShaped("learnt", got)
                                         : std::vector<int64_t>(base.size(), 1);
  const double T = root.AttrDouble("train_tokens"), longest = root.AttrDouble("longest_evaluated");
  // What the grid says of each limit (files from before the censored fit: the measured value).
  const auto lo = root.Has("limit_lo") ? root.ReadDoublesShaped("limit_lo", got) : meas;
  const auto hi = root.Has("limit_hi") ? root.ReadDoublesShaped("limit_hi", got) : meas;
  int not_learnt = 0;
  for (auto x : learnt) not_learnt += x == 0;
  const fs::path dir = FigureDirNextTo(file);
  const std::string name = "base_law";
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# base, measured limit (tokens; NaN: the run did not learn the source), censored (1: "
         "lower bound), predicted T_extra with d_extra of the pre-training base (NaN below 1e4), "
         "predicted with the run's own d_extra (NaN: unlimited), the interval the grid gives for "
         "the limit: low and high (tokens; drawn at the plot's edge where unbounded)\n";
  for (size_t i = 0; i < base.size(); ++i)
    dat << base[i] << " " << (learnt[i] ? DatNumber(meas[i]) : std::string("NaN")) << " " << cens[i]
        << " " << DatNumber(pred[i]) << " " << DatNumber(own[i]) << " "
        << (lo[i] > 0 ? lo[i] : T / 2) << " " << (std::isfinite(hi[i]) ? hi[i] : longest * 8)
        << "\n";
  dat.close();
  const double full = root.AttrDouble("full_period_base");
  std::string fit =
      not_learnt ? fmt::format("{} runs that did not learn left out; ", not_learnt) : std::string();
  std::string fit_lines;
  for (const char* group : {"scratch", "fine_tuned"}) {
    const std::string a = std::string("fit_") + group + "_";
    if (!root.HasAttr(a + "exponent")) continue;
    const double e = root.AttrDouble(a + "exponent");
    fit += fmt::format("{}{}: exponent {:.3f} [{:.3f}, {:.3f}] vs predicted {:.3f}",
                       fit.empty() || fit.back() == ' ' ? "" : "; ", group, e,
                       root.AttrDouble(a + "exponent_lo"), root.AttrDouble(a + "exponent_hi"),
                       root.AttrDouble(a + "predicted_exponent"));
    if (std::isfinite(e))
      fit_lines += fmt::format(
          ", (x >= 1e4 ? exp({:.17g}) * x**{:.17g} : 1/0) with lines dt 1 lw 2 lc rgb '{}' "
          "title 'censored fit, {}'",
          root.AttrDouble(a + "intercept"), e,
          std::string(group) == "scratch" ? "#e15759" : "#59a14f", group);
  }
  std::string s = "# RoPE base-scaling law, predicted vs measured; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 1000,720 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n" + SeriesStyles(4);
  s += fmt::format(
      "set title \"RoPE base-scaling law: extrapolation limit per run (tolerance {:g}, d = {}, "
      "trained on {:g} tokens)\\n{}\"\n",
      root.AttrDouble("tolerance"), static_cast<int>(root.AttrInt("rotary_dims")), T, fit);
  s += "set logscale xy\nset grid\nset key outside below maxrows 3\n";
  s += "set xlabel 'RoPE base b (log scale)'\nset ylabel 'extrapolation limit (tokens, log "
       "scale)'\n";
  s += fmt::format("set yrange [{:g}:{:g}]\n", T / 2, longest * 8);
  const auto [bmin, bmax] = std::minmax_element(base.begin(), base.end());
  s += fmt::format("set xrange [{:g}:{:g}]\n", *bmin / 2, *bmax * 2);
  s += fmt::format(
      "set arrow 1 from {0:g},graph 0 to {0:g},graph 1 nohead dt 2 lw 2 lc rgb 'black'\n"
      "set label 1 'every pair completes a period left of b = {0:.1f}' at {0:g},graph 0.97 left "
      "offset 0.5,0\n",
      full);
  s += fmt::format(
      "plot '{0}.dat' using 1:2:6:7 with yerrorbars pt 7 ps 1.2 lc rgb '#4e79a7' "
      "title 'measured, with the interval the grid gives', "
      "'' using 1:($3 == 1 ? $2 : 1/0) with points pt 9 ps 1.5 lc rgb '#4e79a7' "
      "title 'measured, censored (>= longest evaluated)', "
      "'' using 1:4 with linespoints ls 2 title 'T_extra, pre-training d_extra (law)', "
      "'' using 1:5 with linespoints ls 3 title \"T_extra, run's own d_extra\", "
      "{1:g} with lines dt 3 lc rgb 'gray40' title 'training length', "
      "{2:g} with lines dt 4 lc rgb 'gray60' title 'longest evaluated'{3}\n",
      name, T, longest, fit_lines);
  return Render(dir, name, s);
}

}  // namespace lexp
