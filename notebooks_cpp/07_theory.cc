// Figure 07: the closed-form rotary analyses of `lexp theory` (expectation proxies for RoPE, xPos
// and a scaling rule; RoFormer's decay bound; pair periods with the critical dimension).
// Usage: 07_theory THEORY_FILE   (writes <file's dir>/figures/theory.{png,gp,dat})
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

std::string DrawTheory(const std::string& file) {
  h5::Reader r(file);
  const auto& root = r.root();
  const fs::path dir = FigureDirNextTo(file);
  const std::string name = "theory";
  const int d = static_cast<int>(root.AttrInt("head_dim"));
  const double T = root.AttrDouble("train_length");
  h5::Group ex = root.OpenGroup("expectation"), dec = root.OpenGroup("decay"),
            crit = root.OpenGroup("critical");
  // The curves share the distance axis of `rope`, which bounds the rows drawn.
  std::vector<uint64_t> got;
  const auto rope = ex.ReadDoublesShaped("rope", {kAny}, &got);
  const uint64_t M = got[0];
  const auto xpos = ex.ReadDoublesShaped("xpos", {M});
  const bool scaled = ex.Has("rope_scaled");
  const auto sc = scaled ? ex.ReadDoublesShaped("rope_scaled", {M}) : std::vector<double>{};
  std::ofstream dat(DatFile(dir, name));
  dat << "# block 0: distance n, s(n)/sqrt(d) for RoPE, xPos" << (scaled ? ", RoPE scaled" : "")
      << " (log-spaced rows of the file's curves)\n";
  const double sd = std::sqrt(static_cast<double>(d));
  long last = -1;
  for (double x = 1; x < static_cast<double>(rope.size()); x *= 1.01) {
    const long n = static_cast<long>(x);
    if (n == last) continue;
    last = n;
    dat << n << " " << rope[n] / sd << " " << xpos[n] / sd;
    if (scaled) dat << " " << sc[n] / sd;
    dat << "\n";
  }
  dat << "\n\n# block 1: distance r, RoFormer decay bound D(r)\n";
  const auto rd = dec.ReadDoublesShaped("distance", {kAny}, &got);
  const auto bd = dec.ReadDoublesShaped("bound", {got[0]});
  for (size_t i = 1; i < rd.size(); ++i) dat << rd[i] << " " << bd[i] << "\n";
  dat << "\n\n# block 2: pair k, period (tokens)\n";
  const auto per = crit.ReadDoublesShaped("pair_period", {kAny});
  for (size_t k = 0; k < per.size(); ++k) dat << k << " " << per[k] << "\n";
  const bool mc = ex.Has("monte_carlo");
  std::string mc_title;
  if (mc) {
    const h5::Group g = ex.OpenGroup("monte_carlo");
    dat << "\n\n# block 3: distance n, Monte-Carlo mean, standard error, closed form for RoPE, "
           "then xPos; all / sqrt(d)\n";
    const auto n = g.ReadDoublesShaped("distance", {kAny}, &got);
    const std::vector<uint64_t> shape = {got[0]};
    const auto rm = g.ReadDoublesShaped("rope_mean", shape),
               rs = g.ReadDoublesShaped("rope_standard_error", shape),
               rc = g.ReadDoublesShaped("rope_closed_form", shape),
               xm = g.ReadDoublesShaped("xpos_mean", shape),
               xs = g.ReadDoublesShaped("xpos_standard_error", shape),
               xc = g.ReadDoublesShaped("xpos_closed_form", shape);
    for (size_t i = 0; i < n.size(); ++i)
      dat << n[i] << " " << rm[i] / sd << " " << rs[i] / sd << " " << rc[i] / sd << " "
          << xm[i] / sd << " " << xs[i] / sd << " " << xc[i] / sd << "\n";
    mc_title = fmt::format("Monte-Carlo expectation, {} samples, {} ({:g}, {:g}), {}",
                           g.AttrInt("samples"), g.AttrString("distribution"), g.AttrDouble("mean"),
                           g.AttrDouble("sd"), g.AttrString("content"));
  }
  dat.close();
  const int d_extra = static_cast<int>(crit.AttrInt("d_extra"));
  std::string s = "# Closed-form rotary analyses; data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size {},480 font 'Sans,10' noenhanced\n",
                   mc ? 2000 : 1500);
  s += "set output '" + name + ".png'\n";
  s += fmt::format(
      "set multiplot layout 1,{} title 'head dim {}, base {:g}, training length {:g}'\n",
      mc ? 4 : 3, d, root.AttrDouble("base"), T);
  s += "set grid\nset key top right\nset logscale x\n";
  s += "set xlabel 'relative distance n (tokens, log scale)'\n";
  s += "set ylabel 'expected logit s(n)/sqrt(d), q = k = 1'\n";
  s += "set title 'attention expectation proxy'\n";
  s += fmt::format("set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lc rgb 'gray40'\n", T);
  s += fmt::format(
      "plot '{0}.dat' index 0 using 1:2 with lines lw 1.5 title 'RoPE', '{0}.dat' index 0 "
      "using 1:3 with lines lw 1.5 title 'xPos'",
      name);
  if (scaled)
    s += fmt::format(", '{}.dat' index 0 using 1:4 with lines lw 1.5 title 'RoPE {}'", name,
                     ex.AttrString("scale"));
  s += "\nset title 'RoFormer long-term decay bound'\nset ylabel 'D(r) (dimensionless)'\n";
  s += "set xlabel 'relative distance r (tokens, log scale)'\n";
  s += fmt::format("plot '{}.dat' index 1 using 1:2 with lines lw 1.5 notitle\n", name);
  s += "unset arrow 1\nunset logscale x\nset logscale y\nset key bottom right\n";
  s += "set xlabel 'rotary pair k'\nset ylabel 'period 2 pi b^(2k/d) (tokens, log scale)'\n";
  s += fmt::format("set title 'critical dimension: d_extra = {} (pairs < {} complete a period)'\n",
                   d_extra, d_extra / 2);
  s += fmt::format(
      "set arrow 2 from graph 0,first {0} to graph 1,first {0} nohead dt 2 lc rgb 'red'\n", T);
  s += fmt::format("set arrow 3 from {0},graph 0 to {0},graph 1 nohead dt 3 lc rgb 'black'\n",
                   d_extra / 2.0 - 0.5);
  s += fmt::format(
      "plot '{}.dat' index 2 using 1:2 with linespoints lw 1.5 pt 7 ps 0.5 title 'pair "
      "period', 1/0 dt 2 lc rgb 'red' title 'training length'\n",
      name);
  if (mc) {
    s += "unset arrow 2\nunset arrow 3\nunset logscale y\nset key bottom left\n";
    s += "set logscale x\nset xrange [1:*]\n";
    s += "set xlabel 'relative distance n (tokens, log scale)'\n";
    s += "set ylabel 'expected logit / sqrt(d)'\n";
    s += "set title '" + mc_title + "'\nset style fill transparent solid 0.3\n";
    s += fmt::format(
        "plot '{0}.dat' index 3 using 1:($2-2*$3):($2+2*$3) with filledcurves lc rgb '#4e79a7' "
        "title 'RoPE mean +- 2 s.e.', '' index 3 using 1:4 with lines lw 1 lc rgb 'black' "
        "title 'RoPE closed form', '' index 3 using 1:($5-2*$6):($5+2*$6) with filledcurves lc "
        "rgb '#f28e2b' title 'xPos mean +- 2 s.e.', '' index 3 using 1:7 with lines lw 1 dt 2 "
        "lc rgb 'black' title 'xPos closed form'\n",
        name);
  }
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) { return lexp::FigureProgramMain(argc, argv, lexp::DrawTheory); }
#endif
