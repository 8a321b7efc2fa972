// Figure 19: diagnosis (lexp diagnose): for each run of a directory with /diagnosis, the share of
// the loss gap beyond N that each intervention closes against the task length, with its 95%
// interval (y = 1: the gap closed; y = 0: no effect; below: widened), and the gap itself in nats.
// Usage: 19_diagnosis RUN_DIR
// (writes RUN_DIR/figures/diagnosis.{png,gp,dat})
// Compiled twice: into the figure library that `lexp` draws from, and with LEXP_FIGURE_PROGRAM as
// this program on its own; copy the file to make a figure of your own.
#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_data.h"
#include "notebooks_cpp/figure_kit.h"
#include "notebooks_cpp/figures.h"

namespace lexp {

namespace {

struct DiagnosisCurves {
  std::string label, task;
  int64_t train_length = 0, reference_length = 0;
  std::vector<std::string> interventions;
  std::vector<int64_t> length;
  std::vector<double> gap, gap_lo, gap_hi, share, share_lo, share_hi;  // share*: [intervention, length]
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string x;
  while (std::getline(in, x, ','))
    if (!x.empty()) out.push_back(x);
  return out;
}

bool ReadDiagnosis(const std::string& path, DiagnosisCurves* out) {
  h5::Reader r(path);
  const h5::Group& root = r.root();
  if (!root.Has("diagnosis")) return false;
  const h5::Group g = root.OpenGroup("diagnosis");
  out->label = RunLabel(root);
  out->train_length = g.AttrInt("train_length");
  out->reference_length = g.AttrInt("reference_length");
  out->interventions = Split(g.AttrString("interventions"));
  out->length = g.ReadInts("length");
  const uint64_t I = out->interventions.size(), L = out->length.size();
  out->gap = g.ReadDoublesShaped("gap", {L});
  out->gap_lo = g.ReadDoublesShaped("gap_lo", {L});
  out->gap_hi = g.ReadDoublesShaped("gap_hi", {L});
  if (I > 0) {
    out->share = g.ReadDoublesShaped("share", {I, L});
    out->share_lo = g.ReadDoublesShaped("share_lo", {I, L});
    out->share_hi = g.ReadDoublesShaped("share_hi", {I, L});
  }
  return true;
}

}  // namespace

bool HasDiagnosis(const std::string& run_dir) {
  DiagnosisCurves c;
  for (const auto& path : FindRunFiles(run_dir))
    if (ReadDiagnosis(path, &c)) return true;
  return false;
}

std::string DrawDiagnosis(const std::string& run_dir) {
  std::vector<DiagnosisCurves> runs;
  for (const auto& path : FindRunFiles(run_dir)) {
    DiagnosisCurves c;
    if (ReadDiagnosis(path, &c)) runs.push_back(std::move(c));
  }
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /diagnosis (lexp diagnose RUN_FILE)");
  const std::filesystem::path dir = FigureDir(run_dir);
  const std::string name = "diagnosis";
  std::ofstream dat(DatFile(dir, name));
  dat << "# per run: one block per intervention (length share share_lo share_hi), then one block\n"
      << "# of the gap (length gap_nats gap_lo gap_hi); blocks separated by two blank lines\n";
  for (const auto& c : runs) {
    const size_t L = c.length.size();
    for (size_t i = 0; i < c.interventions.size(); ++i) {
      dat << "# " << c.label << " " << c.interventions[i] << "\n";
      for (size_t j = 0; j < L; ++j)
        dat << c.length[j] << " " << DatNumber(c.share[i * L + j]) << " "
            << DatNumber(c.share_lo[i * L + j]) << " " << DatNumber(c.share_hi[i * L + j]) << "\n";
      dat << "\n\n";
    }
    dat << "# " << c.label << " gap\n";
    for (size_t j = 0; j < L; ++j)
      dat << c.length[j] << " " << DatNumber(c.gap[j]) << " " << DatNumber(c.gap_lo[j]) << " "
          << DatNumber(c.gap_hi[j]) << "\n";
    dat << "\n\n";
  }
  dat.close();
  const int panels = static_cast<int>(runs.size());
  std::string s = "# Diagnosis by intervention; data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size 1200,{} font 'Sans,10' noenhanced\n", 380 * panels);
  s += "set output '" + name + ".png'\n";
  s += fmt::format("set multiplot layout {},2 title {}\n", panels,
                   Quote("lexp diagnose: the share of the loss gap beyond N each intervention "
                         "closes (95% intervals), on the sequences /eval scored"));
  int block = 0;
  for (const auto& c : runs) {
    const int I = static_cast<int>(c.interventions.size());
    s += SeriesStyles(std::max(I, 1));
    s += "set logscale x 2\nset xlabel 'task length n'\n";
    s += "set ylabel 'share of the gap closed (1 = closed, < 0 = widened)'\nset yrange [-1:1.5]\n";
    s += "set xzeroaxis lt 1 lc rgb '#888888'\n";
    s += "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb '#888888'\n";
    s += KeyPlacement(I);
    s += "set title " +
         Quote(fmt::format("{}: share closed (values outside -1..1.5 clipped)", c.label)) + "\n";
    std::string plot;
    for (int i = 0; i < I; ++i)
      plot += fmt::format(
          "{}'{}.dat' index {} using 1:2:3:4 with yerrorlines ls {} title '{}'", i ? ", " : "",
          name, block + i, i + 1, c.interventions[i]);
    s += I > 0 ? "plot " + plot + "\n" : "set label 1 'no intervention applies' at graph 0.3, 0.5\nplot NaN notitle\nunset label 1\n";
    s += "unset arrow 1\nunset xzeroaxis\n";
    block += I;
    s += "set ylabel 'loss gap (nats per graded token)'\nset autoscale y\nunset key\n";
    s += "set title " +
         Quote(fmt::format("{}: gap against length {} (trained on task lengths <= {})", c.label,
                           c.reference_length, c.train_length)) +
         "\n";
    // A loss that is not finite at every diagnosed length has no gap to draw: the panel says so
    // (gnuplot reports a plot of undefined points as an error).
    bool any_gap = false;
    for (double g : c.gap) any_gap = any_gap || std::isfinite(g);
    if (any_gap)
      s += fmt::format("plot '{}.dat' index {} using 1:2:3:4 with yerrorlines ls 1 notitle\n",
                       name, block);
    else
      s += "set yrange [0:1]\nset label 2 'no finite loss gap at these lengths' at graph 0.5,0.5 "
           "center\nplot [1:2] 2 notitle\nunset label 2\n";
    block += 1;
    s += "unset logscale x\n";
  }
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) { return lexp::FigureProgramMain(argc, argv, lexp::DrawDiagnosis); }
#endif
