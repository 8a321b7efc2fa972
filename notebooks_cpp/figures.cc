#include "notebooks_cpp/figures.h"

#include <fmt/core.h>
#include <fmt/ostream.h>
#include <gnuplot-iostream.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_kit.h"

namespace fs = std::filesystem;

namespace lexp {
namespace {

// A shape entry that matches any extent: the anchor dataset of a group fixes the others' shapes.
constexpr uint64_t kAny = h5::Group::kAnySize;

struct RunData {
  std::string encoding, state;
  int train_max_length = 0;
  std::vector<double> length, accuracy, exact;
  std::vector<double> accuracy_lo, accuracy_hi;  // Clopper-Pearson bounds (empty in old files)
  std::vector<double> depth, depth_exact;        // tasks with a depth axis: [length, depth]
  std::vector<double> loss;                      // nats per scored token, per length
  double entropy_rate = std::numeric_limits<double>::quiet_NaN();  // language-modelling sources
  double chance = std::numeric_limits<double>::quiet_NaN();  // token accuracy of a uniform guess
  std::vector<double> probe_length, entropy, log_visible, max_logit;
};

RunData ReadRun(const std::string& path) {
  h5::Reader r(path);
  RunData d;
  d.encoding = RunLabel(r.root());
  d.train_max_length = static_cast<int>(r.root().AttrInt("train_max_length"));
  d.state = r.root().OpenGroup("status").AttrString("state");
  if (r.root().Has("eval") && r.root().OpenGroup("eval").Has("length")) {
    h5::Group ev = r.root().OpenGroup("eval");
    std::vector<uint64_t> got;
    for (auto v : ev.ReadIntsShaped("length", {kAny}, &got))
      d.length.push_back(static_cast<double>(v));
    const uint64_t E = got[0];
    d.accuracy = ev.ReadDoublesShaped("token_accuracy", {E});
    d.exact = ev.ReadDoublesShaped("exact_match", {E});
    d.loss = ev.ReadDoublesShaped("loss", {E});
    if (ev.HasAttr("source_entropy_rate")) d.entropy_rate = ev.AttrDouble("source_entropy_rate");
    if (ev.HasAttr("chance_token_accuracy")) d.chance = ev.AttrDouble("chance_token_accuracy");
    if (ev.Has("depth_exact_match")) {
      for (auto v : ev.ReadIntsShaped("depth", {kAny}, &got))
        d.depth.push_back(static_cast<double>(v));
      d.depth_exact = ev.ReadDoublesShaped("depth_exact_match", {E, got[0]});
    }
    if (ev.Has("token_accuracy_ci")) {
      const auto ci = ev.ReadDoublesShaped("token_accuracy_ci", {E, 2});
      for (size_t i = 0; 2 * i + 1 < ci.size(); ++i) {
        d.accuracy_lo.push_back(ci[2 * i]);
        d.accuracy_hi.push_back(ci[2 * i + 1]);
      }
    }
  }
  if (r.root().Has("analysis") && r.root().OpenGroup("analysis").Has("probe_length")) {
    h5::Group an = r.root().OpenGroup("analysis");
    std::vector<uint64_t> got;
    for (auto v : an.ReadIntsShaped("probe_length", {kAny}, &got))
      d.probe_length.push_back(static_cast<double>(v));
    const uint64_t P = got[0];
    d.entropy = an.ReadDoublesShaped("entropy_mean", {P});
    d.log_visible = an.ReadDoublesShaped("log_visible_keys", {P});
    d.max_logit = an.ReadDoublesShaped("max_logit_mean", {P});
  }
  return d;
}

std::vector<RunData> ReadRuns(const std::string& run_dir) {
  std::vector<RunData> runs;
  for (const auto& p : FindRunFiles(run_dir)) runs.push_back(ReadRun(p));
  LEXP_INPUT_CHECK(!runs.empty(), "no run files (*.h5) in '" + run_dir + "'");
  return runs;
}

}  // namespace

std::vector<std::string> FindRunFiles(const std::string& run_dir) {
  LEXP_INPUT_CHECK(fs::is_directory(run_dir), "'" + run_dir + "' is not a directory");
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(run_dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && e.path().extension() == ".h5" &&
        name.find(".ckpt.") == std::string::npos && name != "summary.h5" && name != "base_law.h5" &&
        RunSelected(e.path()))
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string RunLabel(const h5::Group& root) {
  return root.HasAttr("label") ? root.AttrString("label") : root.AttrString("encoding");
}

// Runs of one encoding over a seed sweep share a curve: files "<label>-seed<k>" group under
// <label>.
std::string GroupKey(const std::string& label) {
  const auto at = label.rfind("-seed");
  if (at == std::string::npos || at + 5 == label.size()) return label;
  for (size_t i = at + 5; i < label.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(label[i]))) return label;
  return label.substr(0, at);
}

std::string DrawAccuracyVsLength(const std::string& run_dir) {
  const std::vector<RunData> runs = ReadRuns(run_dir);
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "accuracy_vs_length";
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# one block per encoding (blocks separated by two blank lines)\n"
      << "# columns: length(tokens) token_accuracy exact_match band_low band_high\n"
      << "# one run: token accuracy, exact match and the Clopper-Pearson 95% band of the token\n"
      << "# accuracy; several seeds: their mean and the min..max band over seeds\n";
  // Curves in order of first appearance; each collects the completed runs of its key.
  std::vector<std::pair<std::string, std::vector<const RunData*>>> groups;
  int N = 0;
  for (const auto& r : runs) {
    N = std::max(N, r.train_max_length);
    if (r.length.empty()) continue;
    const std::string key = GroupKey(r.encoding);
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, {}});
      it = groups.end() - 1;
    }
    if (it->second.empty() || it->second[0]->length == r.length) it->second.push_back(&r);
  }
  double max_len = 1, chance = std::numeric_limits<double>::quiet_NaN();
  std::string plot_acc, plot_em;
  int block = 0;
  for (const auto& [key, members] : groups) {
    const RunData& first = *members[0];
    if (std::isfinite(first.chance))
      chance = std::isnan(chance) ? first.chance : std::max(chance, first.chance);
    dat << "# encoding " << key << " (" << members.size() << " run(s))\n";
    for (size_t i = 0; i < first.length.size(); ++i) {
      double acc = 0, em = 0, lo = 1, hi = 0;
      for (const RunData* m : members) {
        acc += m->accuracy[i] / members.size();
        em += m->exact[i] / members.size();
        lo = std::min(lo, m->accuracy[i]);
        hi = std::max(hi, m->accuracy[i]);
      }
      if (members.size() == 1) {
        lo = first.accuracy_lo.empty() ? acc : first.accuracy_lo[i];
        hi = first.accuracy_hi.empty() ? acc : first.accuracy_hi[i];
      }
      dat << first.length[i] << " " << acc << " " << em << " " << lo << " " << hi << "\n";
      max_len = std::max(max_len, first.length[i]);
    }
    dat << "\n\n";
    const std::string sep = block ? ", " : "";
    const std::string title =
        members.size() > 1 ? fmt::format("{} (mean of {} seeds)", key, members.size()) : key;
    plot_acc += fmt::format(
        "{0}'{1}.dat' index {2} using 1:4:5 with filledcurves ls {3} fs transparent solid 0.18 "
        "notitle, '{1}.dat' index {2} using 1:2 with linespoints ls {3} title '{4}'",
        sep, name, block, block + 1, title);
    plot_em += fmt::format("{}'{}.dat' index {} using 1:3 with linespoints ls {} title '{}'", sep,
                           name, block, block + 1, title);
    ++block;
  }
  dat.close();
  LEXP_INPUT_CHECK(block > 0, "no run in '" + run_dir + "' has evaluation results");
  // Chance: a uniform guess over the task's output alphabet (the runs of a directory share a task).
  if (std::isfinite(chance))
    plot_acc += fmt::format(", {} with lines dt 3 lw 2 lc rgb 'black' title 'chance ({:.3g})'",
                            chance, chance);
  std::string s;
  s += "# Accuracy vs evaluation length; data in " + name +
       ".dat (written by lexp from the run files)\n";
  s += fmt::format("set terminal pngcairo size {},520 font 'Sans,10' noenhanced\n",
                   block > 6 ? 1600 : 1200);
  s += "set output '" + name + ".png'\n";
  s += "set multiplot layout 1,2 title 'Length extrapolation: trained on lengths 1.." +
       std::to_string(N) + "'\n";
  s += "set grid\n" + KeyPlacement(block, "bottom left") + "set yrange [0:1.02]\n";
  s += fmt::format("set xrange [1:{}]\n", max_len);
  s += "set logscale x 2\n";
  s += "set xlabel 'evaluation length n (task length: input symbols; log scale)'\n";
  s += fmt::format("set arrow 1 from {},0 to {},1.02 nohead dashtype 2 lc rgb 'gray40'\n", N, N);
  s += fmt::format(
      "set label 1 'train max N={}' at {},0.05 left offset 0.5,0 textcolor rgb 'gray40'\n", N, N);
  s += SeriesStyles(block);
  s += "set ylabel 'token accuracy (fraction)'\n";
  s += "set title 'token accuracy (band: 95% Clopper-Pearson, or min..max over seeds)'\n";
  s += "plot " + plot_acc + "\n";
  s += "set ylabel 'exact match (fraction of sequences)'\nset title 'sequence exact match'\n";
  s += "plot " + plot_em + "\n";
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

std::string DrawAttentionVsLength(const std::string& run_dir) {
  const std::vector<RunData> runs = ReadRuns(run_dir);
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "attention_vs_length";
  std::ofstream dat(dir / (name + ".dat"));
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
  s += "set grid\n" + KeyPlacement(block, "top left") + "set logscale x 2\n";
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
  std::ofstream dat(dir / (name + ".dat"));
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

std::string DrawScoreTable(const std::string& file) {
  h5::Reader r(file);
  const auto& root = r.root();
  const fs::path dir = FigureDirNextTo(file);
  const std::string name = "score_table";
  const auto tasks = SplitCommas(root.AttrString("tasks"));
  const auto encs = SplitCommas(root.AttrString("encodings"));
  h5::Group g = root.OpenGroup("scores");
  const size_t E = encs.size();
  // [task, encoding], as the two list attributes name them.
  const std::vector<uint64_t> shape = {tasks.size(), E};
  const auto mx = g.ReadDoublesShaped("ruoss_max", shape),
             mean = g.ReadDoublesShaped("ruoss_mean", shape),
             sd = g.ReadDoublesShaped("ruoss_sd", shape);
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# encoding_index task_index ruoss_max ruoss_mean ruoss_sd (tasks: "
      << root.AttrString("tasks") << "; encodings: " << root.AttrString("encodings") << ")\n";
  for (size_t t = 0; t < tasks.size(); ++t)
    for (size_t e = 0; e < E; ++e)
      dat << e << " " << t << " " << mx[t * E + e] << " " << mean[t * E + e] << " " << sd[t * E + e]
          << "\n";
  dat.close();
  std::string s = "# Score table: max over seeds of token accuracy on lengths N+1..M; data in " +
                  name + ".dat\n";
  s += fmt::format("set terminal pngcairo size {},{} font 'Sans,10' noenhanced\n",
                   std::max<size_t>(700, 140 * E + 260),
                   std::max<size_t>(320, 70 * tasks.size() + 170));
  s += "set output '" + name + ".png'\n";
  s += fmt::format(
      "set title 'token accuracy on lengths {}..{}: max over seeds {} (mean ± sd below)'\n",
      root.AttrInt("train_max_length") + 1, root.AttrInt("max_eval_length"),
      root.AttrString("seeds"));
  s += "set cbrange [0:1]\nset cblabel 'accuracy (fraction)'\nset palette rgb 33,13,10\n";
  s += fmt::format("set xrange [-0.5:{}]\nset yrange [{}:-0.5]\n", E - 0.5, tasks.size() - 0.5);
  std::string xt, yt;
  for (size_t e = 0; e < E; ++e) xt += fmt::format("{}'{}' {}", e ? ", " : "", encs[e], e);
  for (size_t t = 0; t < tasks.size(); ++t)
    yt += fmt::format("{}'{}' {}", t ? ", " : "", tasks[t], t);
  s += "set xtics (" + xt + ") rotate by -30\nset ytics (" + yt + ")\n";
  s += "set xlabel 'encoding'\nset ylabel 'task'\nunset key\n";
  s += fmt::format(
      // Cells as boxes (gnuplot's "with image" needs a grid of at least 2 x 2; one task is 1 x E).
      "plot '{0}.dat' using 1:2:($1-0.5):($1+0.5):($2-0.5):($2+0.5):3 with boxxy fs solid "
      "fc palette, '{0}.dat' using 1:2:(sprintf('%.2f\\n%.2f±%.2f', $3, "
      "$4, $5)) with labels font 'Sans,9'\n",
      name);
  return Render(dir, name, s);
}

std::string DrawDepthHeatmap(const std::string& run_dir) {
  const std::vector<RunData> runs = ReadRuns(run_dir);
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "accuracy_by_length_and_depth";
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# one block per run: length(tokens) depth(percent) exact_match (passkey accuracy)\n";
  std::vector<const RunData*> with;
  int N = 0;
  for (const auto& r : runs) {
    N = std::max(N, r.train_max_length);
    if (r.depth_exact.empty()) continue;
    with.push_back(&r);
    const size_t D = r.depth.size();
    dat << "# " << r.encoding << "\n";
    for (size_t i = 0; i < r.length.size(); ++i) {
      for (size_t k = 0; k < D; ++k)
        dat << i << " " << k << " " << r.depth_exact[i * D + k] << "\n";
    }
    dat << "\n\n";
  }
  dat.close();
  LEXP_INPUT_CHECK(!with.empty(), "no run in '" + run_dir + "' has a depth axis");
  const RunData& f = *with[0];
  std::string xt, yt;
  const size_t step = std::max<size_t>(1, f.length.size() / 8);
  for (size_t i = 0; i < f.length.size(); i += step)
    xt += fmt::format("{}'{:g}' {}", xt.empty() ? "" : ", ", f.length[i], i);
  for (size_t k = 0; k < f.depth.size(); ++k)
    yt +=
        fmt::format("{}'{:g}%%' {}", k ? ", " : "", f.depth[k], k);  // gnuplot: labels are formats
  const int cols = static_cast<int>(std::min<size_t>(3, with.size()));
  const int rows = static_cast<int>((with.size() + cols - 1) / cols);
  std::string s = "# Passkey accuracy per (length, depth) cell; data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size {},{} font 'Sans,10' noenhanced\n", 480 * cols,
                   360 * rows + 40);
  s += "set output '" + name + ".png'\n";
  s += fmt::format(
      "set multiplot layout {},{} title 'exact match by length and depth (trained on 1..{})'\n",
      rows, cols, N);
  s += "set cbrange [0:1]\nset palette rgb 33,13,10\nunset key\n";
  s += "set xtics (" + xt + ") rotate by -45\nset ytics (" + yt + ")\n";
  s += "set xlabel 'length n (filler tokens)'\nset ylabel 'depth of the key'\n";
  for (size_t b = 0; b < with.size(); ++b)
    s += fmt::format("set title '{}'\nplot '{}.dat' index {} using 1:2:3 with image\n",
                     with[b]->encoding, name, b);
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

std::string DrawTheory(const std::string& file) {
  h5::Reader r(file);
  const auto& root = r.root();
  const fs::path dir = FigureDirNextTo(file);
  const std::string name = "theory";
  const int d = static_cast<int>(root.AttrInt("head_dim"));
  const double T = root.AttrDouble("train_length");
  h5::Group ex = root.OpenGroup("expectation"), dec = root.OpenGroup("decay"),
            crit = root.OpenGroup("critical");
  // The curves share the distance axis of `rope`, which bounds the rows drawn.
  std::vector<uint64_t> got;
  const auto rope = ex.ReadDoublesShaped("rope", {kAny}, &got);
  const uint64_t M = got[0];
  const auto xpos = ex.ReadDoublesShaped("xpos", {M});
  const bool scaled = ex.Has("rope_scaled");
  const auto sc = scaled ? ex.ReadDoublesShaped("rope_scaled", {M}) : std::vector<double>{};
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# block 0: distance n, s(n)/sqrt(d) for RoPE, xPos" << (scaled ? ", RoPE scaled" : "")
      << " (log-spaced rows of the file's curves)\n";
  const double sd = std::sqrt(static_cast<double>(d));
  long last = -1;
  for (double x = 1; x < static_cast<double>(rope.size()); x *= 1.01) {
    const long n = static_cast<long>(x);
    if (n == last) continue;
    last = n;
    dat << n << " " << rope[n] / sd << " " << xpos[n] / sd;
    if (scaled) dat << " " << sc[n] / sd;
    dat << "\n";
  }
  dat << "\n\n# block 1: distance r, RoFormer decay bound D(r)\n";
  const auto rd = dec.ReadDoublesShaped("distance", {kAny}, &got);
  const auto bd = dec.ReadDoublesShaped("bound", {got[0]});
  for (size_t i = 1; i < rd.size(); ++i) dat << rd[i] << " " << bd[i] << "\n";
  dat << "\n\n# block 2: pair k, period (tokens)\n";
  const auto per = crit.ReadDoublesShaped("pair_period", {kAny});
  for (size_t k = 0; k < per.size(); ++k) dat << k << " " << per[k] << "\n";
  const bool mc = ex.Has("monte_carlo");
  std::string mc_title;
  if (mc) {
    const h5::Group g = ex.OpenGroup("monte_carlo");
    dat << "\n\n# block 3: distance n, Monte-Carlo mean, standard error, closed form for RoPE, "
           "then xPos; all / sqrt(d)\n";
    const auto n = g.ReadDoublesShaped("distance", {kAny}, &got);
    const std::vector<uint64_t> shape = {got[0]};
    const auto rm = g.ReadDoublesShaped("rope_mean", shape),
               rs = g.ReadDoublesShaped("rope_standard_error", shape),
               rc = g.ReadDoublesShaped("rope_closed_form", shape),
               xm = g.ReadDoublesShaped("xpos_mean", shape),
               xs = g.ReadDoublesShaped("xpos_standard_error", shape),
               xc = g.ReadDoublesShaped("xpos_closed_form", shape);
    for (size_t i = 0; i < n.size(); ++i)
      dat << n[i] << " " << rm[i] / sd << " " << rs[i] / sd << " " << rc[i] / sd << " "
          << xm[i] / sd << " " << xs[i] / sd << " " << xc[i] / sd << "\n";
    mc_title = fmt::format("Monte-Carlo expectation, {} samples, {} ({:g}, {:g}), {}",
                           g.AttrInt("samples"), g.AttrString("distribution"), g.AttrDouble("mean"),
                           g.AttrDouble("sd"), g.AttrString("content"));
  }
  dat.close();
  const int d_extra = static_cast<int>(crit.AttrInt("d_extra"));
  std::string s = "# Closed-form rotary analyses; data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size {},480 font 'Sans,10' noenhanced\n",
                   mc ? 2000 : 1500);
  s += "set output '" + name + ".png'\n";
  s += fmt::format(
      "set multiplot layout 1,{} title 'head dim {}, base {:g}, training length {:g}'\n",
      mc ? 4 : 3, d, root.AttrDouble("base"), T);
  s += "set grid\nset key top right\nset logscale x\n";
  s += "set xlabel 'relative distance n (tokens, log scale)'\n";
  s += "set ylabel 'expected logit s(n)/sqrt(d), q = k = 1'\n";
  s += "set title 'attention expectation proxy'\n";
  s += fmt::format("set arrow 1 from {0},graph 0 to {0},graph 1 nohead dt 2 lc rgb 'gray40'\n", T);
  s += fmt::format(
      "plot '{0}.dat' index 0 using 1:2 with lines lw 1.5 title 'RoPE', '{0}.dat' index 0 "
      "using 1:3 with lines lw 1.5 title 'xPos'",
      name);
  if (scaled)
    s += fmt::format(", '{}.dat' index 0 using 1:4 with lines lw 1.5 title 'RoPE {}'", name,
                     ex.AttrString("scale"));
  s += "\nset title 'RoFormer long-term decay bound'\nset ylabel 'D(r) (dimensionless)'\n";
  s += "set xlabel 'relative distance r (tokens, log scale)'\n";
  s += fmt::format("plot '{}.dat' index 1 using 1:2 with lines lw 1.5 notitle\n", name);
  s += "unset arrow 1\nunset logscale x\nset logscale y\nset key bottom right\n";
  s += "set xlabel 'rotary pair k'\nset ylabel 'period 2 pi b^(2k/d) (tokens, log scale)'\n";
  s += fmt::format("set title 'critical dimension: d_extra = {} (pairs < {} complete a period)'\n",
                   d_extra, d_extra / 2);
  s += fmt::format(
      "set arrow 2 from graph 0,first {0} to graph 1,first {0} nohead dt 2 lc rgb 'red'\n", T);
  s += fmt::format("set arrow 3 from {0},graph 0 to {0},graph 1 nohead dt 3 lc rgb 'black'\n",
                   d_extra / 2.0 - 0.5);
  s += fmt::format(
      "plot '{}.dat' index 2 using 1:2 with linespoints lw 1.5 pt 7 ps 0.5 title 'pair "
      "period', 1/0 dt 2 lc rgb 'red' title 'training length'\n",
      name);
  if (mc) {
    s += "unset arrow 2\nunset arrow 3\nunset logscale y\nset key bottom left\n";
    s += "set logscale x\nset xrange [1:*]\n";
    s += "set xlabel 'relative distance n (tokens, log scale)'\n";
    s += "set ylabel 'expected logit / sqrt(d)'\n";
    s += "set title '" + mc_title + "'\nset style fill transparent solid 0.3\n";
    s += fmt::format(
        "plot '{0}.dat' index 3 using 1:($2-2*$3):($2+2*$3) with filledcurves lc rgb '#4e79a7' "
        "title 'RoPE mean +- 2 s.e.', '' index 3 using 1:4 with lines lw 1 lc rgb 'black' "
        "title 'RoPE closed form', '' index 3 using 1:($5-2*$6):($5+2*$6) with filledcurves lc "
        "rgb '#f28e2b' title 'xPos mean +- 2 s.e.', '' index 3 using 1:7 with lines lw 1 dt 2 "
        "lc rgb 'black' title 'xPos closed form'\n",
        name);
  }
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

// The longest probe of each run's /analysis/geometry, averaged over layers and heads.
struct GeometryCurves {
  std::string encoding;
  int length = 0, train_max_length = 0, train_tokens = 0;  // train_tokens: 0 when unknown
  int input_tokens = 0;  // of the longest probe: where the input ends (0 when unknown)
  std::vector<double> running_max, entropy, visible, distance;  // [T]
  std::vector<double> expectation;                              // [T] mean logit by distance
  // Per probe length (ascending): mean over layers and heads of the best-match JS divergence
  // against the reference (NaN without one), of the resolution over the training window and over
  // every distance (convention A), and a flat curve's resolution over every distance.
  std::vector<double> probe_length, js, resolution_window, resolution, resolution_flat;
  // From /analysis/expectation when present: the same resolutions per evaluation length.
  std::vector<double> eval_length, eval_resolution_window, eval_resolution, eval_flat;
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
      c.resolution.push_back(MeanOverHeads(res, res.size(), 1)[0]);
      c.resolution_window.push_back(MeanOverHeads(win, win.size(), 1)[0]);
      c.resolution_flat.push_back(pg.AttrDouble("resolution_flat"));
      if (pg.Has("js_best")) {
        const auto js = pg.ReadDoublesShaped("js_best", lh);
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
      for (auto v : ex.ReadIntsShaped("length", {rd[0]}))
        c.eval_length.push_back(static_cast<double>(v));
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

std::string DrawAttentionGeometry(const std::string& run_dir) {
  const std::vector<GeometryCurves> runs = ReadGeometry(run_dir);
  LEXP_INPUT_CHECK(!runs.empty(),
                   "no run in '" + run_dir + "' has /analysis/geometry (lexp analyze)");
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "attention_geometry";
  std::ofstream dat(dir / (name + ".dat"));
  dat << "# one block per run (longest probe, mean over layers and heads): index i (distance for "
         "columns 2 and 6, query for columns 3-5), LM-Infinite's logit bound (running max of the "
         "last query's logits, mean over probe sequences), entropy (nats), visible keys, mean "
         "attended distance (tokens), mean logit at distance i; then one block per run over its "
         "probe lengths: length, best-match JS divergence against the reference (nats, NaN: "
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
      dat << c.probe_length[i] << " " << c.js[i] << " " << c.resolution_window[i] << " "
          << c.resolution[i] << " " << c.resolution_flat[i] << "\n";
    dat << "\n\n";
    const std::string sep = r ? ", " : "";
    p5 += fmt::format("{}'{}.dat' index {} using 1:2 with linespoints ls {} title '{}'", sep, name,
                      block + r, r + 1, c.encoding);
    // Every evaluation length when /analysis/expectation has them, else the probe lengths.
    const size_t idx = c.eval_length.empty() ? block + r : block + runs.size() + r;
    p6 += fmt::format(
        "{0}'{1}.dat' index {2} using 1:3 with linespoints ls {3} title '{4}, training window', "
        "'{1}.dat' index {2} using 1:4 with lines ls {3} dt 2 title '{4}, every distance'",
        sep, name, idx, r + 1, c.encoding);
  }
  p6 += fmt::format(
      ", '{}.dat' index {} using 1:5 with lines dt 3 lw 2 lc rgb 'black' title "
      "'flat curve, every distance (1/K^2)'",
      name, runs[0].eval_length.empty() ? block : block + runs.size());
  // Resolution at every evaluation length (/analysis/expectation), one block per run (may be
  // empty).
  for (const auto& c : runs) {
    dat << "# " << c.encoding
        << " per evaluation length: length, (unused), resolution over the "
           "training window, over every distance, a flat curve's\n";
    for (size_t i = 0; i < c.eval_length.size(); ++i)
      dat << c.eval_length[i] << " NaN " << c.eval_resolution_window[i] << " "
          << c.eval_resolution[i] << " " << c.eval_flat[i] << "\n";
    dat << "\n\n";
  }
  dat.close();
  p2 += fmt::format(
      ", '{}.dat' index 0 using {}:(log($4)) with lines dt 3 lw 2 lc rgb 'black' "
      "title 'uniform: ln(visible keys)'",
      name, every_key ? 1 : 4);
  std::string s =
      "# Attention geometry of the longest probe (lexp analyze); data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size {},900 font 'Sans,10' noenhanced\n",
                   block > 6 ? 1800 : 1500);
  s += "set output '" + name + ".png'\n" + SeriesStyles(block);
  s += fmt::format(
      "set multiplot layout 2,3 title 'attention of trained runs (top and bottom left: the "
      "longest probe; trained on 1..{}; mean over layers and heads)'\n",
      N);
  s += "set grid\n" + KeyPlacement(block, "top left");
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
    s += "set xlabel 'query position (every query sees all keys)'\nset ylabel 'attention "
         "entropy (nats)'\n";
    s += "set title 'entropy by query'\nplot " + p2 + "\n";
  } else {
    s += "set xlabel 'keys the query may see'\nset ylabel 'attention entropy (nats)'\n";
    s += "set title 'entropy vs visible keys'\nplot " + p2 + "\n";
    s += input_mark;
  }
  s += "set xlabel 'query position'\nset ylabel 'mean attended distance (tokens)'\n";
  s += "set title 'where attention goes'\nplot " + p3 + "\n";
  s += "unset arrow 3\nunset label 3\n";
  s += "set xlabel 'distance i - j (tokens)'\nset ylabel 'mean logit at that distance'\n";
  s += "set title 'empirical attention expectation (xPos paper)'\nplot " + p4 + "\n";
  s += "unset arrow 1\nunset label 1\nset logscale x 2\n";
  s += fmt::format(
      "set arrow 2 from {0},graph 0 to {0},graph 1 nohead dt 2 lw 1.5 lc rgb 'gray30'\n", N);
  s += "set xlabel 'probe length n (log scale)'\nset ylabel 'JS divergence, best-matching head "
       "(nats)'\n";
  s += "set title 'attention rows against the NoPE run (no curve: no reference)'\n";
  s += "set yrange [0:*]\nplot " + p5 + "\n";
  s += "set ylabel 'attention resolution (convention A)'\nset yrange [*:*]\n";
  s += "set xlabel 'length n (log scale; every evaluation length when analysed)'\n";
  s += "set title 'resolution of the empirical expectation (same N: training window)'\nplot " + p6 +
       "\n";
  s += "unset multiplot\n";
  return Render(dir, name, s);
}

std::string DrawPerplexityVsLength(const std::string& run_dir) {
  const std::vector<RunData> runs = ReadRuns(run_dir);
  const fs::path dir = FigureDir(run_dir);
  const std::string name = "perplexity_vs_length";
  std::ofstream dat(dir / (name + ".dat"));
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
  s += "set grid\n" + KeyPlacement(block, "top left") + "set logscale x 2\nset logscale y\n";
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

std::vector<std::string> DrawAllFigures(const std::string& run_dir) {
  std::vector<std::string> out = {DrawAccuracyVsLength(run_dir), DrawAttentionVsLength(run_dir)};
  bool depth = false;
  for (const auto& r : ReadRuns(run_dir)) depth = depth || !r.depth_exact.empty();
  if (depth) out.push_back(DrawDepthHeatmap(run_dir));
  bool geometry = false, variants = false, rotary = false, positions = false, heads = false,
       probes = false, field = false;
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    if (!r.root().Has("analysis")) continue;
    const h5::Group an = r.root().OpenGroup("analysis");
    variants = variants || an.Has("entropy_variants");
    rotary = rotary || (an.Has("rotary") && an.OpenGroup("rotary").Has("ablation_loss"));
    positions = positions || an.Has("position_scores");
    probes = probes || an.Has("position_probes");
    field = field || an.Has("receptive_field");
    if (an.Has("geometry")) {
      geometry = geometry || HasCurrentGeometry(an.OpenGroup("geometry"));
      heads = heads || HasHeadsData(an.OpenGroup("geometry"));
    }
  }
  if (geometry) out.push_back(DrawAttentionGeometry(run_dir));
  if (positions) out.push_back(DrawPositionScores(run_dir));
  if (heads) out.push_back(DrawHeads(run_dir));
  if (probes) out.push_back(DrawPositionProbes(run_dir));
  if (field) out.push_back(DrawReceptiveField(run_dir));
  if (variants) out.push_back(DrawEntropyVariants(run_dir));
  if (rotary) out.push_back(DrawRotaryPairs(run_dir));
  bool source = false;
  for (const auto& r : ReadRuns(run_dir)) source = source || std::isfinite(r.entropy_rate);
  if (source) out.push_back(DrawPerplexityVsLength(run_dir));
  return out;
}

int FigureProgramMain(int argc, char** argv, std::string (*draw)(const std::string& run_dir)) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR\n", argv[0]);
    return 2;
  }
  try {
    std::printf("%s\n", draw(argv[1]).c_str());
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error (please report): %s\n", e.what());
    return 3;
  }
  return 0;
}

}  // namespace lexp
