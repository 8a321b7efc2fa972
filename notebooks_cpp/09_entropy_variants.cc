// Figure 09: entropy under log-n, YaRN and the Lambda mask (from /analysis/entropy_variants of each
// run, written by lexp analyze). Usage: 09_entropy_variants RUN_DIR   (writes
// RUN_DIR/figures/entropy_variants.{png,gp,dat})
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

std::string DrawEntropyVariants(const std::string& run_dir) {
  struct Panel {
    std::string label;
    std::string run_rule;  // what the run applies itself ("" or "none": nothing)
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
    if (g.HasAttr("run_rule")) p.run_rule = g.AttrString("run_rule");
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
  std::ofstream dat(DatFile(dir, name));
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
    // An evaluation with a rule of its own: the variants replay with it, and the title says so.
    const std::string own = p.run_rule.empty() || p.run_rule == "none"
                                ? ""
                                : "\\nevery curve with the run's own " + p.run_rule;
    s += fmt::format("set title \"{} (dashed: training length {}){}\"\nplot {}\n", p.label,
                     p.train_tokens, own, plot);
  }
  s += "unset multiplot\n";
  dat.close();
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawEntropyVariants);
}
#endif
