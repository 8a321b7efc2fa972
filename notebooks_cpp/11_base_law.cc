// Figure 11: the RoPE base-scaling law, measured extrapolation limits against the predictions
// (from base_law.h5 of `lexp base-law`).
// Usage: 11_base_law BASE_LAW_H5   (writes figures/base_law.{png,gp,dat} beside the file)
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
  std::ofstream dat(DatFile(dir, name));
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

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) { return lexp::FigureProgramMain(argc, argv, lexp::DrawBaseLaw); }
#endif
