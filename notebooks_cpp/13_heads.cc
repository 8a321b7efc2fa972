// Figure 13: heads inside and beyond the training length: sink mass, local mass and positional
// share per head, and which part of the logits leaves its trained range (from /analysis/geometry
// of each run, written by lexp analyze). Usage: 13_heads RUN_DIR   (writes
// RUN_DIR/figures/heads.{png,gp,dat})
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

std::string DrawHeads(const std::string& run_dir) {
  struct Run {
    std::string label;
    int train_length = 0, longest = 0;
    std::vector<double> sink_in, sink_out, share_in, share_out, local_in, local_out;  // per head
    std::vector<int64_t> class_in, class_out;
    std::vector<double> lengths, out_logit, out_pos, out_content;  // per probe length
  };
  std::vector<Run> runs;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    const auto& root = r.root();
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("geometry")) continue;
    const h5::Group geo = root.OpenGroup("analysis").OpenGroup("geometry");
    std::string train, longest;
    if (!GeometryEnds(geo, &train, &longest)) continue;
    Run run;
    run.label = RunLabel(root);
    run.train_length = static_cast<int>(geo.AttrInt("train_length"));
    run.longest = static_cast<int>(geo.OpenGroup(longest).AttrInt("length"));
    std::vector<uint64_t> lh;
    const h5::Group gi = geo.OpenGroup(train), go = geo.OpenGroup(longest);
    run.sink_in = gi.ReadDoublesShaped("head_sink_mass", {kAny, kAny}, &lh);
    run.sink_out = go.ReadDoublesShaped("head_sink_mass", lh);
    run.share_in = gi.ReadDoublesShaped("positional_share", lh);
    run.share_out = go.ReadDoublesShaped("positional_share", lh);
    run.local_in = gi.ReadDoublesShaped("head_local_mass", lh);
    run.local_out = go.ReadDoublesShaped("head_local_mass", lh);
    run.class_in = gi.ReadIntsShaped("head_class", lh);
    run.class_out = go.ReadIntsShaped("head_class", lh);
    std::vector<std::pair<int64_t, std::string>> lengths;
    for (const auto& child : geo.Children())
      if (child.rfind("length_", 0) == 0)
        lengths.emplace_back(geo.OpenGroup(child).AttrInt("length"), child);
    std::sort(lengths.begin(), lengths.end());
    for (const auto& [n, child] : lengths) {
      const h5::Group g = geo.OpenGroup(child);
      run.lengths.push_back(static_cast<double>(n));
      run.out_logit.push_back(
          MeanOverHeads(g.ReadDoublesShaped("out_of_range_logit", lh), lh[0] * lh[1], 1)[0]);
      run.out_pos.push_back(
          MeanOverHeads(g.ReadDoublesShaped("out_of_range_positional", lh), lh[0] * lh[1], 1)[0]);
      run.out_content.push_back(
          MeanOverHeads(g.ReadDoublesShaped("out_of_range_content", lh), lh[0] * lh[1], 1)[0]);
    }
    runs.push_back(std::move(run));
  }
  LEXP_INPUT_CHECK(!runs.empty(), "no run in '" + run_dir +
                                      "' has /analysis/geometry at the training length and beyond "
                                      "it (lexp analyze, probe lengths past training)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "heads";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per run, one line per head (layer-major): head index, sink mass at the "
         "training length, at the longest probe, positional share at both, local mass at both, "
         "class at both (0 sink, 1 local, 2 content, 3 global); then one block per run over its "
         "probe lengths: length, fraction of logits / positional parts / content parts outside "
         "their range at the training length (mean over heads)\n";
  const size_t R = runs.size();
  std::string p1, p2, p3, p4;
  for (size_t k = 0; k < R; ++k) {
    const Run& run = runs[k];
    dat << "# " << run.label << " heads (training length " << run.train_length << ", longest "
        << run.longest << ")\n";
    for (size_t h = 0; h < run.sink_in.size(); ++h)
      dat << h << " " << DatNumber(run.sink_in[h]) << " " << DatNumber(run.sink_out[h]) << " "
          << DatNumber(run.share_in[h]) << " " << DatNumber(run.share_out[h]) << " "
          << DatNumber(run.local_in[h]) << " " << DatNumber(run.local_out[h]) << " "
          << run.class_in[h] << " " << run.class_out[h] << "\n";
    dat << "\n\n";
    const std::string sep = k ? ", " : "";
    p1 += fmt::format("{}'{}.dat' index {} using 2:3 with points ls {} ps 1.5 title '{} (n = {})'",
                      sep, name, k, k + 1, run.label, run.longest);
    p2 += fmt::format("{}'{}.dat' index {} using 6:7 with points ls {} ps 1.5 title '{}'", sep,
                      name, k, k + 1, run.label);
    p3 += fmt::format("{}'{}.dat' index {} using 4:5 with points ls {} ps 1.5 title '{}'", sep,
                      name, k, k + 1, run.label);
  }
  for (size_t k = 0; k < R; ++k) {
    const Run& run = runs[k];
    dat << "# " << run.label << " out of range by probe length\n";
    for (size_t x = 0; x < run.lengths.size(); ++x)
      dat << run.lengths[x] << " " << DatNumber(run.out_logit[x]) << " "
          << DatNumber(run.out_pos[x]) << " " << DatNumber(run.out_content[x]) << "\n";
    dat << "\n\n";
    p4 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:2 with linespoints ls {3} title '{4}: logit', '{1}.dat' "
        "index {2} using 1:3 with linespoints ls {3} dt 2 pt 6 title '{4}: positional part', "
        "'{1}.dat' index {2} using 1:4 with linespoints ls {3} dt 3 pt 8 title '{4}: content part'",
        k ? ", " : "", name, R + k, k + 1, run.label);
  }
  dat.close();
  std::string s = "# Heads inside and beyond the training length; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 1300,1000 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n" + SeriesStyles(static_cast<int>(R));
  s += "set multiplot layout 2,2 title 'heads at the training length (x) and at the longest probe "
       "(y); one point per head'\n";
  s += "set grid\n" + KeyPlacement(static_cast<int>(R));
  s += "set xrange [0:1]\nset yrange [0:1]\nset size ratio -1\n";
  s += "set xlabel 'sink mass at the training length'\nset ylabel 'sink mass beyond it'\n";
  s += "set title 'attention on the first token (>= 0.5: a sink head)'\nplot " + p1 +
       ", x with lines dt 3 lc rgb 'gray50' notitle\n";
  s += "set xlabel 'local mass at the training length'\nset ylabel 'local mass beyond it'\n";
  s += "set title 'attention within the local window (>= 0.5: a local head)'\nplot " + p2 +
       ", x with lines dt 3 lc rgb 'gray50' notitle\n";
  s += "set xlabel 'positional share at the training length'\nset ylabel 'positional share beyond "
       "it'\n";
  s += "set title 'logit variance explained by distance (< 0.5: content-driven)'\nplot " + p3 +
       ", x with lines dt 3 lc rgb 'gray50' notitle\n";
  s += "set size noratio\nset autoscale\nset yrange [0:1]\nset logscale x 2\n";
  s += "set xlabel 'probe length n (log scale)'\nset ylabel 'fraction outside the trained range'\n";
  s += "set title 'which part of the logit leaves its trained range (mean over heads)'\nplot " +
       p4 + "\n";
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) { return lexp::FigureProgramMain(argc, argv, lexp::DrawHeads); }
#endif
