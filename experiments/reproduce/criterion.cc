#include "experiments/reproduce/criterion.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "analysis/binomial.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_data.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

struct RunScores {
  std::string label, state;
  int seed = 0, train_max_length = 0;
  std::vector<double> length, metric, samples;
};

RunScores ReadRun(const std::string& path, const std::string& metric) {
  h5::Reader r(path);
  const h5::Group& root = r.root();
  RunScores s;
  s.label = GroupKey(RunLabel(root));  // a seed sweep's runs group under their label
  s.seed = static_cast<int>(root.AttrInt("seed"));
  s.train_max_length = static_cast<int>(root.AttrInt("train_max_length"));
  s.state = root.Has("status") ? root.OpenGroup("status").AttrString("state") : "interrupted";
  if (s.state != "completed") return s;
  const h5::Group eval = root.OpenGroup("eval");
  LEXP_INPUT_CHECK(eval.Has(metric), "run file '" + path + "' has no /eval/" + metric);
  for (const int64_t n : eval.ReadInts("length")) s.length.push_back(static_cast<double>(n));
  const uint64_t L = s.length.size();
  s.metric = eval.ReadDoublesShaped(metric, {L});
  for (const int64_t n : eval.ReadIntsShaped("samples", {L}))
    s.samples.push_back(static_cast<double>(n));
  return s;
}

// Mean of the metric over the evaluated lengths in [lo, hi]; NaN when none is.
double MeanOver(const RunScores& r, int lo, int hi, double* samples = nullptr,
                double* successes = nullptr) {
  double sum = 0, n = 0, trials = 0, hits = 0;
  for (size_t i = 0; i < r.length.size(); ++i)
    if (r.length[i] >= lo && r.length[i] <= hi) {
      sum += r.metric[i];
      n += 1;
      trials += r.samples[i];
      hits += std::round(r.metric[i] * r.samples[i]);
    }
  if (samples) *samples = trials;
  if (successes) *successes = hits;
  return n > 0 ? sum / n : std::numeric_limits<double>::quiet_NaN();
}

// One label's score over the lengths [lo, hi] (see criterion.h), its interval and its curve.
GroupScore ScoreGroup(const std::string& label, const std::vector<RunScores>& runs,
                      const ClaimCriterion& k, int lo, int hi) {
  const bool accuracy = k.metric != "loss";  // larger is better; a loss: smaller
  GroupScore g;
  g.label = label;
  std::vector<const RunScores*> done;
  for (const auto& r : runs) {
    if (r.state != "completed") {
      ++g.incomplete;
      continue;
    }
    done.push_back(&r);
  }
  std::sort(done.begin(), done.end(),
            [](const RunScores* a, const RunScores* b) { return a->seed < b->seed; });
  int best = -1;
  for (const RunScores* r : done) {
    double s = MeanOver(*r, lo, hi);
    LEXP_INPUT_CHECK(!std::isnan(s), fmt::format("criterion: run '{}' (seed {}) evaluated no "
                                                 "length in [{}, {}]",
                                                 label, r->seed, lo, hi));
    if (k.relative_lo > 0) {
      const double base = MeanOver(*r, k.relative_lo, k.relative_hi);
      LEXP_INPUT_CHECK(!std::isnan(base),
                       fmt::format("criterion: run '{}' (seed {}) evaluated no length in "
                                   "relative_to [{}, {}]",
                                   label, r->seed, k.relative_lo, k.relative_hi));
      s /= base;
    }
    g.seeds.push_back(r->seed);
    g.per_seed.push_back(s);
    const double cur = g.per_seed.back();
    if (best < 0 || (accuracy ? cur > g.per_seed[best] : cur < g.per_seed[best]))
      best = static_cast<int>(g.per_seed.size()) - 1;
  }
  if (done.empty()) return g;
  const bool by_mean = k.seeds == "mean" && done.size() >= 2;
  if (by_mean) {
    double sum = 0;
    for (const double s : g.per_seed) sum += s;
    g.score = sum / static_cast<double>(g.per_seed.size());
    const Interval t = MeanInterval(g.per_seed);
    // An accuracy's interval stays inside [0, 1]; a loss's (or a ratio of losses) above 0.
    g.lo = std::max(0.0, t.lo);
    g.hi = accuracy ? std::min(1.0, t.hi) : t.hi;
    g.interval = fmt::format("Student-t over {} seeds", g.per_seed.size());
  } else {
    g.score = g.per_seed[best];
    const std::string which =
        done.size() == 1 ? "1 run" : fmt::format("the best of {} seeds", done.size());
    if (accuracy && k.relative_lo == 0) {
      double trials = 0, hits = 0;
      MeanOver(*done[best], lo, hi, &trials, &hits);
      const Interval cp = ClopperPearson(static_cast<long>(hits), static_cast<long>(trials));
      g.lo = cp.lo;
      g.hi = cp.hi;
      g.interval =
          fmt::format("Clopper-Pearson, {} ({} sequences)", which, static_cast<long>(trials));
    } else {
      g.lo = g.hi = g.score;
      g.interval = "none (" + which + ")";
    }
  }
  // The curve over every length the runs evaluated (the first run's lengths).
  g.length = done[0]->length;
  for (size_t i = 0; i < g.length.size(); ++i) {
    double sum = 0, least = std::numeric_limits<double>::infinity(), most = -least;
    int n = 0;
    for (const RunScores* r : done) {
      if (i >= r->metric.size() || r->length[i] != g.length[i]) continue;
      sum += r->metric[i];
      least = std::min(least, r->metric[i]);
      most = std::max(most, r->metric[i]);
      ++n;
    }
    g.curve_mean.push_back(n ? sum / n : std::numeric_limits<double>::quiet_NaN());
    g.curve_min.push_back(n ? least : std::numeric_limits<double>::quiet_NaN());
    g.curve_max.push_back(n ? most : std::numeric_limits<double>::quiet_NaN());
  }
  return g;
}

}  // namespace

std::vector<std::string> ClaimRunFiles(const std::string& runs_dir) {
  std::vector<std::string> out;
  if (!fs::is_directory(runs_dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(runs_dir)) {
    if (!e.is_regular_file() || e.path().extension() != ".h5") continue;
    const std::string name = e.path().filename().string();
    if (name == "summary.h5" || name.find(".ckpt.") != std::string::npos ||
        name == "verdict.h5")
      continue;
    try {
      h5::Reader r(e.path().string());
      if (!r.root().HasAttr("format") || r.root().AttrString("format").rfind("lexp-run", 0) != 0)
        continue;
    } catch (const Error&) {
      continue;  // not an HDF5 file lexp can read: not a run
    }
    out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Verdict JudgeCriterion(const ClaimCriterion& k, const std::string& runs_dir) {
  return JudgeCriterion(k, ClaimRunFiles(runs_dir), runs_dir);
}

Verdict JudgeCriterion(const ClaimCriterion& k, const std::vector<std::string>& run_files,
                       const std::string& runs_dir) {
  std::vector<Comparison> comparisons;
  std::vector<std::string> labels;  // in order of appearance, once each
  auto add = [&](const std::string& l) {
    if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
  };
  for (const auto& h : k.holds) {
    comparisons.push_back(ParseComparison(h, "criterion"));
    add(comparisons.back().a);
    if (!comparisons.back().b_is_number) add(comparisons.back().b);
  }
  for (const auto& l : k.also) add(l);
  std::map<std::string, std::vector<RunScores>> runs;
  Verdict v;
  for (const auto& path : run_files) {
    if (!fs::exists(path)) continue;  // a planned run that never started: no completed run
    RunScores r = ReadRun(path, k.metric);
    if (std::find(labels.begin(), labels.end(), r.label) == labels.end()) continue;
    v.train_max_length = std::max(v.train_max_length, r.train_max_length);
    runs[r.label].push_back(std::move(r));
  }
  std::vector<std::string> missing;
  for (const auto& label : labels) {
    v.groups.push_back(ScoreGroup(label, runs[label], k, k.length_lo, k.length_hi));
    if (v.groups.back().per_seed.empty()) missing.push_back(label);
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    v.verdict = "not testable";
    v.reason = "no completed run of " + list + " in '" + runs_dir + "'";
    for (const auto& c : comparisons) {
      ComparisonResult r;
      r.comparison = c;
      v.comparisons.push_back(r);
    }
    return v;
  }
  auto group = [&](const std::string& label) -> const GroupScore& {
    return *std::find_if(v.groups.begin(), v.groups.end(),
                         [&](const GroupScore& g) { return g.label == label; });
  };
  int direction = 0, beyond = 0;
  for (const auto& c : comparisons) {
    // A comparison over its own span scores its labels there; otherwise the groups' scores.
    const GroupScore a = c.lo > 0 ? ScoreGroup(c.a, runs[c.a], k, c.lo, c.hi) : group(c.a);
    GroupScore b;  // B as a number: a point with no interval
    b.score = b.lo = b.hi = c.b_value;
    if (!c.b_is_number) b = c.lo > 0 ? ScoreGroup(c.b, runs[c.b], k, c.lo, c.hi) : group(c.b);
    // A side without an interval (one run's loss or ratio) orders, it does not separate.
    const bool intervals = a.lo < a.hi && (c.b_is_number || b.lo < b.hi);
    ComparisonResult r{c, c.greater ? a.score > b.score : a.score < b.score,
                       intervals && (c.greater ? a.lo > b.hi : a.hi < b.lo),
                       {a.score, a.lo, a.hi},
                       {b.score, b.lo, b.hi}};
    direction += r.in_direction;
    beyond += r.beyond_intervals;
    v.comparisons.push_back(r);
  }
  const int n = static_cast<int>(comparisons.size());
  if (beyond == n) {
    v.verdict = "reproduced";
  } else if (2 * direction >= n) {
    v.verdict = "partly";
  } else {
    v.verdict = "not reproduced";
  }
  v.reason = fmt::format("{} of {} comparisons hold beyond the 95% intervals, {} in direction",
                         beyond, n, direction);
  return v;
}

}  // namespace lexp
