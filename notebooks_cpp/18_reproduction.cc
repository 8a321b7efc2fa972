// Figure 18: a reproduction's verdict (lexp reproduce): every compared run label in one panel, its
// criterion metric against the evaluation length (mean over seeds, the band from the worst to the
// best seed, the score with its 95% interval in the key), the training length marked, the lengths
// the criterion averages shaded and labelled (blue; green: the lengths a ratio divides by), and
// the published number as a dashed line of the label's colour where the claim gives one. A claim judged at equal training compute draws the
// metric against the compute spent before each evaluation during training instead, the compute
// every run is judged at marked.
// With a trend (the claim judged at several numbers of training steps), a second figure: each
// label's score with its 95% interval against steps, the verdict at each.
// Usage: 18_reproduction CLAIM_DIR (holding verdict.h5)
// (writes CLAIM_DIR/figures/reproduction.{png,gp,dat}, and reproduction_steps.{png,gp,dat})
// Compiled twice: into the figure library that `lexp` draws from, and with LEXP_FIGURE_PROGRAM as
// this program on its own; copy the file to make a figure of your own.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_kit.h"
#include "notebooks_cpp/figures.h"

namespace lexp {
namespace {

// text wrapped at words into lines of at most `width` characters, each line preceded by a newline;
// adds the number of lines to *lines when not null.
std::string WrapAtWords(std::string text, size_t width, int* lines) {
  std::string wrapped;
  while (!text.empty()) {
    size_t cut = text.size() <= width ? text.size() : text.rfind(' ', width);
    if (cut == std::string::npos || cut == 0) cut = std::min(width, text.size());
    wrapped.push_back('\n');
    wrapped.append(text, 0, cut);
    if (lines != nullptr) ++*lines;
    text = cut < text.size() ? text.substr(cut + 1) : "";
  }
  return wrapped;
}

// Seeds whose score is a lower bound (an extrapolation limit every evaluated length passed).
std::string Censored(const h5::Group& g, size_t seeds) {
  const int64_t c = g.HasAttr("censored_runs") ? g.AttrInt("censored_runs") : 0;
  if (c == 0) return "";
  return c == static_cast<int64_t>(seeds)
             ? "; a lower bound: every evaluated length passed"
             : fmt::format("; {} of {} seeds a lower bound (every evaluated length passed)", c,
                           seeds);
}

// A metric in [0, 1] (the criterion's accuracies), drawn on [0, 1.05].
bool IsFraction(const std::string& metric) {
  return metric == "exact_match" || metric == "token_accuracy";
}

// Text with line breaks as a double-quoted gnuplot string ("\n" breaks the line).
std::string MultiLine(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    if (ch == '"' || ch == '\\') out.push_back('\\');
    out.push_back(ch);
  }
  return out + "\"";
}

// The budget as a title names it: the smoke budget is a pipeline check (ReproduceOptions).
std::string BudgetText(const h5::Group& root) {
  const std::string budget = root.AttrString("budget");
  return budget == "smoke" ? "smoke budget: a pipeline check, not evidence" : budget + " budget";
}

// CLAIM_DIR/verdict.h5, checked to be a verdict file.
std::filesystem::path VerdictFile(const std::string& claim_dir) {
  const std::filesystem::path file = std::filesystem::path(claim_dir) / "verdict.h5";
  LEXP_INPUT_CHECK(std::filesystem::exists(file),
                   "'" + claim_dir + "' has no verdict.h5 (lexp reproduce ID writes it)");
  h5::Reader r(file.string());
  const std::string format = r.root().HasAttr("format") ? r.root().AttrString("format") : "";
  LEXP_INPUT_CHECK(format == "lexp-verdict/1" || format == "lexp-verdict/2",
                   "'" + file.string() + "' is not a lexp verdict file");
  return file;
}

}  // namespace

std::string DrawReproduction(const std::string& claim_dir) {
  const std::filesystem::path file = VerdictFile(claim_dir);
  h5::Reader r(file.string());
  const h5::Group& root = r.root();
  const std::vector<std::string> labels = SplitCommas(root.AttrString("labels"));
  LEXP_INPUT_CHECK(!labels.empty(), "'" + file.string() + "' compares no run (verdict: " +
                                        root.AttrString("verdict") + ")");
  const std::string metric = root.AttrString("metric");
  const int64_t train = root.AttrInt("train_max_length");
  // A criterion at equal compute draws the metric against the training compute (older files have
  // no such attribute: lengths).
  const std::string compute = root.HasAttr("compute") ? root.AttrString("compute") : "";
  const std::string x_name = compute.empty() ? "length" : "compute";
  // Compute is drawn in a unit of its size: GFLOP, thousands of tokens, seconds.
  const double x_unit = compute == "flops" ? 1e9 : compute == "tokens" ? 1e3 : 1.0;
  auto span_of = [&](const std::string& attr) {
    std::string s = root.AttrString(attr);
    const auto dots = s.find("..");
    if (dots == std::string::npos) return std::vector<std::string>{};
    return std::vector<std::string>{s.substr(0, dots), s.substr(dots + 2)};
  };
  const std::vector<std::string> span = span_of("lengths"), relative = span_of("relative_to");
  const std::filesystem::path dir = FigureDir(claim_dir);
  const std::string name = "reproduction";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per run label, blocks separated by two blank lines; columns:\n"
      << "# "
      << (compute.empty() ? "length(task length n)"
                          : fmt::format("compute({} / {:g})", compute, x_unit))
      << " " << metric << "_mean " << metric << "_min(worst seed) " << metric
      << "_max(best seed)\n";
  double x_lo = 1e300, x_hi = 0, y_lo = 1e300, y_hi = -1e300;
  struct Panel {
    std::string label, title, interval;
    bool published = false;
    double published_value = 0;
    int runs = 0;
    std::vector<std::pair<double, double>> points;  // (x, y) of its curves, to place the key
  };
  std::vector<Panel> panels;
  const h5::Group groups = root.OpenGroup("groups");
  for (const auto& label : labels) {
    const h5::Group g = groups.OpenGroup(label);
    auto length = g.ReadDoubles(x_name);
    const auto mean = g.ReadDoubles("curve_mean"), lo = g.ReadDoubles("curve_min"),
               hi = g.ReadDoubles("curve_max");
    for (double& x : length) x /= x_unit;
    dat << "# " << label << "\n";
    // gnuplot does not count a block without a line: a label without lengths keeps its index.
    if (length.empty()) dat << "NaN NaN NaN NaN\n";
    for (size_t i = 0; i < length.size(); ++i) {
      dat << DatNumber(length[i]) << " " << DatNumber(mean[i]) << " " << DatNumber(lo[i]) << " "
          << DatNumber(hi[i]) << "\n";
      x_lo = std::min(x_lo, length[i]);
      x_hi = std::max(x_hi, length[i]);
      // A share of a gap is a ratio of small numbers where the gap is small (short of the judged
      // lengths): the vertical scale is the judged lengths' (and 0..1), the rest clipped.
      const bool judged = span.size() == 2 && length[i] >= std::stod(span[0]) &&
                          length[i] <= std::stod(span[1]);
      if (metric == "gap_share" && !judged) continue;
      for (const double y : {lo[i], hi[i], mean[i]})
        if (std::isfinite(y)) {
          y_lo = std::min(y_lo, y);
          y_hi = std::max(y_hi, y);
        }
    }
    dat << "\n\n";
    Panel p;
    p.label = label;
    for (size_t i = 0; i < length.size(); ++i)
      for (const double y : {lo[i], hi[i], mean[i]})
        if (std::isfinite(y)) p.points.emplace_back(length[i], y);
    const auto seeds = g.ReadInts("seed");
    p.runs = static_cast<int>(seeds.size());
    // The key entry: the label's score and its 95% interval; how it was judged said apart.
    p.title = seeds.empty() ? label + ": no completed run"
                            : fmt::format("{}: {:.3f} [{:.3f}, {:.3f}]{}", label,
                                          g.AttrDouble("score"), g.AttrDouble("lo"),
                                          g.AttrDouble("hi"), Censored(g, seeds.size()));
    p.interval = seeds.empty() ? "" : g.AttrString("interval");
    if (g.HasAttr("published")) {
      p.published = true;
      p.published_value = g.AttrDouble("published");
    }
    panels.push_back(p);
  }
  dat.close();
  const int n = static_cast<int>(panels.size());
  const bool log_x = compute.empty() && x_hi > 20 * std::max(1.0, x_lo);
  // How each label's score was judged ("Student-t over 5 seeds"): said once in the title when all
  // labels share it, else in each label's key entry.
  bool one_interval = true;
  for (const auto& p : panels) one_interval = one_interval && p.interval == panels[0].interval;
  const int key_rows = (n + 1) / 2 + 1;
  const int height = 420 + 18 * key_rows;
  std::string s = "# A reproduction's verdict; data in " + name + ".dat\n";
  s += fmt::format("set terminal pngcairo size 960,{} font 'Sans,10' noenhanced\n", height + 60);
  s += "set output '" + name + ".png'\n";
  // The title: the verdict, then the claim wrapped at words, then how the scores were judged.
  const std::string wrapped = WrapAtWords(root.AttrString("statement"), 110, nullptr);
  s += "set title " +
       MultiLine(fmt::format("{} ({}): {}{}{}", root.AttrString("id"), BudgetText(root),
                             root.AttrString("verdict"), wrapped,
                             one_interval && !panels[0].interval.empty()
                                 ? "\nscores: " + panels[0].interval
                                 : std::string())) +
       "\n";
  s += log_x ? "set logscale x 2\n" : "unset logscale x\n";
  // One value per run at one length (an extrapolation limit at N): that length alone marked, the
  // labels' error bars side by side around it.
  const double single_spread = x_lo == x_hi ? 0.6 : 0.0;
  if (x_lo == x_hi)
    s += fmt::format("set xrange [{}:{}]\nset xtics ({})\n", x_lo - 1, x_hi + 1, x_lo);
  if (compute.empty()) {
    s += fmt::format("set xlabel 'task length n (trained on n <= {})'\n", train);
  } else {
    const std::string axis = compute == "flops"    ? "training GFLOP"
                             : compute == "tokens" ? "training tokens (thousands)"
                                                   : "training seconds";
    const std::vector<std::string> at = span_of("lengths");
    s += "set xlabel " +
         Quote(axis + " before each evaluation (n = " +
               (at.size() == 2 && at[0] == at[1] ? at[0] : root.AttrString("lengths")) + ")") +
         "\n";
    s += fmt::format("set xrange [0:{}]\n", x_hi * 1.02);
  }
  const bool fraction = IsFraction(metric);
  s += "set ylabel " +
       Quote(metric == "loss"              ? "loss (nats per graded token)"
             : metric == "js_to_reference" ? "JS divergence to NoPE (nats, closest heads)"
             : metric == "attention_entropy"
                 ? "attention entropy (nats, mean over queries and heads)"
             : metric == "sink_mass" ? "attention on the first token (mean over heads)"
             : metric == "shift_move"
                 ? "attention move, positions + 16 (row L1)"
             : metric == "position_probe_error"
                 ? "position probe RMSE / chance (best block)"
             : metric == "gap_share" ? "share of the loss gap beyond N closed"
             : metric.size() > 6 && metric.compare(metric.size() - 6, 6, "_limit") == 0
                 ? "extrapolation limit (task length n)"
                 : metric) +
       "\n";
  if (metric == "gap_share") {
    y_lo = std::min(y_lo, 0.0);
    y_hi = std::max(y_hi, 1.0);
  }
  // Room above the curves for the labels of the shaded spans.
  if (fraction) {
    s += "set yrange [0:1.12]\n";
  } else if (y_lo < y_hi) {
    const double pad = 0.05 * (y_hi - y_lo);
    s += fmt::format("set yrange [{}:{}]\n", y_lo - pad, y_hi + 3 * pad);
  } else if (y_lo == y_hi && y_lo < 1e300) {  // one value: a range around it (gnuplot's own warns)
    const double pad = std::max(0.5, 0.05 * std::abs(y_lo));
    s += fmt::format("set yrange [{}:{}]\n", y_lo - pad, y_hi + pad);
  }
  s += "set style fill transparent solid 0.2 noborder\n";
  // The training length (or the compute every run is judged at), dashed and labelled.
  const double mark =
      compute.empty() ? static_cast<double>(train) : root.AttrDouble("at_compute") / x_unit;
  // At a single length (one extrapolation limit per run) the axis holds that length alone, and
  // the x label says the training length: nothing to mark or shade.
  const bool one_length = x_lo == x_hi;
  if (!one_length)
    s += fmt::format("set arrow from {},graph 0 to {},graph 1 nohead dashtype 2 lc rgb 'gray30'\n",
                     mark, mark);
  if (!one_length)
    s += fmt::format("set label 1 {} at {},graph 0.97 right offset -0.5,0 tc rgb 'gray30'\n",
                   Quote(compute.empty() ? fmt::format("trained on n <= {}", train)
                                         : std::string("judged at this compute")),
                   mark);
  // The lengths the criterion averages shaded blue and labelled; those a ratio divides by green.
  auto span_label = [&](const std::vector<std::string>& sp, const std::string& what, int tag,
                        const char* colour, double y) {
    if (sp.size() != 2 || !compute.empty() || one_length) return;
    const double a = std::stod(sp[0]), b = std::stod(sp[1]);
    s += fmt::format(
        "set object rectangle from {},graph 0 to {},graph 1 fillcolor rgb '{}' fillstyle solid "
        "1.0 noborder behind\n",
        a == b ? a - 0.5 : a, a == b ? b + 0.5 : b, colour);
    const double mid = log_x ? std::sqrt(a * b) : (a + b) / 2;
    s += fmt::format("set label {} {} at {},graph {} center\n", tag,
                     Quote(what + (a == b ? " n = " + sp[0] : " n = " + sp[0] + ".." + sp[1])),
                     mid, y);
  };
  span_label(span, "judged:", 2, "#e8e8ff", 0.97);
  span_label(relative, "ratio to:", 3, "#e4f4e4", 0.92);
  s += "set key outside below center horizontal maxcols 2 samplen 2\n";
  // Every label in one panel, so that their gap is read directly: the band from the worst to the
  // best seed, the mean over seeds with its score, the published number dashed in the same colour.
  static const char* kColours[] = {"#3060c0", "#d05020", "#30a050", "#9040b0",
                                   "#b09020", "#20a0b0", "#c03070", "#606060"};
  std::string plot = "plot ";
  bool first = true, any_band = false;
  auto add = [&](const std::string& item) {
    if (!first) plot += ", ";
    plot += item;
    first = false;
  };
  for (int k = 0; k < n; ++k) {
    const Panel& p = panels[k];
    const char* colour = kColours[k % 8];
    const double dx = single_spread * (k - (n - 1) / 2.0) / std::max(1, n);
    const std::string x = dx == 0 ? std::string("1") : fmt::format("($1+({:.3g}))", dx);
    const std::string title = one_interval || p.interval.empty()
                                  ? p.title
                                  : fmt::format("{} ({})", p.title, p.interval);
    if (p.points.empty()) {
      add(fmt::format("NaN with lines lw 2 lc rgb '{}' title {}", colour, Quote(title)));
      continue;
    }
    if (p.runs > 1) {
      any_band = true;
      add(x_lo == x_hi
              ? fmt::format("'{}.dat' index {} using {}:2:3:4 with yerrorbars pt -1 lw 2 lc rgb "
                            "'{}' notitle",
                            name, k, x, colour)
              : fmt::format("'{}.dat' index {} using 1:3:4 with filledcurves lc rgb '{}' notitle",
                            name, k, colour));
    }
    add(fmt::format("'{}.dat' index {} using {}:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb '{}' "
                    "title {}",
                    name, k, x, colour, Quote(title)));
    if (p.published)
      add(fmt::format("{} with lines dashtype 3 lw 2 lc rgb '{}' title {}", p.published_value,
                      colour, Quote(p.label + ": published")));
  }
  if (any_band)
    add(one_length ? std::string("NaN with lines lw 2 lc rgb 'gray50' title 'bar: worst to best "
                                 "seed, point: mean over seeds'")
                   : std::string("NaN with filledcurves lc rgb 'gray50' title 'shaded: worst to "
                                 "best seed, line: mean over seeds'"));
  bool anything = false;
  for (const auto& p : panels) anything = anything || !p.points.empty();
  // No finite score to draw (no run completed, or none learnt the task where a limit needs it):
  // an empty frame that says so.
  if (!anything)
    plot = "set label 4 'no finite score to draw' at graph 0.5,0.5 center\nunset logscale x\n"
           "plot [0:1] [0:1] 2 notitle";
  s += plot + "\n";
  return Render(dir, name, s);
}

std::string DrawReproductionTrend(const std::string& claim_dir) {
  const std::filesystem::path file = VerdictFile(claim_dir);
  h5::Reader r(file.string());
  const h5::Group& root = r.root();
  LEXP_INPUT_CHECK(root.Has("trend"),
                   "'" + file.string() + "' has no /trend (the claim has no [trend] steps)");
  const h5::Group trend = root.OpenGroup("trend");
  const std::vector<std::string> labels = SplitCommas(root.AttrString("labels"));
  const std::string metric = root.AttrString("metric");
  const std::filesystem::path dir = FigureDir(claim_dir);
  const std::string name = "reproduction_steps";
  std::ofstream dat(DatFile(dir, name));
  dat << "# one block per run label, blocks separated by two blank lines; columns:\n"
      << "# steps(training steps of stage " << trend.AttrString("stage") << ") score lo hi "
      << "(the criterion's score over seeds and its 95% interval)\n";
  std::string verdicts, xtics;
  std::vector<std::string> points;
  for (size_t i = 0; trend.Has(fmt::format("{}", i)); ++i) points.push_back(fmt::format("{}", i));
  int64_t fewest = 0, most = 0;  // the steps axis: the points, a factor of 1.5 beyond each end
  for (const auto& p : points) {
    const h5::Group t = trend.OpenGroup(p);
    const int64_t steps = t.AttrInt("steps");
    // One title line holds about 80 characters at this size: the points wrap onto more lines.
    const std::string point = fmt::format("{} steps{}: {}", steps,
                                          t.AttrInt("budget") != 0 ? " (budget)" : "",
                                          t.AttrString("verdict"));
    const size_t line_start = verdicts.rfind('\n') == std::string::npos ? 0 : verdicts.rfind('\n') + 1;
    const bool wrap = !verdicts.empty() && verdicts.size() - line_start + point.size() > 70;
    verdicts += (verdicts.empty() ? "" : wrap ? ";\n" : "; ") + point;
    xtics += fmt::format("{}\"{}\" {}", xtics.empty() ? "" : ", ", steps, steps);
    fewest = fewest == 0 ? steps : std::min(fewest, steps);
    most = std::max(most, steps);
  }
  for (const auto& label : labels) {
    dat << "# " << label << "\n";
    for (const auto& p : points) {
      const h5::Group t = trend.OpenGroup(p);
      if (!t.Has(label) || t.OpenGroup(label).AttrInt("runs") == 0) continue;
      const h5::Group l = t.OpenGroup(label);
      dat << t.AttrInt("steps") << " " << DatNumber(l.AttrDouble("score")) << " "
          << DatNumber(l.AttrDouble("lo")) << " " << DatNumber(l.AttrDouble("hi")) << "\n";
    }
    dat << "\n\n";
  }
  dat.close();
  std::string s = "# A reproduction's verdict against training steps; data in " + name + ".dat\n";
  s += "set terminal pngcairo size 720,480 font 'Sans,10' noenhanced\n";
  s += "set output '" + name + ".png'\n";
  s += "set title " +
       MultiLine(fmt::format("{} ({}) against training steps\n{}", root.AttrString("id"),
                             BudgetText(root), verdicts)) +
       "\n";
  s +=
      "set logscale x 10\nset xlabel 'training steps of stage " + trend.AttrString("stage") + "'\n";
  s +=
      "set ylabel " +
      Quote(metric + " over " + root.AttrString("lengths") +
            (root.AttrString("relative_to").empty() ? std::string()
                                                    : " / over " + root.AttrString("relative_to")) +
            " (95% interval)") +
      "\n";
  if (most > 0)
    s += fmt::format("set xrange [{}:{}]\nset xtics ({})\n", DatNumber(fewest / 1.5),
                     DatNumber(most * 1.5), xtics);
  // Fractions on their own scale, as in the verdict figure; other metrics padded by 5%.
  s += IsFraction(metric) ? "set yrange [0:1.05]\n" : "set offsets 0, 0, graph 0.05, graph 0.05\n";
  s += "set key outside right\n";
  std::string plot = "plot ";
  for (size_t k = 0; k < labels.size(); ++k)
    plot +=
        fmt::format("{}'{}.dat' index {} using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.8 title {}",
                    k ? ", " : "", name, k, Quote(labels[k]));
  s += plot + "\n";
  return Render(dir, name, s);
}

}  // namespace lexp

#ifdef LEXP_FIGURE_PROGRAM
int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, [](const std::string& dir) {
    std::string png = lexp::DrawReproduction(dir);
    if (lexp::h5::Reader((std::filesystem::path(dir) / "verdict.h5").string()).root().Has("trend"))
      png = lexp::DrawReproductionTrend(dir);
    return png;
  });
}
#endif
