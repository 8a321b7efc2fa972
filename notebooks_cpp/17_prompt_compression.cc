// Figure 17: prompt compression (lexp compress): for each run of a directory with
// /analysis/prompt_compression, exact match against the compression ratio, one line per task
// length, and the prompt's input tokens after compression against the ratio, the training
// length's input marked.
// Usage: 17_prompt_compression RUN_DIR
// (writes RUN_DIR/figures/prompt_compression.{png,gp,dat})
// Compiled twice: into the figure library that `lexp` draws from, and with LEXP_FIGURE_PROGRAM as
// this program on its own; copy the file to make a figure of your own.
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_data.h"
#include "notebooks_cpp/figure_kit.h"
#include "notebooks_cpp/figures.h"

namespace lexp {

namespace {

struct CompressionCurves {
  std::string label;
  int64_t train_length = 0;
  std::vector<double> ratio, exact, tokens;  // exact, tokens: [ratio, length]
  std::vector<int64_t> length;
};

bool ReadCompression(const std::string& path, CompressionCurves* out) {
  h5::Reader r(path);
  const h5::Group& root = r.root();
  if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("prompt_compression")) return false;
  const h5::Group g = root.OpenGroup("analysis").OpenGroup("prompt_compression");
  out->label = RunLabel(root);
  out->train_length = g.AttrInt("train_length");
  out->ratio = g.ReadDoubles("ratio");
  out->length = g.ReadInts("length");
  const uint64_t R = out->ratio.size(), L = out->length.size();
  out->exact = g.ReadDoublesShaped("exact_match", {R, L});
  out->tokens = g.ReadDoublesShaped("input_tokens", {R, L});
  return true;
}

}  // namespace

bool HasPromptCompression(const std::string& run_dir) {
  CompressionCurves c;
  for (const auto& path : FindRunFiles(run_dir))
    if (ReadCompression(path, &c)) return true;
  return false;
}

std::string DrawPromptCompression(const std::string& run_dir) {
  std::vector<CompressionCurves> runs;
  for (const auto& path : FindRunFiles(run_dir)) {
    CompressionCurves c;
    if (ReadCompression(path, &c)) runs.push_back(std::move(c));
  }
  LEXP_INPUT_CHECK(!runs.empty(), "no run in '" + run_dir +
                                      "' has /analysis/prompt_compression (lexp compress RUN "
                                      "--lm LM_RUN)");
  const std::filesystem::path dir = FigureDir(run_dir);
  const std::string name = "prompt_compression";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per (run, task length), blocks separated by two blank lines; columns:\n"
      << "# ratio(fraction of the context dropped) exact_match input_tokens\n";
  for (const auto& c : runs)
    for (size_t j = 0; j < c.length.size(); ++j) {
      dat << "# " << c.label << " length " << c.length[j] << "\n";
      for (size_t i = 0; i < c.ratio.size(); ++i)
        dat << DatNumber(c.ratio[i]) << " " << DatNumber(c.exact[i * c.length.size() + j]) << " "
            << DatNumber(c.tokens[i * c.length.size() + j]) << "\n";
      dat << "\n\n";
    }
  dat.close();
  const int panels = static_cast<int>(runs.size());
  std::string s = "# Prompt compression; data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size 1100,{} font 'Sans,10' noenhanced\n", 400 * panels);
  s += "set output '" + name + ".png'\n";
  s += fmt::format("set multiplot layout {},2 title {}\n", panels,
                   Quote("prompts compressed by the surprisal of a language model, evaluated on "
                         "the sequences that /eval of the run scored"));
  int block = 0;
  for (const auto& c : runs) {
    const int L = static_cast<int>(c.length.size());
    s += SeriesStyles(L);
    std::string exact_plot, token_plot;
    for (int j = 0; j < L; ++j) {
      const std::string sep = j ? ", " : "";
      exact_plot += fmt::format("{}'{}.dat' index {} using 1:2 with linespoints ls {} title '{}'",
                                sep, name, block + j, j + 1, fmt::format("n = {}", c.length[j]));
      token_plot += fmt::format("{}'{}.dat' index {} using 1:3 with linespoints ls {} notitle", sep,
                                name, block + j, j + 1);
    }
    block += L;
    s += "set xlabel 'compression ratio (fraction of the context dropped)'\n";
    s += "set ylabel 'exact match'\nset yrange [0:1.05]\nset xrange [0:1]\n";
    s += KeyPlacement(L);
    s += "set title " + Quote(c.label + ": exact match (passkey: retrieval accuracy)") + "\n";
    s += "plot " + exact_plot + "\n";
    s += "set ylabel 'input tokens after compression'\nset autoscale y\nunset key\n";
    s += fmt::format("set title {}\n",
                     Quote(fmt::format("{}: prompt length (trained on task lengths <= {})", c.label,
                                       c.train_length)));
    s += "plot " + token_plot + "\n";
  }
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawPromptCompression);
}
#endif
