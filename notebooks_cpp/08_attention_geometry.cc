// Figure 08: attention geometry of a run directory (from each run's /analysis/geometry, written by
// `lexp analyze` and at the end of training): logit running max over distance (LM-Infinite),
// entropy against the number of visible keys with the uniform ln n, the mean attended distance and
// the empirical attention expectation on the longest probe; the JS divergence against NoPE and the
// resolution of the expectation over the probe lengths.
// Usage: 08_attention_geometry RUN_DIR   (writes RUN_DIR/figures/attention_geometry.{png,gp,dat})
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

namespace {

// The longest probe of each run's /analysis/geometry, averaged over layers and heads.
struct GeometryCurves {
  std::string encoding;
  int length = 0, train_max_length = 0, train_tokens = 0;  // train_tokens: 0 when unknown
  int input_tokens = 0;  // of the longest probe: where the input ends (0 when unknown)
  std::vector<double> running_max, entropy, visible, distance;  // [T]
  std::vector<double> expectation;                              // [T] mean logit by distance
  // Per probe length (ascending; probe_tokens: its model sequence in tokens, the figure's unit):
  // mean over layers and heads of the JS divergence of each head and
  // its reference head matched one to one (js_matched; js_best in older files)
  // against the reference (NaN without one), of the resolution over the training window and over
  // every distance (convention A), and a flat curve's resolution over every distance.
  std::vector<double> probe_length, probe_tokens, js, resolution_window, resolution,
      resolution_flat;
  // From /analysis/expectation when present: the same resolutions per evaluation length (and its
  // sequence in tokens, from /eval; NaN where /eval has no such length).
  std::vector<double> eval_length, eval_tokens, eval_resolution_window, eval_resolution, eval_flat;
};

// /analysis/geometry as this lexp writes it (LM-Infinite's last-query bound in its length groups).
bool HasCurrentGeometry(const h5::Group& geo) {
  for (const auto& child : geo.Children())
    if (child.rfind("length_", 0) == 0 && geo.OpenGroup(child).Has("logit_bound_last_query"))
      return true;
  return false;
}

std::vector<GeometryCurves> ReadGeometry(const std::string& run_dir) {
  std::vector<GeometryCurves> out;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    const auto& root = r.root();
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has("geometry")) continue;
    const h5::Group geo = root.OpenGroup("analysis").OpenGroup("geometry");
    GeometryCurves c;
    c.encoding = RunLabel(root);
    c.train_max_length = static_cast<int>(root.AttrInt("train_max_length"));
    if (geo.HasAttr("train_tokens")) c.train_tokens = static_cast<int>(geo.AttrInt("train_tokens"));
    std::vector<std::pair<int64_t, std::string>> lengths;  // ascending
    for (const auto& child : geo.Children())
      if (child.rfind("length_", 0) == 0)
        lengths.emplace_back(geo.OpenGroup(child).AttrInt("length"), child);
    if (lengths.empty()) continue;
    if (!HasCurrentGeometry(geo)) {
      // Analysed by a lexp before the geometry was measured over every probe sequence.
      std::fprintf(stderr,
                   "attention_geometry: '%s' left out: its /analysis/geometry is from an earlier "
                   "lexp (run lexp analyze on it)\n",
                   path.c_str());
      continue;
    }
    std::sort(lengths.begin(), lengths.end());
    const std::string best = lengths.back().second;
    for (const auto& [n, child] : lengths) {
      const h5::Group pg = geo.OpenGroup(child);
      std::vector<uint64_t> lh;  // [layer, head]
      const auto res = pg.ReadDoublesShaped("resolution", {kAny, kAny}, &lh);
      const auto win = pg.ReadDoublesShaped("resolution_train_window", lh);
      c.probe_length.push_back(static_cast<double>(n));
      c.probe_tokens.push_back(static_cast<double>(pg.Dims("logit_bound_last_query").back()));
      c.resolution.push_back(MeanOverHeads(res, res.size(), 1)[0]);
      c.resolution_window.push_back(MeanOverHeads(win, win.size(), 1)[0]);
      c.resolution_flat.push_back(pg.AttrDouble("resolution_flat"));
      // Heads matched one to one (files of this version), else each head's closest.
      const char* js_name = pg.Has("js_matched") ? "js_matched" : "js_best";
      if (pg.Has(js_name)) {
        const auto js = pg.ReadDoublesShaped(js_name, lh);
        c.js.push_back(MeanOverHeads(js, js.size(), 1)[0]);
      } else {
        c.js.push_back(std::numeric_limits<double>::quiet_NaN());
      }
    }
    const h5::Group an = root.OpenGroup("analysis");
    if (an.Has("expectation") && an.OpenGroup("expectation").Has("resolution_train_window")) {
      const h5::Group ex = an.OpenGroup("expectation");
      std::vector<uint64_t> rd;  // [length, layer, head]
      const auto res = ex.ReadDoublesShaped("resolution", {kAny, kAny, kAny}, &rd);
      const auto win = ex.ReadDoublesShaped("resolution_train_window", rd);
      c.eval_flat = ex.ReadDoublesShaped("resolution_flat", {rd[0]});
      // Task length -> tokens, from the evaluation rows.
      std::map<int64_t, int64_t> tokens_of;
      if (root.Has("eval") && root.OpenGroup("eval").Has("sequence_length")) {
        const h5::Group ev = root.OpenGroup("eval");
        std::vector<uint64_t> ed;
        const auto n_eval = ev.ReadIntsShaped("length", {kAny}, &ed);
        const auto t_eval = ev.ReadIntsShaped("sequence_length", ed);
        for (size_t i = 0; i < n_eval.size(); ++i) tokens_of[n_eval[i]] = t_eval[i];
      }
      for (auto v : ex.ReadIntsShaped("length", {rd[0]})) {
        c.eval_length.push_back(static_cast<double>(v));
        c.eval_tokens.push_back(tokens_of.count(v) ? static_cast<double>(tokens_of.at(v))
                                                   : std::numeric_limits<double>::quiet_NaN());
      }
      for (uint64_t x = 0; x < rd[0]; ++x) {
        const uint64_t k = rd[1] * rd[2];
        c.eval_resolution.push_back(MeanOverHeads(
            std::vector<double>(res.begin() + x * k, res.begin() + (x + 1) * k), k, 1)[0]);
        c.eval_resolution_window.push_back(MeanOverHeads(
            std::vector<double>(win.begin() + x * k, win.begin() + (x + 1) * k), k, 1)[0]);
      }
    }
    const h5::Group g = geo.OpenGroup(best);
    c.length = static_cast<int>(g.AttrInt("length"));
    if (g.HasAttr("input_tokens")) c.input_tokens = static_cast<int>(g.AttrInt("input_tokens"));
    std::vector<uint64_t> dims;  // [layer, head, query or distance]
    const auto run = g.ReadDoublesShaped("logit_bound_last_query", {kAny, kAny, kAny}, &dims);
    const auto ent = g.ReadDoublesShaped("entropy_by_query", dims);
    const auto dist = g.ReadDoublesShaped("attended_distance_mean", dims);
    c.visible = g.ReadDoublesShaped("visible_keys", {dims[2]});
    const uint64_t LH = dims[0] * dims[1], T = dims[2];
    c.expectation = MeanOverHeads(g.ReadDoublesShaped("logit_mean_by_distance", dims), LH, T);
    c.running_max.assign(T, 0.0);
    c.entropy.assign(T, 0.0);
    c.distance.assign(T, 0.0);
    for (uint64_t lh = 0; lh < LH; ++lh)
      for (uint64_t i = 0; i < T; ++i) {
        c.running_max[i] += run[lh * T + i] / LH;
        c.entropy[i] += ent[lh * T + i] / LH;
        c.distance[i] += dist[lh * T + i] / LH;
      }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::string DrawAttentionGeometry(const std::string& run_dir) {
  const std::vector<GeometryCurves> runs = ReadGeometry(run_dir);
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/geometry (lexp analyze)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "attention_geometry";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per run (longest probe, mean over layers and heads): index i (distance for "
         "columns 2 and 6, query for columns 3-5), LM-Infinite's logit bound (running max of the "
         "last query's logits, mean over probe sequences), entropy (nats), visible keys, mean "
         "attended distance (tokens), mean logit at distance i; then one block per run over its "
         "probe lengths: probe sequence length (tokens), JS divergence of each head and its one-to-one matched reference "
         "head, mean over heads (nats, NaN: "
         "none), resolution over the training window, resolution over every distance, a flat "
         "curve's resolution over every distance\n";
  std::string p1, p2, p3, p4, p5, p6;
  // Encoder layout: every query sees every key, so entropy against visible keys is one column.
  bool every_key = true;
  for (const auto& c : runs)
    every_key = every_key && !c.visible.empty() &&
                std::all_of(c.visible.begin(), c.visible.end(),
                            [&](double v) { return v == c.visible.front(); });
  int block = 0, N = 0, train_tokens = 0;
  for (const auto& c : runs) {
    N = std::max(N, c.train_max_length);
    train_tokens = std::max(train_tokens, c.train_tokens);
    dat << "# " << c.encoding << " probe length " << c.length << "\n";
    for (size_t i = 0; i < c.running_max.size(); ++i)
      dat << i << " " << c.running_max[i] << " " << c.entropy[i] << " " << c.visible[i] << " "
          << c.distance[i] << " " << c.expectation[i] << "\n";
    dat << "\n\n";
    const std::string sep = block ? ", " : "";
    p1 += fmt::format("{}'{}.dat' index {} using 1:2 with lines ls {} title '{}'", sep, name, block,
                      block + 1, c.encoding);
    p2 += fmt::format("{}'{}.dat' index {} using {}:3 with lines ls {} title '{}'", sep, name,
                      block, every_key ? 1 : 4, block + 1, c.encoding);
    p3 += fmt::format("{}'{}.dat' index {} using 1:5 with lines ls {} title '{}'", sep, name, block,
                      block + 1, c.encoding);
    p4 += fmt::format("{}'{}.dat' index {} using 1:6 with lines ls {} title '{}'", sep, name, block,
                      block + 1, c.encoding);
    ++block;
  }
  for (size_t r = 0; r < runs.size(); ++r) {
    const auto& c = runs[r];
    dat << "# " << c.encoding << " per probe length\n";
    for (size_t i = 0; i < c.probe_length.size(); ++i)
      dat << c.probe_tokens[i] << " " << c.js[i] << " " << c.resolution_window[i] << " "
          << c.resolution[i] << " " << c.resolution_flat[i] << "\n";
    dat << "\n\n";
    const std::string sep = r ? ", " : "";
    p5 += fmt::format("{}'{}.dat' index {} using 1:2 with linespoints ls {} title '{}'", sep, name,
                      block + r, r + 1, c.encoding);
    // Every evaluation length when /analysis/expectation has them, else the probe lengths.
    const size_t idx = c.eval_length.empty() ? block + r : block + runs.size() + r;
    p6 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:3 with linespoints ls {3} title '{4}', "
        "'{1}.dat' index {2} using 1:4 with lines ls {3} dt 2 notitle",
        sep, name, idx, r + 1, c.encoding);
  }
  p6 += fmt::format(
      ", NaN with lines dt 2 lw 2 lc rgb 'gray40' title 'dashed: every distance', "
      "'{}.dat' index {} using 1:5 with lines dt 3 lw 2 lc rgb 'black' title 'flat (1/K^2)'",
      name, runs[0].eval_length.empty() ? block : block + runs.size());
  // Resolution at every evaluation length (/analysis/expectation), one block per run (may be
  // empty).
  for (const auto& c : runs) {
    dat << "# " << c.encoding
        << " per evaluation length: sequence length (tokens), (unused), resolution over the "
           "training window, over every distance, a flat curve's\n";
    // gnuplot does not count a block without a line: a run without them keeps its index (else
    // the runs after it would be drawn from their neighbours' blocks).
    if (c.eval_length.empty()) dat << "NaN NaN NaN NaN NaN\n";
    for (size_t i = 0; i < c.eval_length.size(); ++i)
      dat << DatNumber(c.eval_tokens[i]) << " NaN " << c.eval_resolution_window[i] << " "
          << c.eval_resolution[i] << " " << c.eval_flat[i] << "\n";
    dat << "\n\n";
  }
  dat.close();
  p2 += fmt::format(
      ", '{}.dat' index 0 using {}:(log($4)) with lines dt 3 lw 2 lc rgb 'black' "
      "title 'uniform, ln(keys)'",
      name, every_key ? 1 : 4);
  std::string s =
      "# Attention geometry of the longest probe (lexp analyze); data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size {},900 font 'Sans,10' noenhanced\n",
                   block > 6 ? 1800 : 1500);
  s += "set output '" + name + ".png'\n" + SeriesStyles(block);
  // Every length of the figure in tokens of the model's sequence (one unit per figure).
  s += fmt::format(
      "set multiplot layout 2,3 title 'attention of trained runs (top and bottom left: the "
      "longest probe; trained on {}; mean over layers and heads)'\n",
      train_tokens > 0 ? fmt::format("sequences of up to {} tokens", train_tokens)
                       : fmt::format("task lengths up to n = {}", N));
  s += "set grid\n" + KeyPlacement(block);
  if (train_tokens > 0)
    s += fmt::format(
        "set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lw 1.5 lc rgb 'gray30'\n"
        "set label 1 'longest training sequence' at {0},graph 0.03 left offset 0.5,0 tc rgb "
        "'gray30'\n",
        train_tokens - 1);
  s += "set xlabel 'distance from the last query (tokens)'\nset ylabel 'running max of its "
       "logits'\n";
  s += "set title 'logit explosion (LM-Infinite: last query, mean over sequences)'\nplot " + p1 +
       "\n";
  // Where the input ends, on the panels indexed by query (runs of a directory share a task).
  const std::string input_mark =
      runs[0].input_tokens > 0
          ? fmt::format(
                "set arrow 3 from {0},graph 0 to {0},graph 1 nohead dt 4 lc rgb "
                "'gray50'\nset label 3 'input | answer' at {0},graph 0.12 right offset "
                "-0.5,0 tc rgb 'gray50'\n",
                runs[0].input_tokens - 0.5)
          : "";
  if (every_key) {  // encoder layout: every query sees all T keys, so plot against the query
    s += input_mark;
    s += "set xlabel 'query position (tokens; every query sees all keys)'\nset ylabel 'attention "
         "entropy (nats)'\n";
    s += "set title 'entropy by query'\nplot " + p2 + "\n";
  } else {
    s += "set xlabel 'keys the query may see'\nset ylabel 'attention entropy (nats)'\n";
    s += "set title 'entropy vs visible keys'\nplot " + p2 + "\n";
    s += input_mark;
  }
  s += "set xlabel 'query position (tokens)'\nset ylabel 'mean attended distance (tokens)'\n";
  s += "set title 'where attention goes'\nplot " + p3 + "\n";
  s += "unset arrow 3\nunset label 3\n";
  s += "set xlabel 'distance i - j (tokens)'\nset ylabel 'mean logit at that distance'\n";
  s += "set title 'empirical attention expectation (xPos paper)'\nplot " + p4 + "\n";
  s += "unset arrow 1\nunset label 1\nset logscale x 2\n";
  if (train_tokens > 0)
    s += fmt::format(
        "set arrow 2 from {0},graph 0 to {0},graph 1 nohead dt 2 lw 1.5 lc rgb 'gray30'\n",
        train_tokens);
  s += "set xlabel 'probe sequence length (tokens, log scale)'\nset ylabel 'JS divergence, heads "
       "matched one to one (nats)'\n";
  s += "set title 'attention rows against the NoPE run (no curve: no reference)'\n";
  // No run with a reference (no NoPE run beside them): an empty frame that says so (gnuplot
  // reports a plot of undefined points as an error).
  bool any_js = false;
  for (const auto& c : runs)
    for (double v : c.js) any_js = any_js || std::isfinite(v);
  if (any_js)
    s += "set yrange [0:*]\nplot " + p5 + "\n";
  else
    s += "set yrange [0:1]\nset label 5 'no NoPE run in this directory: no reference' at graph "
         "0.5,0.5 center\nplot [1:2] 2 notitle\nunset label 5\n";
  s += "set ylabel 'attention resolution (convention A)'\nset yrange [*:*]\n";
  s += "set xlabel 'sequence length (tokens, log scale)'\n";
  s += "set title 'resolution of the expectation over the training window (solid)'\nplot " + p6 +
       "\n";
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawAttentionGeometry);
}
#endif
