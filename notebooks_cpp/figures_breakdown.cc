// Figures of the analyses that locate a failure beyond the training length: scores by position and
// the last-window decomposition (/analysis/position_scores), and heads (/analysis/geometry: sink
// and local mass, positional share and what leaves the trained range, inside and beyond training).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_kit.h"
#include "notebooks_cpp/figures.h"

namespace fs = std::filesystem;

namespace lexp {
namespace {

constexpr uint64_t kAny = h5::Group::kAnySize;

// The geometry group of the longest probe length, and that of the training length.
bool GeometryEnds(const h5::Group& geo, std::string* train, std::string* longest) {
  int64_t best = -1;
  const int64_t N = geo.HasAttr("train_length") ? geo.AttrInt("train_length") : -1;
  for (const auto& child : geo.Children()) {
    if (child.rfind("length_", 0) != 0) continue;
    const int64_t n = geo.OpenGroup(child).AttrInt("length");
    if (n == N) *train = child;
    if (n > best) {
      best = n;
      *longest = child;
    }
  }
  return !train->empty() && !longest->empty() && *train != *longest &&
         geo.OpenGroup(*longest).Has("head_class");
}

}  // namespace

bool HasHeadsData(const h5::Group& geometry) {
  std::string train, longest;
  return GeometryEnds(geometry, &train, &longest);
}

std::string DrawPositionScores(const std::string& run_dir) {
  struct Run {
    std::string label;
    int window = 0, train_tokens = 0, longest = 0;
    std::vector<double> loss_at_longest;  // by position
    std::vector<double> lengths, dilution, unseen, full, last, only;
  };
  std::vector<Run> runs;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    const auto& root = r.root();
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("position_scores")) continue;
    const h5::Group g = root.OpenGroup("analysis").OpenGroup("position_scores");
    Run run;
    run.label = RunLabel(root);
    run.window = static_cast<int>(g.AttrInt("window"));
    run.train_tokens = static_cast<int>(g.AttrInt("train_tokens"));
    std::vector<uint64_t> em;  // [length, position]
    const auto by_pos = g.ReadDoublesShaped("loss_by_position", {kAny, kAny}, &em);
    const auto n = g.ReadIntsShaped("length", {em[0]});
    LEXP_INPUT_CHECK(em[0] > 0, "file '" + path + "': /analysis/position_scores has no length");
    const auto loss = g.ReadDoublesShaped("loss", {em[0]});
    const auto last = g.ReadDoublesShaped("last_window_loss", {em[0]});
    const auto only = g.ReadDoublesShaped("window_only_loss", {em[0]});
    const auto shifted = g.ReadDoublesShaped("window_shifted_loss", {em[0]});
    const auto T = g.ReadIntsShaped("sequence_length", {em[0]});
    run.longest = static_cast<int>(n.back());
    run.loss_at_longest.assign(by_pos.end() - static_cast<long>(em[1]),
                               by_pos.end() - static_cast<long>(em[1] - T.back()));
    for (uint64_t x = 0; x < em[0]; ++x) {
      run.lengths.push_back(static_cast<double>(n[x]));
      run.full.push_back(loss[x]);
      run.last.push_back(last[x]);
      run.only.push_back(only[x]);
      run.dilution.push_back(last[x] - shifted[x]);
      run.unseen.push_back(shifted[x] - only[x]);
    }
    runs.push_back(std::move(run));
  }
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/position_scores (lexp analyze)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "position_scores";
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# one block per run at its longest evaluation length: position t (tokens), loss of the "
         "target scored there (nats, NaN: none scored); then one block per run over the "
         "evaluation lengths: length n, loss, last-window loss with the whole sequence, "
         "last window alone from position 0, extra keys (last window with the sequence - alone "
         "at its own positions), unseen positions (alone at its own positions - alone from 0)\n";
  std::string p1, p2, p3;
  const size_t R = runs.size();
  for (size_t k = 0; k < R; ++k) {
    dat << "# " << runs[k].label << " n = " << runs[k].longest << "\n";
    for (size_t t = 0; t < runs[k].loss_at_longest.size(); ++t)
      dat << t << " " << DatNumber(runs[k].loss_at_longest[t]) << "\n";
    dat << "\n\n";
    p1 += fmt::format("{}'{}.dat' index {} using 1:2 with lines ls {} title '{} (n = {})'",
                      k ? ", " : "", name, k, k + 1, runs[k].label, runs[k].longest);
  }
  for (size_t k = 0; k < R; ++k) {
    const Run& run = runs[k];
    dat << "# " << run.label << " by length\n";
    for (size_t x = 0; x < run.lengths.size(); ++x)
      dat << run.lengths[x] << " " << DatNumber(run.full[x]) << " " << DatNumber(run.last[x]) << " "
          << DatNumber(run.only[x]) << " " << DatNumber(run.dilution[x]) << " "
          << DatNumber(run.unseen[x]) << "\n";
    dat << "\n\n";
    p2 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:5 with linespoints ls {3} title '{4}: extra keys', "
        "'{1}.dat' index {2} using 1:6 with linespoints ls {3} dt 2 pt 6 title '{4}: unseen "
        "positions'",
        k ? ", " : "", name, R + k, k + 1, run.label);
    p3 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:3 with linespoints ls {3} title '{4}: last window, whole "
        "sequence', '{1}.dat' index {2} using 1:4 with lines ls {3} dt 3 title '{4}: last window "
        "alone'",
        k ? ", " : "", name, R + k, k + 1, run.label);
  }
  dat.close();
  const int T0 = runs[0].train_tokens;
  std::string s =
      "# Scores by position and the last-window decomposition; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 1650,520 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n" + SeriesStyles(static_cast<int>(R));
  s += fmt::format(
      "set multiplot layout 1,3 title 'where the loss goes beyond training (teacher forced; "
      "window = the {} tokens of a training sequence)'\n",
      runs[0].window);
  s += "set grid\n" + KeyPlacement(static_cast<int>(R), "top left");
  s += fmt::format(
      "set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lw 1.5 lc rgb 'gray30'\n", T0);
  s += "set xlabel 'position t in the sequence (tokens)'\nset ylabel 'loss (nats per target)'\n";
  s += "set title 'loss by absolute position (dashed: end of a training sequence)'\nplot " + p1 +
       "\n";
  s += "unset arrow 1\nset logscale x 2\nset xlabel 'evaluation length n (log scale)'\n";
  s += "set ylabel 'loss difference (nats per target)'\n";
  s += "set title 'last window: cost of the extra keys and of the unseen positions'\nplot " + p2 +
       "\n";
  s += "set ylabel 'loss (nats per target)'\n";
  s += "set title 'last window with the whole sequence vs alone'\nplot " + p3 + "\n";
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

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
  std::ofstream dat(dir / (name + ".dat"));
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
  s += "set grid\n" + KeyPlacement(static_cast<int>(R), "top left");
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

std::string DrawPositionProbes(const std::string& run_dir) {
  struct Run {
    std::string label;
    int train_tokens = 0, long_tokens = 0;
    std::vector<double> rmse_in, rmse_out, acc, ood_in, ood_out;
  };
  std::vector<Run> runs;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    const auto& root = r.root();
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("position_probes")) continue;
    const h5::Group g = root.OpenGroup("analysis").OpenGroup("position_probes");
    Run run;
    run.label = RunLabel(root);
    run.train_tokens = static_cast<int>(g.AttrInt("train_tokens"));
    run.long_tokens = static_cast<int>(g.AttrInt("long_tokens"));
    std::vector<uint64_t> k;
    run.rmse_in = g.ReadDoublesShaped("index_rmse_in_range", {kAny}, &k);
    run.rmse_out = g.ReadDoublesShaped("index_rmse_beyond", k);
    run.acc = g.ReadDoublesShaped("beyond_accuracy", k);
    run.ood_in = g.ReadDoublesShaped("ood_in_range", k);
    run.ood_out = g.ReadDoublesShaped("ood_beyond", k);
    runs.push_back(std::move(run));
  }
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/position_probes (lexp analyze)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "position_probes";
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# one block per run, one line per residual stream (0: embedded input, L: last block's "
         "output): index, RMSE of the position probe in range and beyond (tokens), balanced "
         "accuracy of the beyond-training classifier, out-of-distribution fraction in range and "
         "beyond\n";
  std::string p1, p2, p3;
  for (size_t k = 0; k < runs.size(); ++k) {
    const Run& run = runs[k];
    dat << "# " << run.label << "\n";
    for (size_t l = 0; l < run.rmse_in.size(); ++l)
      dat << l << " " << DatNumber(run.rmse_in[l]) << " " << DatNumber(run.rmse_out[l]) << " "
          << DatNumber(run.acc[l]) << " " << DatNumber(run.ood_in[l]) << " "
          << DatNumber(run.ood_out[l]) << "\n";
    dat << "\n\n";
    const std::string sep = k ? ", " : "";
    p1 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:2 with linespoints ls {3} dt 2 title '{4}: in range', "
        "'{1}.dat' index {2} using 1:3 with linespoints ls {3} title '{4}: beyond'",
        sep, name, k, k + 1, run.label);
    p2 += fmt::format("{}'{}.dat' index {} using 1:4 with linespoints ls {} title '{}'", sep, name,
                      k, k + 1, run.label);
    p3 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:5 with linespoints ls {3} dt 2 title '{4}: in range', "
        "'{1}.dat' index {2} using 1:6 with linespoints ls {3} title '{4}: beyond'",
        sep, name, k, k + 1, run.label);
  }
  dat.close();
  std::string s = "# Linear probes for position in the hidden states; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 1650,520 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n" + SeriesStyles(static_cast<int>(runs.size()));
  s += fmt::format(
      "set multiplot layout 1,3 title 'position in the residual stream: probes fitted on {}-token "
      "sequences, tested on {}-token ones'\n",
      runs[0].train_tokens, runs[0].long_tokens);
  s += "set grid\n" + KeyPlacement(static_cast<int>(runs.size()), "top left");
  s += "set xlabel 'residual stream (0: embedded input)'\nset xtics 1\n";
  s += "set ylabel 'RMSE of the absolute index (tokens)'\n";
  s += "set title 'linear probe for the position t'\nplot " + p1 + "\n";
  s += "set ylabel 'balanced accuracy'\nset yrange [0.4:1]\n";
  s += "set title 'linear classifier: is t beyond the training length?'\nplot " + p2 +
       ", 0.5 with lines dt 3 lc rgb 'black' title 'chance'\n";
  s += "set ylabel 'fraction of states'\nset yrange [0:1]\n";
  s += "set title 'states outside the training distribution (99th percentile)'\nplot " + p3 +
       ", 0.01 with lines dt 3 lc rgb 'black' title 'expected in distribution'\n";
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

std::string DrawReceptiveField(const std::string& run_dir) {
  struct Run {
    std::string label;
    int train_tokens = 0, longest = 0;
    std::vector<double> share;  // at the longest length, by distance
    std::vector<double> lengths, c50, c90;
  };
  std::vector<Run> runs;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    const auto& root = r.root();
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("receptive_field")) continue;
    const h5::Group g = root.OpenGroup("analysis").OpenGroup("receptive_field");
    Run run;
    run.label = RunLabel(root);
    run.train_tokens = static_cast<int>(g.AttrInt("train_tokens"));
    std::vector<uint64_t> em;  // [length, distance]
    const auto share = g.ReadDoublesShaped("gradient_share", {kAny, kAny}, &em);
    LEXP_INPUT_CHECK(em[0] > 0, "file '" + path + "': /analysis/receptive_field has no length");
    const auto n = g.ReadIntsShaped("length", {em[0]});
    const auto T = g.ReadIntsShaped("sequence_length", {em[0]});
    run.c50 = g.ReadDoublesShaped("context_50", {em[0]});
    run.c90 = g.ReadDoublesShaped("context_90", {em[0]});
    for (auto v : n) run.lengths.push_back(static_cast<double>(v));
    run.longest = static_cast<int>(n.back());
    run.share.assign(share.end() - static_cast<long>(em[1]),
                     share.end() - static_cast<long>(em[1] - T.back()));
    runs.push_back(std::move(run));
  }
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/receptive_field (lexp analyze)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "receptive_field";
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# one block per run at its longest evaluation length: distance d from the last "
         "position (tokens), share of the input gradient there; then one block per run over the "
         "evaluation lengths: length, distance holding 50% and 90% of the gradient (tokens)\n";
  std::string p1, p2;
  const size_t R = runs.size();
  for (size_t k = 0; k < R; ++k) {
    dat << "# " << runs[k].label << " n = " << runs[k].longest << "\n";
    for (size_t d = 0; d < runs[k].share.size(); ++d)
      dat << d << " " << DatNumber(runs[k].share[d]) << "\n";
    dat << "\n\n";
    p1 += fmt::format("{}'{}.dat' index {} using 1:2 with lines ls {} title '{} (n = {})'",
                      k ? ", " : "", name, k, k + 1, runs[k].label, runs[k].longest);
  }
  for (size_t k = 0; k < R; ++k) {
    dat << "# " << runs[k].label << " by length\n";
    for (size_t x = 0; x < runs[k].lengths.size(); ++x)
      dat << runs[k].lengths[x] << " " << DatNumber(runs[k].c50[x]) << " "
          << DatNumber(runs[k].c90[x]) << "\n";
    dat << "\n\n";
    p2 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:2 with linespoints ls {3} dt 2 title '{4}: 50%', "
        "'{1}.dat' index {2} using 1:3 with linespoints ls {3} title '{4}: 90%'",
        k ? ", " : "", name, R + k, k + 1, runs[k].label);
  }
  dat.close();
  const int T0 = runs[0].train_tokens;
  std::string s = "# Gradient receptive field; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 1300,520 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n" + SeriesStyles(static_cast<int>(R));
  s += "set multiplot layout 1,2 title 'how far back the last output depends on its input "
       "(gradient of ln p(top token))'\n";
  s += "set grid\n" + KeyPlacement(static_cast<int>(R), "top right");
  s += fmt::format(
      "set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lw 1.5 lc rgb 'gray30'\n", T0);
  s += "set logscale y\nset xlabel 'distance d from the last position (tokens)'\n";
  s += "set ylabel 'share of the input gradient (log scale)'\n";
  s += "set title 'gradient by distance (dashed: a training sequence)'\nplot " + p1 + "\n";
  s += "unset logscale y\nunset arrow 1\nset logscale x 2\n";
  s += "set xlabel 'evaluation length n (log scale)'\nset ylabel 'effective context (tokens)'\n";
  s += fmt::format(
      "set title 'distance holding 50% / 90% of the gradient'\nplot {}, {} with lines "
      "dt 3 lc rgb 'black' title 'training sequence ({} tokens)'\n",
      p2, T0, T0);
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp
