// Figure 02: attention entropy (against ln of the visible keys) and max logit vs probe length.
// Usage: 02_attention_vs_length RUN_DIR   (writes RUN_DIR/figures/attention_vs_length.{png,gp,dat})
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

std::string DrawAttentionVsLength(const std::string& run_dir) {
  const std::vector<RunData> runs = ReadRuns(run_dir);
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "attention_vs_length";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per encoding (blocks separated by two blank lines)\n"
      << "# columns: probe_length(tokens) entropy(nats) ln_visible_keys(nats) max_logit\n";
  int N = 0, block = 0;
  std::string plot_ent, plot_max;
  for (const auto& r : runs) {
    N = std::max(N, r.train_max_length);
    if (r.probe_length.empty()) continue;
    dat << "# encoding " << r.encoding << "\n";
    for (size_t i = 0; i < r.probe_length.size(); ++i)
      dat << r.probe_length[i] << " " << r.entropy[i] << " " << r.log_visible[i] << " "
          << r.max_logit[i] << "\n";
    dat << "\n\n";
    const std::string sep = block ? ", " : "";
    plot_ent += fmt::format("{}'{}.dat' index {} using 1:2 with linespoints ls {} title '{}'", sep,
                            name, block, block + 1, r.encoding);
    plot_max += fmt::format("{}'{}.dat' index {} using 1:4 with linespoints ls {} title '{}'", sep,
                            name, block, block + 1, r.encoding);
    ++block;
  }
  dat.close();
  LEXP_INPUT_CHECK(block > 0, "no run in '" + run_dir + "' has attention analysis");
  plot_ent += fmt::format(
      ", '{}.dat' index 0 using 1:3 with lines dt 3 lw 2 lc rgb 'black' "
      "title 'uniform: mean ln(visible keys)'",
      name);
  std::string s;
  s += "# Attention entropy and max logit vs probe length; data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size {},520 font 'Sans,10' noenhanced\n",
                   block > 6 ? 1600 : 1200);
  s += SeriesStyles(block);
  s += "set output '" + name + ".png'\n";
  s += "set multiplot layout 1,2 title 'Attention on the probe batch (mean over layers, heads, "
       "queries)'\n";
  s += "set grid\n" + KeyPlacement(block) + "set logscale x 2\n";
  s += "set xlabel 'probe length n (task length: input symbols; log scale)'\n";
  s += fmt::format("set arrow 1 from {},graph 0 to {},graph 1 nohead dashtype 2 lc rgb 'gray40'\n",
                   N, N);
  s += "set ylabel 'attention entropy (nats)'\nset title 'entropy over visible keys'\n";
  s += "plot " + plot_ent + "\n";
  s += "set ylabel 'max pre-softmax logit'\nset title 'row maximum of the logits'\n";
  s += "plot " + plot_max + "\n";
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawAttentionVsLength);
}
#endif
