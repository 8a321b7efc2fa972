// Figure 03: each RoPE scaling rule's per-pair wavelength against the original, and the bias
// families' b(d) over distance, from the file `lexp pe-table` writes.
// Usage: 03_pe_table PE_TABLE_FILE   (writes <file's dir>/figures/pe_table.{png,gp,dat})
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

std::string DrawPeTable(const std::string& file) {
  h5::Reader r(file);
  const auto& root = r.root();
  const fs::path dir = FigureDirNextTo(file);
  const std::string name = "pe_table";
  h5::Group rot = root.OpenGroup("rotary"), bias = root.OpenGroup("bias");
  const std::vector<std::string> rules = SplitCommas(rot.AttrString("rules"));
  LEXP_INPUT_CHECK(!rules.empty(), "file '" + file + "': attribute /rotary/rules names no rule");
  // One wavelength row per rule named in the attribute.
  std::vector<uint64_t> dims;
  const auto wl = rot.ReadDoublesShaped("wavelength", {rules.size(), kAny}, &dims);
  const uint64_t P = dims[1];
  std::ofstream dat(DatFile(dir, name));
  dat << "# block 0: pair k, then the wavelength (tokens) of each rule: ";
  for (const auto& x : rules) dat << x << " ";
  dat << "\n";
  for (uint64_t k = 0; k < P; ++k) {
    dat << k;
    for (size_t ri = 0; ri < rules.size(); ++ri) dat << " " << wl[ri * P + k];
    dat << "\n";
  }
  const std::vector<std::string> fams = {"alibi", "sandwich", "kerple_log", "kerple_power"};
  std::vector<std::vector<double>> b;
  // Every family has the shape of the first, [head, distance]; block 1 reads head 0.
  std::vector<uint64_t> bd;
  b.push_back(bias.ReadDoublesShaped(fams[0], {kAny, kAny}, &bd));
  for (size_t fi = 1; fi < fams.size(); ++fi) b.push_back(bias.ReadDoublesShaped(fams[fi], bd));
  LEXP_INPUT_CHECK(bd[0] > 0, "file '" + file + "': the biases in /bias have no head");
  dat << "\n\n# block 1: distance, then b(d) of head 0 for: alibi sandwich kerple_log "
         "kerple_power\n";
  for (uint64_t d = 1; d < bd[1]; ++d) {
    dat << d;
    for (const auto& v : b) dat << " " << v[d];
    dat << "\n";
  }
  // Block 2 (when the file has /learned): distance, then b(d) of every head of layer 0 per run.
  std::vector<std::string> learned_titles;
  if (root.Has("learned")) {
    h5::Group lg = root.OpenGroup("learned");
    std::vector<std::vector<double>> cols;
    uint64_t n_d = 0;
    bool first = true;
    for (const auto& run : lg.Children()) {
      std::vector<uint64_t> ld;
      const auto v = lg.ReadDoublesShaped(run, {kAny, kAny, kAny}, &ld);  // [layer, head, distance]
      LEXP_INPUT_CHECK(ld[0] > 0, "file '" + file + "': /learned/" + run + " has no layer");
      // A run with no distance leaves block 2 empty rather than shorter than the others' columns.
      n_d = first ? ld[2] : std::min(n_d, ld[2]);
      first = false;
      for (uint64_t h = 0; h < ld[1]; ++h) {
        cols.emplace_back(v.begin() + h * ld[2], v.begin() + (h + 1) * ld[2]);
        learned_titles.push_back(fmt::format("{} head {}", run, h));
      }
    }
    dat << "\n\n# block 2: distance, then the learned b(d) (layer 0, query d, key 0) of:";
    for (const auto& t : learned_titles) dat << " [" << t << "]";
    dat << "\n";
    for (uint64_t d = 1; d < n_d; ++d) {
      dat << d;
      for (const auto& c : cols) dat << " " << c[d];
      dat << "\n";
    }
  }
  dat.close();
  const double L = static_cast<double>(root.AttrInt("train_length"));
  std::string s =
      "# Per-pair wavelength of each RoPE scaling rule, and bias families vs distance\n";
  s += fmt::format("set terminal pngcairo size {},520 font 'Sans,10' noenhanced\n",
                   learned_titles.empty() ? 1200 : 1800);
  s += "set output '" + name + ".png'\n";
  const int panels = learned_titles.empty() ? 2 : 3;
  s += fmt::format(
      "set multiplot layout 1,{} title 'head dim {}, base {:g}, training length {:g}, factor "
      "{:g}'\n",
      panels, root.AttrInt("head_dim"), root.AttrDouble("base"), L, root.AttrDouble("factor"));
  s += "set grid\nset key top left\nset logscale y\n";
  s += "set xlabel 'rotary pair k'\nset ylabel 'wavelength 2 pi / theta_k (tokens, log scale)'\n";
  s += "set title 'RoPE scaling rules (truncated: pairs set to 0 are not drawn)'\n";
  s += fmt::format(
      "set arrow 1 from graph 0,first {0} to graph 1,first {0} nohead dt 2 lc rgb 'gray40'\n", L);
  std::string plot = "plot ";
  for (size_t ri = 0; ri < rules.size(); ++ri)
    plot +=
        fmt::format("{}'{}.dat' index 0 using 1:(${} > 0 ? ${} : 1/0) with lines lw 2 title '{}'",
                    ri ? ", " : "", name, ri + 2, ri + 2,
                    rules[ri] == "yarn" ? "yarn (= ntk_by_parts; + temperature)" : rules[ri]);
  s += plot + "\n";
  s += "unset arrow 1\nset logscale xy\nset key top left\n";
  s += "set xlabel 'distance d (tokens, log scale)'\n";
  s += "set ylabel 'penalty -b(d), head 0 (logit, log scale)'\n";
  s += "set title 'relative biases at fixed parameters (see the file for each)'\n";
  plot = "plot ";
  for (size_t fi = 0; fi < fams.size(); ++fi)
    plot +=
        fmt::format("{}'{}.dat' index 1 using 1:(-${} > 0 ? -${} : 1/0) with lines lw 2 title '{}'",
                    fi ? ", " : "", name, fi + 2, fi + 2, fams[fi]);
  s += plot + "\n";
  if (panels == 3) {
    s += "unset logscale y\nset logscale x\nset key bottom left\n";
    s += "set ylabel 'learned bias b(d), layer 0 (logit)'\n";
    s += "set title 'learned biases of trained runs (query d, key 0)'\n";
    plot = "plot ";
    for (size_t c = 0; c < learned_titles.size(); ++c)
      plot += fmt::format("{}'{}.dat' index 2 using 1:{} with lines lw 1.5 title '{}'",
                          c ? ", " : "", name, c + 2, learned_titles[c]);
    s += plot + "\n";
  }
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) { return lexp::FigureProgramMain(argc, argv, lexp::DrawPeTable); }
#endif
