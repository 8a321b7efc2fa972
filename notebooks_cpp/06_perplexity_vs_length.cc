// Figure 06: perplexity vs evaluation length for language-modelling runs (task markov_lm), with the
// source's entropy rate as the floor. Usage: 06_perplexity_vs_length RUN_DIR
// (writes RUN_DIR/figures/perplexity_vs_length.{png,gp,dat})
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

std::string DrawPerplexityVsLength(const std::string& run_dir) {
  const std::vector<RunData> runs = ReadRuns(run_dir);
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "perplexity_vs_length";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per run: length(tokens) loss(nats per token) perplexity\n";
  double H = std::numeric_limits<double>::quiet_NaN(), max_len = 1;
  int N = 0, block = 0;
  std::string plot;
  for (const auto& r : runs) {
    N = std::max(N, r.train_max_length);
    if (r.loss.empty()) continue;
    if (std::isfinite(r.entropy_rate)) H = r.entropy_rate;
    dat << "# " << r.encoding << "\n";
    for (size_t i = 0; i < r.length.size(); ++i) {
      dat << r.length[i] << " " << r.loss[i] << " " << std::exp(r.loss[i]) << "\n";
      max_len = std::max(max_len, r.length[i]);
    }
    dat << "\n\n";
    plot += fmt::format("{}'{}.dat' index {} using 1:3 with linespoints ls {} title '{}'",
                        block ? ", " : "", name, block, block + 1, r.encoding);
    ++block;
  }
  dat.close();
  LEXP_INPUT_CHECK(block > 0, "no run in '" + run_dir + "' has evaluation losses");
  std::string s = "# Perplexity vs evaluation length against the source entropy rate; data in " +
                  name + ".dat\n";
  s += fmt::format("set terminal pngcairo size {},520 font 'Sans,10' noenhanced\n",
                   block > 6 ? 1100 : 800);
  s += "set output '" + name + ".png'\n" + SeriesStyles(block);
  s += "set grid\n" + KeyPlacement(block) + "set logscale x 2\nset logscale y\n";
  s += fmt::format("set xrange [1:{}]\n", max_len);
  s += "set xlabel 'evaluation length n (task length: input symbols; log scale)'\n";
  s += "set ylabel 'perplexity exp(loss per token) (log scale)'\n";
  s += fmt::format("set title 'trained on 1..{}; dashed: exp(source entropy rate)'\n", N);
  s += fmt::format("set arrow 1 from {},graph 0 to {},graph 1 nohead dashtype 2 lc rgb 'gray40'\n",
                   N, N);
  if (std::isfinite(H))
    plot += fmt::format(", {} with lines dt 2 lw 2 lc rgb 'black' title 'source: exp(H) = {:.3f}'",
                        std::exp(H), std::exp(H));
  s += "plot " + plot + "\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawPerplexityVsLength);
}
#endif
