#include "experiments/reproduce/criterion.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "analysis/binomial.h"
#include "analysis/difference_intervals.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_data.h"

namespace lexp {

const std::vector<std::pair<std::string, std::string>>& ComputeAxes() {
  static const std::vector<std::pair<std::string, std::string>> axes = {
      {"tokens", "training tokens"},
      {"flops", "training FLOPs (matrix products, forward and backward)"},
      {"seconds", "training seconds (wall clock of the steps)"},
      {"steps", "training steps"},
  };
  return axes;
}

namespace {

namespace fs = std::filesystem;

// A compute criterion's curve of one run: at each evaluation during training (its step), the
// compute before it and the metric's mean over the lengths in [lo, hi].
std::vector<RunPoint> ComputeCurve(const RunScores& r, int lo, int hi) {
  std::vector<RunPoint> curve;
  std::vector<int> count;
  for (const RunPoint& p : r.points) {
    if (p.length < lo || p.length > hi) continue;
    if (curve.empty() || curve.back().step != p.step) {
      curve.push_back({p.x, 0, 0, 0, p.step});
      count.push_back(0);
    }
    curve.back().metric += p.metric;
    ++count.back();
  }
  for (size_t i = 0; i < curve.size(); ++i) curve[i].metric /= count[i];
  return curve;
}

// The metric of a curve at compute c, linearly between the evaluations around it; NaN outside.
double AtCompute(const std::vector<RunPoint>& curve, double c) {
  for (size_t i = 0; i < curve.size(); ++i) {
    if (curve[i].x == c) return curve[i].metric;
    if (i + 1 < curve.size() && curve[i].x < c && c < curve[i + 1].x) {
      const double w = (c - curve[i].x) / (curve[i + 1].x - curve[i].x);
      return (1 - w) * curve[i].metric + w * curve[i + 1].metric;
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// The compute at which a curve first reaches `target` (at or below it when smaller is better),
// linearly between the evaluations around it; the run's whole compute, `censored`, when it never
// does.
double ComputeToReach(const std::vector<RunPoint>& curve, double target, bool larger_better,
                      double total, bool* censored) {
  auto reached = [&](double m) { return larger_better ? m >= target : m <= target; };
  for (size_t i = 0; i < curve.size(); ++i) {
    if (!reached(curve[i].metric)) continue;
    if (i == 0) return curve[0].x;
    const double w = (curve[i - 1].metric - target) / (curve[i - 1].metric - curve[i].metric);
    return curve[i - 1].x + w * (curve[i].x - curve[i - 1].x);
  }
  *censored = true;
  return total;
}

// One run's score over the lengths [lo, hi] (see criterion.h); NaN when it has no value there.
// An /eval accuracy also gives its pooled counts (samples, and successes = score x samples).
double ScoreRun(const RunScores& r, const ClaimCriterion& k, int lo, int hi, double at_compute,
                double* samples = nullptr, double* successes = nullptr,
                bool* censored = nullptr) {
  if (!std::isnan(k.reach)) {
    bool unreached = false;
    const double c = ComputeToReach(ComputeCurve(r, lo, hi), k.reach,
                                    FindCriterionMetric(k.metric, "criterion.metric").larger_is_better,
                                    r.total_compute, &unreached);
    if (censored) *censored = unreached;
    return c;
  }
  if (!k.compute.empty()) return AtCompute(ComputeCurve(r, lo, hi), at_compute);
  if (censored) *censored = r.limit_censored;
  double sum = 0, n = 0, trials = 0, hits = 0;
  for (const RunPoint& p : r.points)
    if (p.length >= lo && p.length <= hi) {
      sum += p.metric;
      n += 1;
      trials += p.samples;
      hits += std::round(p.metric * p.samples);
    }
  if (samples) *samples = trials;
  if (successes) *successes = hits;
  return n > 0 ? sum / n : std::numeric_limits<double>::quiet_NaN();
}

// A label's interval at `confidence` (see criterion.h); its point when it has none.
Interval GroupInterval(const GroupScore& g, double confidence) {
  if (!g.has_interval) return {g.score, g.score};
  if (g.by_mean) {
    const Interval t = MeanInterval(g.per_seed, confidence);
    // An accuracy's interval stays inside [0, 1]; a loss's (or a ratio of losses) above 0; a
    // share of a gap may be negative (the intervention widens it).
    return {g.signed_score ? t.lo : std::max(0.0, t.lo),
            g.is_fraction ? std::min(1.0, t.hi) : t.hi};
  }
  // The best of k seeds: Bonferroni over the k it was chosen from.
  return ClopperPearson(g.successes, g.trials, 1 - (1 - confidence) / g.candidates);
}

// The test of one comparison: its difference A - B and the interval at any confidence.
struct ComparisonTest {
  std::string name = "none";
  bool testable = false;
  double difference = 0;
  int paired_seeds = 0;
  std::function<Interval(double)> interval;
};

ComparisonTest TestComparisonOnSeeds(const GroupScore& a, const GroupScore& b, bool b_is_number);

// Grid readings (extrapolation limits) that tie on every seed give a t interval of zero width,
// which is no measure of their uncertainty (the true limits lie anywhere up to the next grid
// length): such a comparison orders but is not tested.
ComparisonTest TestComparison(const GroupScore& a, const GroupScore& b, bool b_is_number) {
  ComparisonTest t = TestComparisonOnSeeds(a, b, b_is_number);
  if (t.testable && (a.grid_readings || b.grid_readings)) {
    const Interval i = t.interval(0.95);
    if (!(i.hi > i.lo)) {
      t.testable = false;
      t.name += " (no spread: identical grid readings)";
    }
  }
  return t;
}

ComparisonTest TestComparisonOnSeeds(const GroupScore& a, const GroupScore& b, bool b_is_number) {
  ComparisonTest t;
  t.difference = a.score - b.score;
  if (b_is_number) {
    if (!a.has_interval) return t;
    t.name = a.by_mean ? "Student-t" : "Clopper-Pearson";
    t.testable = true;
    t.interval = [a, number = b.score](double confidence) {
      const Interval i = GroupInterval(a, confidence);
      return Interval{i.lo - number, i.hi - number};
    };
    return t;
  }
  // Paired when every seed both have comes from one trained model or pre-training on both sides.
  std::vector<double> da, db;
  bool shared = true;
  for (size_t i = 0; i < a.seeds.size(); ++i) {
    const auto j = std::find(b.seeds.begin(), b.seeds.end(), a.seeds[i]);
    if (j == b.seeds.end()) continue;
    const size_t jb = static_cast<size_t>(j - b.seeds.begin());
    shared = shared && !a.origins[i].empty() && a.origins[i] == b.origins[jb];
    da.push_back(a.per_seed[i]);
    db.push_back(b.per_seed[jb]);
  }
  if (shared && !da.empty()) {
    t.name = "paired t";
    t.paired_seeds = static_cast<int>(da.size());
    double sum = 0;
    for (size_t i = 0; i < da.size(); ++i) sum += da[i] - db[i];
    t.difference = sum / static_cast<double>(da.size());
    if (da.size() < 2) return t;  // one common seed: no interval
    t.testable = true;
    t.interval = [da, db](double confidence) { return PairedDifference(da, db, confidence); };
    return t;
  }
  if (a.by_mean && b.by_mean) {
    t.name = "Welch t";
    t.testable = true;
    t.interval = [pa = a.per_seed, pb = b.per_seed](double confidence) {
      return WelchDifference(pa, pb, confidence);
    };
    return t;
  }
  if (a.has_interval && b.has_interval) {
    t.name = "MOVER";
    t.testable = true;
    t.interval = [a, b](double confidence) {
      return MoverDifference(a.score, GroupInterval(a, confidence), b.score,
                             GroupInterval(b, confidence));
    };
  }
  return t;
}

// One label's score over the lengths [lo, hi] (see criterion.h), its interval and its curve.
GroupScore ScoreGroup(const std::string& label, const std::vector<RunScores>& runs,
                      const ClaimCriterion& k, int lo, int hi, double at_compute) {
  const CriterionMetric& metric = FindCriterionMetric(k.metric, "criterion.metric");
  const bool larger_better = metric.larger_is_better;
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
    bool censored = false;
    double s = ScoreRun(*r, k, lo, hi, at_compute, nullptr, nullptr, &censored);
    g.censored += censored;
    LEXP_INPUT_CHECK(
        !std::isnan(s),
        k.compute.empty()
            ? fmt::format("criterion: run '{}' (seed {}) evaluated no length in [{}, {}]", label,
                          r->seed, lo, hi)
            : fmt::format("criterion: run '{}' (seed {}) has no evaluation during training at a "
                          "length in [{}, {}] around {} {:.4g}",
                          label, r->seed, lo, hi, k.compute, at_compute));
    if (k.relative_lo > 0) {
      const double base = ScoreRun(*r, k, k.relative_lo, k.relative_hi, at_compute);
      LEXP_INPUT_CHECK(!std::isnan(base),
                       fmt::format("criterion: run '{}' (seed {}) evaluated no length in "
                                   "relative_to [{}, {}]",
                                   label, r->seed, k.relative_lo, k.relative_hi));
      s /= base;
    }
    g.seeds.push_back(r->seed);
    g.origins.push_back(r->origin);
    g.per_seed.push_back(s);
    const double cur = g.per_seed.back();
    if (best < 0 || (larger_better ? cur > g.per_seed[best] : cur < g.per_seed[best]))
      best = static_cast<int>(g.per_seed.size()) - 1;
  }
  if (done.empty()) return g;
  g.is_fraction = metric.is_fraction;
  g.signed_score = k.metric == "gap_share";
  g.grid_readings = k.metric.size() > 6 && k.metric.substr(k.metric.size() - 6) == "_limit";
  g.by_mean = k.seeds == "mean" && done.size() >= 2;
  if (g.by_mean) {
    double sum = 0;
    for (const double s : g.per_seed) sum += s;
    g.score = sum / static_cast<double>(g.per_seed.size());
    g.interval = fmt::format("Student-t over {} seeds", g.per_seed.size());
    g.has_interval = true;
  } else {
    g.score = g.per_seed[best];
    g.candidates = static_cast<int>(done.size());
    const std::string which =
        done.size() == 1 ? "1 run" : fmt::format("the best of {} seeds", done.size());
    if (metric.is_fraction && k.relative_lo == 0 && k.compute.empty()) {
      double trials = 0, hits = 0;
      ScoreRun(*done[best], k, lo, hi, at_compute, &trials, &hits);
      g.trials = static_cast<long>(trials);
      g.successes = static_cast<long>(hits);
      g.interval = fmt::format("Clopper-Pearson, {} ({} sequences{})", which, g.trials,
                               g.candidates > 1 ? ", Bonferroni over the seeds" : "");
      g.has_interval = true;
    } else {
      g.interval = "none (" + which + ")";
    }
  }
  const Interval shown = GroupInterval(g, 0.95);
  g.lo = shown.lo;
  g.hi = shown.hi;
  // The curve over every length the runs evaluated (the first run's lengths), or over the
  // evaluations during training, matched by step (x: the mean compute over the runs).
  std::vector<std::vector<RunPoint>> curves;
  for (const RunScores* r : done)
    curves.push_back(k.compute.empty() ? r->points : ComputeCurve(*r, k.length_lo, k.length_hi));
  for (size_t i = 0; i < curves[0].size(); ++i) {
    double sum = 0, x = 0, least = std::numeric_limits<double>::infinity(), most = -least;
    int n = 0;
    for (const auto& c : curves) {
      if (i >= c.size() || c[i].length != curves[0][i].length || c[i].step != curves[0][i].step)
        continue;
      sum += c[i].metric;
      x += c[i].x;
      least = std::min(least, c[i].metric);
      most = std::max(most, c[i].metric);
      ++n;
    }
    g.x.push_back(x / n);
    g.curve_mean.push_back(sum / n);
    g.curve_min.push_back(least);
    g.curve_max.push_back(most);
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
  for (const auto& p : k.premises) {
    comparisons.push_back(ParseComparison(p, "criterion"));
    comparisons.back().premise = true;
    add(comparisons.back().a);
    if (!comparisons.back().b_is_number) add(comparisons.back().b);
  }
  for (const auto& l : k.also) add(l);
  // Each label by its own metric (LABEL@METRIC) or the criterion's: the run labels read per
  // metric, and the compared labels each (metric, run label) scores.
  std::map<std::string, std::vector<std::string>> labels_by_metric;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> compared_as;
  for (const auto& l : labels) {
    const LabelMetric lm = SplitLabelMetric(l, k.metric);
    labels_by_metric[lm.metric].push_back(lm.label);
    compared_as[{lm.metric, lm.label}].push_back(l);
  }
  std::map<std::string, std::vector<RunScores>> runs;
  Verdict v;
  double least_total = std::numeric_limits<double>::infinity();
  for (const auto& path : run_files) {
    if (!fs::exists(path)) continue;  // a planned run that never started: no completed run
    for (const auto& [metric, names] : labels_by_metric) {
      ClaimCriterion km = k;
      km.metric = metric;
      for (RunScores& r : ReadRun(path, km, names)) {
        v.train_max_length = std::max(v.train_max_length, r.train_max_length);
        if (r.state == "completed") least_total = std::min(least_total, r.total_compute);
        for (const auto& as : compared_as[{metric, r.label}]) {
          runs[as].push_back(r);
          runs[as].back().label = as;
        }
      }
    }
  }
  // Equal compute: the claim's, or the most that every compared run spent.
  if (!k.compute.empty()) v.at_compute = k.at_compute > 0 ? k.at_compute : least_total;
  std::vector<std::string> missing;
  auto by_own_metric = [&](const std::string& label) {
    ClaimCriterion km = k;
    km.metric = SplitLabelMetric(label, k.metric).metric;
    return km;
  };
  for (const auto& label : labels) {
    v.groups.push_back(ScoreGroup(label, runs[label], by_own_metric(label), k.length_lo,
                                  k.length_hi, v.at_compute));
    if (!v.groups.back().per_seed.empty()) continue;
    std::set<std::string> states;  // why its runs were not scored
    for (const auto& r : runs[label])
      if (r.state != "completed") states.insert(r.state);
    missing.push_back(states.empty() ? label
                                     : fmt::format("{} ({})", label, fmt::join(states, ", ")));
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
  const int m = static_cast<int>(k.holds.size());  // the claim's own; premises are not counted
  const double family = BonferroniConfidence(m);
  for (const auto& c : comparisons) {
    // A comparison over its own span scores its labels there; otherwise the groups' scores.
    const GroupScore a = c.lo > 0 ? ScoreGroup(c.a, runs[c.a], by_own_metric(c.a), c.lo, c.hi,
                                               v.at_compute)
                                  : group(c.a);
    GroupScore b;  // B as a number: a point with no interval
    b.score = b.lo = b.hi = c.b_value;
    if (!c.b_is_number)
      b = c.lo > 0 ? ScoreGroup(c.b, runs[c.b], by_own_metric(c.b), c.lo, c.hi, v.at_compute)
                   : group(c.b);
    ComparisonResult r;
    r.comparison = c;
    r.in_direction = c.equivalent ? std::abs(a.score - b.score) < c.margin
                     : c.greater  ? a.score > b.score
                                  : a.score < b.score;
    r.a = {a.score, a.lo, a.hi};
    r.b = {b.score, b.lo, b.hi};
    const ComparisonTest t = TestComparison(a, b, c.b_is_number);
    r.test = t.name;
    r.paired_seeds = t.paired_seeds;
    if (c.equivalent && t.testable) {
      // Two one-sided tests at 5% (Schuirmann 1987): equivalent when the 90% interval of A - B
      // lies inside (-D, D); shown different when the 95% interval lies wholly outside it.
      const Interval d90 = t.interval(0.90), d95 = t.interval(0.95);
      r.test += ", equivalence (90% interval)";
      r.difference = {t.difference, d90.lo, d90.hi};
      r.significant_for = r.family_for = d90.lo > -c.margin && d90.hi < c.margin;
      r.significant_against = r.family_against = d95.lo >= c.margin || d95.hi <= -c.margin;
      // A censored side is a lower bound: no equivalence, nor a difference, can be shown with it.
      if (a.censored + b.censored > 0)
        r.significant_for = r.family_for = r.significant_against = r.family_against = false;
    } else if (t.testable) {
      const Interval d95 = t.interval(0.95), dm = t.interval(family);
      r.difference = {t.difference, d95.lo, d95.hi};
      auto on_claimed_side = [&](const Interval& d) { return c.greater ? d.lo > 0 : d.hi < 0; };
      auto on_other_side = [&](const Interval& d) { return c.greater ? d.hi < 0 : d.lo > 0; };
      r.significant_for = on_claimed_side(d95);
      r.significant_against = on_other_side(d95);
      r.family_for = on_claimed_side(dm);
      r.family_against = on_other_side(dm);
      // A censored value is a lower bound (a run that never reached the target counts its whole
      // budget; an extrapolation limit that every evaluated length passed, the longest length):
      // on the side claimed smaller it cannot support the claim, on the side claimed larger it
      // cannot contradict it.
      if ((c.greater ? b.censored : a.censored) > 0) r.significant_for = r.family_for = false;
      if ((c.greater ? a.censored : b.censored) > 0)
        r.significant_against = r.family_against = false;
    } else {
      r.difference = {t.difference, t.difference, t.difference};
    }
    v.comparisons.push_back(r);
  }
  int all_for = 0, some_for = 0, some_against = 0, direction = 0;
  std::string unmet;  // the premises not significant in their direction
  for (const auto& r : v.comparisons) {
    if (r.comparison.premise) {
      if (!r.significant_for)
        unmet += fmt::format("{}{} ({:+.3f} [{:+.3f}, {:+.3f}])", unmet.empty() ? "" : "; ",
                             r.comparison.Text().substr(9), r.difference.score, r.difference.lo,
                             r.difference.hi);
      continue;
    }
    all_for += r.significant_for;
    some_for += r.family_for;
    some_against += r.family_against;
    direction += r.in_direction;
  }
  if (some_against > 0) {
    v.verdict = "contradicted";
  } else if (all_for == m) {
    v.verdict = "reproduced";
  } else if (some_for > 0) {
    v.verdict = "partly";
  } else {
    v.verdict = "no effect";
  }
  v.reason = fmt::format(
      "{} of {} comparisons significant for the claim at 95%; at Bonferroni's {:.4g}: {} for, {} "
      "against; {} in direction",
      all_for, m, family, some_for, some_against, direction);
  if (!unmet.empty()) {
    v.verdict = "not testable";
    v.reason = "premise not met at 95%: " + unmet + "; the claim's own comparisons: " + v.reason;
  }
  return v;
}

std::string VerdictRules() {
  return "Each comparison \"A > B\" is tested on the difference A - B and its 95% interval: "
         "paired (the Student-t interval of the per-seed differences) when the runs of A and B of "
         "each seed come from the same trained model or the same pre-training (decided from the "
         "run files' weights_from and init_from, not declared); Welch's t between two groups of "
         "independent runs each averaged over seeds; MOVER (Zou & Donner 2008) from each side's "
         "own interval otherwise (a Clopper-Pearson interval of one run's sequences); against a "
         "number, A's own interval. A side without an interval (one run's loss) orders but is "
         "never significant. A difference is significant when its interval lies wholly on one "
         "side of 0. Verdicts: reproduced, every comparison significant in the claimed direction "
         "at 95% (an intersection-union test: the claim's level stays 5%); contradicted, some "
         "comparison significant against the claim; partly, some significant for it and none "
         "against; no effect, none significant; the last three at Bonferroni's level 1 - 0.05/m "
         "over the claim's m comparisons. Not testable: a compared label has no completed run, or "
         "a premise of the claim (requires, e.g. the task learnt at the training lengths) is not "
         "significant in its direction at 95%, whatever the claim's own comparisons show. A "
         "control \"A ~ B within D\" (a premise where the claim's mechanism is absent) is met "
         "when A and B are shown equivalent: the 90% interval of A - B inside (-D, D), two "
         "one-sided tests at 5% (Schuirmann 1987). "
         "The best of k seeds (seeds = \"max\") has the Clopper-Pearson interval of the best seed "
         "at level 1 - 0.05/k, so its selection widens the interval; where a claim fine-tunes, each "
         "seed starts from its own pre-training, so the seeds' spread includes the pre-training's. "
         "A criterion that scores the compute to reach a value (reach) counts a run that never "
         "reaches it at its whole training, a lower bound: such a run on the side claimed to reach "
         "sooner makes that comparison not significant for the claim, and on the side claimed "
         "slower it cannot contradict it. An extrapolation limit (loss_limit, exact_match_limit, "
         "token_accuracy_limit: lexp base-law's, relative tolerance 0.1; a run that did not learn "
         "the task is not scored) that every evaluated length passed is likewise a lower bound: "
         "on the side claimed smaller it cannot support the claim, on the side claimed larger it "
         "cannot contradict it, and a control with it is not met; limits (lengths of the "
         "evaluation grid) whose seeds tie so that the t interval has no width order but are "
         "not tested.";
}

}  // namespace lexp
