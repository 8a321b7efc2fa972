// Figure 16: evaluation during training (train.eval_every), one line per run of a run directory:
// exact match and loss at the longest length of /train/eval_history against the steps trained,
// and the last exact match against the parameters each run trained (LoRA trains a part). Drawn for
// the comparison of context-extension fine-tuning (experiments/recipes/extension_finetune.toml),
// where step 0 is the pre-trained model.
// Usage: 16_eval_during_training RUN_DIR
// (writes RUN_DIR/figures/eval_during_training.{png,gp,dat})
// Compiled twice: into the figure library that `lexp` draws from, and with LEXP_FIGURE_PROGRAM as
// this program on its own; copy the file to make a figure of your own.
#include <fmt/core.h>

#include <algorithm>
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

namespace {

// One run's history at its longest evaluated length.
struct HistoryCurve {
  std::string label;
  int64_t length = 0, trainable = 0, total = 0;
  std::vector<int64_t> step;
  std::vector<double> exact, loss;
};

bool ReadHistory(const std::string& path, HistoryCurve* out) {
  h5::Reader r(path);
  const h5::Group& root = r.root();
  if (!root.Has("train") || !root.OpenGroup("train").Has("eval_history")) return false;
  const h5::Group eh = root.OpenGroup("train").OpenGroup("eval_history");
  const std::vector<int64_t> step = eh.ReadInts("step"), length = eh.ReadInts("length");
  const std::vector<double> exact = eh.ReadDoubles("exact_match"), loss = eh.ReadDoubles("loss");
  if (length.empty()) return false;
  out->label = RunLabel(root);
  out->length = *std::max_element(length.begin(), length.end());
  out->trainable = root.HasAttr("trainable_parameters") ? root.AttrInt("trainable_parameters") : 0;
  out->total = root.HasAttr("total_parameters") ? root.AttrInt("total_parameters") : 0;
  for (size_t i = 0; i < length.size(); ++i) {
    if (length[i] != out->length) continue;
    out->step.push_back(step[i]);
    out->exact.push_back(exact[i]);
    out->loss.push_back(loss[i]);
  }
  return true;
}

}  // namespace

bool HasEvalHistory(const std::string& run_dir) {
  HistoryCurve c;
  for (const auto& path : FindRunFiles(run_dir))
    if (ReadHistory(path, &c)) return true;
  return false;
}

std::string DrawEvalDuringTraining(const std::string& run_dir) {
  std::vector<HistoryCurve> curves;
  for (const auto& path : FindRunFiles(run_dir)) {
    HistoryCurve c;
    if (ReadHistory(path, &c)) curves.push_back(std::move(c));
  }
  LEXP_INPUT_CHECK(!curves.empty(), "no run in '" + run_dir +
                                        "' has an evaluation history (recipe key "
                                        "train.eval_every)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "eval_during_training";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per run (blocks separated by two blank lines), at its longest length of\n"
      << "# /train/eval_history; columns: step exact_match loss(nats per scored token)\n";
  for (const auto& c : curves) {
    dat << "# " << c.label << " length " << c.length << "\n";
    for (size_t i = 0; i < c.step.size(); ++i)
      dat << c.step[i] << " " << DatNumber(c.exact[i]) << " " << DatNumber(c.loss[i]) << "\n";
    dat << "\n\n";
  }
  dat << "# last block: one row per run: trainable_parameters exact_match_after_the_last_step "
         "run\n";
  for (const auto& c : curves)
    dat << c.trainable << " " << DatNumber(c.exact.back()) << " " << c.label << "\n";
  dat.close();
  const int n = static_cast<int>(curves.size());
  int64_t length = 0;
  for (const auto& c : curves) length = std::max(length, c.length);
  std::string s = "# Evaluation during training; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 1500,430 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n";
  s += SeriesStyles(n);
  s += fmt::format(
      "set multiplot layout 1,3 title 'evaluated at length n = {} during training (step 0: "
      "the weights training started from)'\n",
      length);
  std::string exact_plot, loss_plot;
  for (int k = 0; k < n; ++k) {
    const std::string sep = k ? ", " : "";
    exact_plot += fmt::format("{}'{}.dat' index {} using 1:2 with linespoints ls {} title {}", sep,
                              name, k, k + 1, Quote(curves[k].label));
    loss_plot += fmt::format("{}'{}.dat' index {} using 1:3 with linespoints ls {} notitle", sep,
                             name, k, k + 1);
  }
  s += "set xlabel 'training steps'\nset ylabel 'exact match'\nset yrange [0:1.05]\n";
  s += KeyPlacement(n);
  s += "set title 'exact match (passkey: retrieval accuracy)'\nplot " + exact_plot + "\n";
  s += "set ylabel 'loss (nats per scored token)'\nset autoscale y\nunset key\n";
  s += "set title 'loss'\nplot " + loss_plot + "\n";
  s += "set xlabel 'trainable parameters'\nset logscale x\nset ylabel 'exact match after the "
       "last step'\nset yrange [0:1.05]\nset offsets graph 0.08, graph 0.08, 0, 0\n";
  s += fmt::format(
      "set title 'what each run trained'\nplot '{0}.dat' index {1} using 1:2 with points pt 7 ps "
      "1.5 lc rgb '#1f77b4' notitle, '{0}.dat' index {1} using 1:2:(stringcolumn(3)) with labels "
      "offset 0,1 notitle\n",
      name, n);
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawEvalDuringTraining);
}
#endif
