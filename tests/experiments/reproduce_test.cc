// The reproduction gallery (experiments/reproduce/): every built-in claim parses and its stages
// make valid recipes at both budgets; each claim's criterion passes on hand-made run files that
// order its labels as it claims and fails on the reverse order; the interval and verdict rules on
// hand-made files; bad claim files name the key; and one claim end to end at a tiny budget, its
// verdict file, figure and table row.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "analysis/binomial.h"
#include "analysis/difference_intervals.h"
#include "experiments/core/build_info.h"
#include "experiments/reproduce/claim.h"
#include "experiments/reproduce/criterion.h"
#include "experiments/reproduce/gallery.h"
#include "experiments/reproduce/verdict_file.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_data.h"
#include "notebooks_cpp/figures.h"
#include "tests/testing/lexp_process.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

// A list of values built out of line: GCC 12.2 at -O2/-O3 -march=x86-64-v4 (AVX-512) stored
// {1, 1, 1, 1} for `value = {1.0, 1.0, 1.0, 0.0}` inlined in a loop of this file (the value
// numbering of a vectorized constant store; -fno-tree-fre or -fno-tree-slp-vectorize avoid it).
__attribute__((noinline)) std::vector<double> Values(std::initializer_list<double> v) {
  return std::vector<double>(v.begin(), v.end());
}

// A hand-made run file: only what a criterion reads.
struct FakeRun {
  std::string label;  // without the seed suffix
  int seed = 1;
  std::string state = "completed";
  std::vector<int64_t> length;
  // The metric at each length: every /eval metric gets it, and so does the JS divergence to the
  // reference at that probe length (js_vs_reference, one layer and head) and every evaluation
  // during training at that length (10 steps of 1 FLOP, 1 token and 1 second each, evaluated at
  // steps 0 and 10; a run's own `history` replaces them).
  std::vector<double> value;
  int samples = 100;
  int train_max_length = 16;
  // Its own evaluations during training: {step, length, value} rows, and the FLOPs of each step.
  std::vector<std::tuple<int64_t, int64_t, double>> history = {};
  std::vector<double> step_flops = {};
  // Its own JS divergences at every probe length, [2 layers, 2 heads, 2 reference heads].
  std::vector<double> js = {};
  // The trained model it evaluates (weights_from) and the pre-training it was fine-tuned from
  // (init_from); empty: trained from scratch.
  std::string weights_from = "", init_from = "";
  // A diagnosis (lexp diagnose): each intervention's share of the gap at every length.
  std::map<std::string, std::vector<double>> shares = {};
};

void WriteFakeRun(const fs::path& dir, const FakeRun& r) {
  fs::create_directories(dir);
  // As lexp names them: rope-seed2.h5, and an evaluation of it rope-seed2+pix4.h5.
  const auto plus = r.label.find('+');
  const std::string label = r.label.substr(0, plus) + "-seed" + std::to_string(r.seed) +
                            (plus == std::string::npos ? "" : r.label.substr(plus));
  h5::Writer w((dir / (label + ".h5")).string());
  const h5::Group& root = w.root();
  root.SetAttr("format", "lexp-run/2");
  root.SetAttr("label", label);
  root.SetAttr("seed", r.seed);
  root.SetAttr("train_max_length", r.train_max_length);
  if (!r.weights_from.empty()) root.SetAttr("weights_from", r.weights_from);
  if (!r.init_from.empty()) root.SetAttr("init_from", r.init_from);
  root.CreateGroup("status").SetAttr("state", r.state);
  const h5::Group eval = root.CreateGroup("eval");
  const uint64_t L = r.length.size();
  eval.WriteInts("length", r.length, {L}, "length");
  for (const char* m : {"exact_match", "token_accuracy", "loss"})
    eval.WriteDoubles(m, r.value, {L}, "length");
  eval.WriteInts("samples", std::vector<int64_t>(L, r.samples), {L}, "length");
  const h5::Group an = root.CreateGroup("analysis");
  // Attention entropy at every length as a probe length: the value again.
  an.WriteInts("probe_length", r.length, {L}, "probe");
  an.WriteDoubles("entropy_mean", r.value, {L}, "probe");
  const h5::Group geo = an.CreateGroup("geometry");
  for (uint64_t i = 0; i < L; ++i) {
    const h5::Group g = geo.CreateGroup("length_" + std::to_string(r.length[i]));
    g.SetAttr("length", r.length[i]);
    if (r.js.empty()) {
      g.WriteDoubles("js_vs_reference", {r.value[i]}, {1, 1, 1}, "layer,head,reference_head");
    } else {
      g.WriteDoubles("js_vs_reference", r.js, {2, 2, 2}, "layer,head,reference_head");
    }
    // The attention on the first token: the value again (one layer, one head).
    g.WriteDoubles("head_sink_mass", {r.value[i]}, {1, 1}, "layer,head");
  }
  // The move under a shift of 16: the value again (one layer, one head); at 1024, a distractor.
  const h5::Group shift = an.CreateGroup("position_shift");
  shift.WriteDoubles("shift", {16, 1024}, {2}, "shift");
  shift.WriteInts("length", r.length, {L}, "probe");
  std::vector<double> move = r.value;
  move.resize(2 * L, 99.0);
  shift.WriteDoubles("row_l1", move, {2, L, 1, 1}, "shift,probe,layer,head");
  // The position probe's error relative to chance after block 1: the value at the training length
  // (the embedding's, residual 0, is never read).
  double at_train = r.value.empty() ? 1.0 : r.value[0];
  for (uint64_t i = 0; i < L; ++i)
    if (r.length[i] == r.train_max_length) at_train = r.value[i];
  const h5::Group probes = an.CreateGroup("position_probes");
  probes.WriteDoubles("index_rmse_held_out", {0.0, 10.0 * at_train}, {2}, "residual");
  probes.WriteDoubles("index_chance_held_out", {10.0, 10.0}, {2}, "residual");
  std::vector<double> flops = r.step_flops;
  auto history = r.history;
  if (flops.empty()) {
    flops.assign(10, 1.0);
    for (uint64_t i = 0; i < L; ++i)
      for (const int64_t step : {0, 10}) history.emplace_back(step, r.length[i], r.value[i]);
    std::sort(history.begin(), history.end());
  }
  const uint64_t S = flops.size(), R = history.size();
  const h5::Group train = root.CreateGroup("train");
  std::vector<int64_t> steps(S), tokens(S, 1);
  for (uint64_t i = 0; i < S; ++i) steps[i] = static_cast<int64_t>(i);
  train.WriteInts("step", steps, {S}, "step");
  train.WriteInts("tokens", tokens, {S}, "step");
  train.WriteDoubles("flops", flops, {S}, "step");
  train.WriteDoubles("tokens_per_s", std::vector<double>(S, 1.0), {S}, "step");
  const h5::Group h = train.CreateGroup("eval_history");
  std::vector<int64_t> h_step, h_length;
  std::vector<double> h_value;
  for (const auto& [step, length, value] : history) {
    h_step.push_back(step);
    h_length.push_back(length);
    h_value.push_back(value);
  }
  h.WriteInts("step", h_step, {R}, "row");
  h.WriteInts("length", h_length, {R}, "row");
  for (const char* m : {"exact_match", "token_accuracy", "loss"})
    h.WriteDoubles(m, h_value, {R}, "row");
  if (!r.shares.empty()) {
    const h5::Group d = root.CreateGroup("diagnosis");
    std::string names;
    std::vector<double> share;
    for (const auto& [name, values] : r.shares) {
      names += (names.empty() ? "" : ",") + name;
      share.insert(share.end(), values.begin(), values.end());
    }
    d.SetAttr("interventions", names);
    d.SetAttr("not_applied", "position_remap: 'rope' is not an absolute encoding");
    d.WriteInts("length", r.length, {L}, "length");
    d.WriteDoubles("share", share, {r.shares.size(), L}, "intervention,length");
  }
  w.Commit();
}

// The claim's labels ordered as the comparisons of one span say: level(A) > level(B) for every
// "A > B" (and the reverse for "<"), by longest chains; a control's "A ~ B" leaves them level.
std::map<std::string, int> Levels(const ClaimCriterion& k, const std::vector<Comparison>& span) {
  std::map<std::string, int> level;
  for (const auto& h : k.holds) {
    const Comparison c = ParseComparison(h, "test");
    level[c.a];
    if (!c.b_is_number) level[c.b];
  }
  for (const auto& p : k.premises) {
    const Comparison c = ParseComparison(p, "test");
    level[c.a];
    if (!c.b_is_number) level[c.b];
  }
  for (const auto& a : k.also) level[a];
  for (size_t pass = 0; pass < level.size() + 1; ++pass)
    for (const Comparison& c : span) {
      if (c.b_is_number || c.equivalent) continue;  // a control's labels stay level
      const std::string& hi = c.greater ? c.a : c.b;
      const std::string& lo = c.greater ? c.b : c.a;
      level[hi] = std::max(level[hi], level[lo] + 1);
    }
  return level;
}

// Runs of every label of the claim over three seeds. In each span of lengths (the criterion's,
// and each comparison's own), every label's value is c + d (level - L0): ordered as that span's
// comparisons between labels say, and on the claimed side of the number c that its comparisons
// with a number name (L0 between the levels that must lie below c and those above); reversed,
// the values are mirrored about c, so every comparison turns round. relative_to lengths hold 1.
// An extrapolation limit (*_limit) is a length of the evaluation grid, read from /eval: each
// label's limit an integer L > N (N the criterion's length) meeting every comparison, each turned
// round when reversed (premises never), by relaxing "A > B" to A >= B + 8 until all hold; written
// as a learnt score (a loss at N below the one at length 1) flat at N and L that fails at L + 1
// (seed s adds (s - 2) x min(i, 3) to the i-th label's L, so that a difference between two labels
// varies over seeds).
void WriteOrderedLimitRuns(const fs::path& dir, const ClaimCriterion& k, bool reverse) {
  const int N = k.length_lo, gap = 8;
  std::vector<Comparison> comps;
  for (const auto& h : k.holds) comps.push_back(ParseComparison(h, "test"));
  for (const auto& p : k.premises) comps.push_back(ParseComparison("requires " + p, "test"));
  std::map<std::string, double> limit;
  for (const auto& c : comps) {
    limit[c.a] = N + 4 * gap;
    if (!c.b_is_number) limit[c.b] = N + 4 * gap;
  }
  for (int pass = 0; pass < 100; ++pass)
    for (const auto& c : comps) {
      const bool greater = c.greater != (reverse && !c.premise);
      const double b = c.b_is_number ? c.b_value : limit[c.b];
      if (greater && limit[c.a] < b + gap) limit[c.a] = std::floor(b) + gap;
      if (!greater && limit[c.a] > b - gap) limit[c.a] = std::ceil(b) - gap;
    }
  std::set<std::string> written;  // run labels: one metric each (LABEL@METRIC or the criterion's)
  int index = 0;  // the i-th label's seeds spread by i + 1: differences between labels vary
  for (const auto& [label, L] : limit) {
    ++index;
    ASSERT_GT(L, N + 3) << label << ": a limit beyond the training length";
    const LabelMetric lm = SplitLabelMetric(label, k.metric);
    ASSERT_TRUE(written.insert(lm.label).second) << lm.label << " by two metrics";
    const bool loss = lm.metric == "loss_limit";
    for (int seed = 1; seed <= 3; ++seed) {
      FakeRun r;
      r.label = lm.label;
      r.seed = seed;
      r.train_max_length = N;
      const auto at = static_cast<int64_t>(L) + (seed - 2) * std::min(index, 3);
      r.length = {1, N, at, at + 1};  // learnt: the loss at N below the shortest length's
      r.value = loss ? Values({2.0, 1.0, 1.0, 10.0}) : Values({1.0, 1.0, 1.0, 0.0});
      WriteFakeRun(dir, r);
    }
  }
}

void WriteOrderedRuns(const fs::path& dir, const ClaimCriterion& k, bool reverse) {
  const std::string& m = k.metric;
  if (m.size() > 6 && m.substr(m.size() - 6) == "_limit") return WriteOrderedLimitRuns(dir, k, reverse);
  std::map<std::pair<int, int>, std::vector<Comparison>> spans;
  spans[{k.length_lo, k.length_hi}];
  std::vector<std::string> all = k.holds;
  for (const auto& p : k.premises) all.push_back("requires " + p);
  for (const auto& h : all) {
    const Comparison c = ParseComparison(h, "test");
    spans[c.lo > 0 ? std::make_pair(c.lo, c.hi) : std::make_pair(k.length_lo, k.length_hi)]
        .push_back(c);
  }
  std::map<std::string, std::map<int64_t, double>> value;  // label -> length -> value (seed 0)
  // Wider spans first: a span inside another that shares a length with it (C1's 33..64 in 33..256)
  // writes that length last, so that both hold (the inner one's values lie on the claimed side of
  // its number, and the outer one's order keeps holding over the lengths it adds).
  std::vector<std::pair<std::pair<int, int>, std::vector<Comparison>>> by_width(spans.begin(),
                                                                                 spans.end());
  std::stable_sort(by_width.begin(), by_width.end(), [](const auto& x, const auto& y) {
    return x.first.second - x.first.first > y.first.second - y.first.first;
  });
  for (const auto& [span, comps] : by_width) {
    const auto level = Levels(k, comps);
    double c = 0.5, below = -1e9, above = 1e9;  // levels that must lie below / above c
    int top = 0;
    for (const auto& [l, v] : level) top = std::max(top, v);
    bool numbers = false;
    for (const Comparison& x : comps) {
      if (!x.b_is_number) continue;
      numbers = true;
      c = x.b_value;  // the claims compare with one number per span
      const double lv = level.at(x.a);
      if (x.greater) {
        above = std::min(above, lv);
      } else {
        below = std::max(below, lv);
      }
    }
    double L0 = top / 2.0;
    if (below > -1e9 && above < 1e9) {
      L0 = (below + above) / 2;
    } else if (above < 1e9) {
      L0 = above - 0.5;
    } else if (below > -1e9) {
      L0 = below + 0.5;
    }
    const double d = numbers ? 0.03 : 0.8 / (top + 1);
    // The reverse order breaks the claim's comparisons, not its premises (a span of premises
    // only stays as claimed), so that it contradicts the claim rather than leaving it untested.
    const bool premises_only =
        !comps.empty() && std::all_of(comps.begin(), comps.end(),
                                      [](const Comparison& x) { return x.premise; });
    const bool flip = reverse && !premises_only;
    // A label a premise of another span names, and this span's comparisons do not, keeps the
    // values that span gave it at shared lengths (X11's premise over 16..64 around a comparison
    // of other labels at 64).
    auto named_here = [&](const std::string& label) {
      return std::any_of(comps.begin(), comps.end(), [&](const Comparison& x) {
        return x.a == label || (!x.b_is_number && x.b == label);
      });
    };
    auto premise_elsewhere = [&](const std::string& label) {
      for (const auto& [other, other_comps] : by_width)
        if (other != span)
          for (const Comparison& x : other_comps)
            if (x.premise && (x.a == label || (!x.b_is_number && x.b == label))) return true;
      return false;
    };
    for (const auto& [label, lv] : level) {
      const bool keep = !named_here(label) && premise_elsewhere(label);
      for (const int n : {span.first, span.second})
        if (!keep || !value[label].count(n)) value[label][n] = c + (flip ? -1 : 1) * d * (lv - L0);
    }
  }
  if (k.metric == "gap_share") {
    // One diagnosed run per trained label and seed; its labels are <label>+<intervention>.
    std::map<std::string, FakeRun> runs;
    for (const auto& [label, by_length] : value)
      for (int seed = 1; seed <= 3; ++seed) {
        const auto plus = label.find('+');
        FakeRun& r = runs[label.substr(0, plus) + "/" + std::to_string(seed)];
        r.label = label.substr(0, plus);
        r.seed = seed;
        r.length.clear();
        std::vector<double>& share = r.shares[label.substr(plus + 1)];
        for (const auto& [n, v] : by_length) {
          r.length.push_back(n);
          share.push_back(v + 0.002 * seed);
        }
        r.value.assign(r.length.size(), 1.0);
      }
    for (const auto& [key, r] : runs) WriteFakeRun(dir, r);
    return;
  }
  for (const auto& [label, by_length] : value)
    for (int seed = 1; seed <= 3; ++seed) {
      FakeRun r;
      r.label = label;
      r.seed = seed;
      r.samples = 100000;  // Clopper-Pearson intervals (seeds = max) narrower than d / 2
      if (k.metric == "position_probe_error") r.train_max_length = k.length_lo;
      std::map<int64_t, double> at = by_length;
      if (k.relative_lo > 0) at[k.relative_lo] = at[k.relative_hi] = 1.0;
      for (const auto& [n, v] : at) {
        r.length.push_back(n);
        r.value.push_back(v + 0.002 * seed);
      }
      if (!std::isnan(k.reach)) {
        // Steps to the target: the ordered value x in (0, 1) as a crossing at step 10 x, the
        // metric going from one side of the target at step 0 to the other at step 10.
        const bool larger = FindCriterionMetric(k.metric, "test").larger_is_better;
        r.step_flops.assign(10, 1.0);
        for (const auto& [n, v] : at) {
          const double x = v + 0.002 * seed;
          const double side = larger ? -1 : 1;
          r.history.emplace_back(0, n, k.reach + side * x);
          r.history.emplace_back(10, n, k.reach - side * (1 - x));
        }
        std::sort(r.history.begin(), r.history.end());
      }
      WriteFakeRun(dir, r);
    }
}

TEST(Claims, EveryBuiltInClaimParsesAndItsStagesAreValidRecipesAtBothBudgets) {
  const auto claims = BuiltinClaims();
  ASSERT_GE(claims.size(), 4u);
  std::set<std::string> ids;
  for (const auto& c : claims) {
    EXPECT_TRUE(ids.insert(c.id).second) << c.id << " twice";
    EXPECT_EQ(c.file, "experiments/reproductions/" + c.DirName() + ".toml")
        << "a claim's file is named <id>_<name>.toml";
    for (const std::string budget : {"smoke", "full"}) {
      EXPECT_NO_THROW(StageRecipes(c, budget, "/tmp/x")) << c.id;
      // Every label its criterion names is one its stages write.
      if (c.testable) {
        try {
          CheckCriterionNamesPlannedRuns(c, StageRecipes(c, budget, "/tmp/x"), budget, "/tmp/x");
        } catch (const InputError& e) {
          ADD_FAILURE() << c.id << " (" << budget << "): " << e.what();
        }
      }
    }
    // The smoke budget is a pipeline check: no stage trains beyond its cap.
    for (const RecipeConfig& r : StageRecipes(c, "smoke", "/tmp/x"))
      EXPECT_EQ(r.steps_cap, kSmokeSteps) << c.id;
  }
  const auto listed = SelectClaims({claims.back().id, claims.front().id});
  EXPECT_EQ(listed.front().id, claims.back().id);
  EXPECT_THROW(SelectClaims({"Q99"}), InputError);
}

// For every claim: one set of run files that must pass (the claimed order) and one that contradicts
// it (the reverse).
TEST(Claims, EveryCriterionPassesOnTheClaimedOrderAndFailsOnTheReverse) {
  for (const auto& c : BuiltinClaims()) {
    if (!c.testable) continue;
    SCOPED_TRACE(c.id);
    const fs::path dir = testing::FreshTempDir("criterion_" + c.id);
    WriteOrderedRuns(dir / "good", c.criterion, false);
    WriteOrderedRuns(dir / "bad", c.criterion, true);
    const Verdict good = JudgeCriterion(c.criterion, (dir / "good").string());
    EXPECT_EQ(good.verdict, "reproduced") << good.reason;
    const Verdict bad = JudgeCriterion(c.criterion, (dir / "bad").string());
    EXPECT_EQ(bad.verdict, "contradicted") << bad.reason;
    fs::remove_all(dir);
  }
}

// The input error judging `k` on the runs of `dir` raises (empty when there is none).
std::string JudgeError(const ClaimCriterion& k, const fs::path& dir) {
  try {
    JudgeCriterion(k, dir.string());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

ClaimCriterion Criterion(std::vector<std::string> holds, std::string seeds = "mean") {
  ClaimCriterion k;
  k.metric = "exact_match";
  k.length_lo = 17;
  k.length_hi = 32;
  k.seeds = std::move(seeds);
  k.holds = std::move(holds);
  return k;
}

TEST(Criterion, ScoresTheMeanOverTheSpanWithAStudentTIntervalOverSeeds) {
  const fs::path dir = testing::FreshTempDir("criterion_mean");
  const std::vector<double> a = {0.5, 0.6, 0.7};
  for (int s = 0; s < 3; ++s) {
    // Lengths outside [17, 32] must not count.
    WriteFakeRun(dir, {"nope", s + 1, "completed", {8, 17, 32, 64}, {1.0, a[s], a[s], 0.0}});
    WriteFakeRun(dir, {"rope", s + 1, "completed", {8, 17, 32, 64}, {1.0, 0.1, 0.1, 0.0}});
  }
  WriteFakeRun(dir, {"rope", 4, "diverged", {}, {}});
  const Verdict v = JudgeCriterion(Criterion({"nope > rope"}), dir.string());
  ASSERT_EQ(v.groups.size(), 2u);
  const GroupScore& g = v.groups[0];
  EXPECT_EQ(g.label, "nope");
  EXPECT_EQ(g.seeds, (std::vector<int>{1, 2, 3}));
  EXPECT_NEAR(g.score, 0.6, 1e-12);
  const Interval t = MeanInterval({0.5, 0.6, 0.7});
  EXPECT_NEAR(g.lo, t.lo, 1e-12);
  EXPECT_NEAR(g.hi, t.hi, 1e-12);
  EXPECT_EQ(v.groups[1].incomplete, 1) << "the diverged run is counted, not scored";
  EXPECT_EQ(g.x, (std::vector<double>{8, 17, 32, 64}));
  // Welch: 0.5 +- t(2) 0.1 / sqrt(3) = [0.25, 0.75], above 0.
  EXPECT_EQ(v.comparisons[0].test, "Welch t");
  const Interval w = WelchDifference(a, {0.1, 0.1, 0.1});
  EXPECT_NEAR(v.comparisons[0].difference.lo, w.lo, 1e-12);
  EXPECT_NEAR(v.comparisons[0].difference.hi, w.hi, 1e-12);
  EXPECT_EQ(v.verdict, "reproduced");
  EXPECT_EQ(v.train_max_length, 16);
  fs::remove_all(dir);
}

// Three seeds that all score 1 have a Student-t interval of zero width: an interval, which
// can be significant (one run's loss has none, and cannot).
TEST(Criterion, SeedsThatAgreeExactlySeparate) {
  const fs::path dir = testing::FreshTempDir("criterion_exact_seeds");
  const std::vector<double> other = {0.10, 0.30, 0.20};
  for (int s = 0; s < 3; ++s) {
    WriteFakeRun(dir, {"memtrm", s + 1, "completed", {256}, {1.0}});
    WriteFakeRun(dir, {"window", s + 1, "completed", {256}, {other[s]}});
  }
  ClaimCriterion k = Criterion({"memtrm > window"});
  k.length_lo = k.length_hi = 256;
  const Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.groups[0].lo, 1.0);
  EXPECT_EQ(v.groups[0].hi, 1.0);
  EXPECT_TRUE(v.groups[0].has_interval);
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  k.holds = {"window > memtrm"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "contradicted");
  fs::remove_all(dir);
}

TEST(Criterion, OneRunOrTheBestSeedGetsTheClopperPearsonIntervalOfItsSequences) {
  const fs::path dir = testing::FreshTempDir("criterion_max");
  WriteFakeRun(dir, {"t5", 1, "completed", {17, 32}, {0.30, 0.50}, 40});
  WriteFakeRun(dir, {"t5", 2, "completed", {17, 32}, {0.20, 0.20}, 40});
  WriteFakeRun(dir, {"sinusoidal", 1, "completed", {17, 32}, {0.25, 0.35}, 40});
  const Verdict v = JudgeCriterion(Criterion({"t5 > sinusoidal"}, "max"), dir.string());
  const GroupScore& t5 = v.groups[0];
  EXPECT_NEAR(t5.score, 0.40, 1e-12) << "the best seed";
  // The best of 2 seeds: Clopper-Pearson at 1 - 0.05/2, wider than the one run's 95%.
  const Interval cp = ClopperPearson(12 + 20, 80, 0.975);
  EXPECT_NEAR(t5.lo, cp.lo, 1e-12);
  EXPECT_NEAR(t5.hi, cp.hi, 1e-12);
  EXPECT_LT(t5.lo, ClopperPearson(32, 80).lo);
  EXPECT_NE(t5.interval.find("Bonferroni over the seeds"), std::string::npos) << t5.interval;
  const Interval one = ClopperPearson(24, 80);
  EXPECT_NEAR(v.groups[1].lo, one.lo, 1e-12) << "one run: its own 95%";
  // 0.40 against 0.30 with 80 sequences each: ordered; MOVER's interval of the difference holds 0.
  EXPECT_TRUE(v.comparisons[0].in_direction);
  EXPECT_EQ(v.comparisons[0].test, "MOVER");
  const Interval mover = MoverDifference(0.40, cp, 0.30, one);
  EXPECT_NEAR(v.comparisons[0].difference.lo, mover.lo, 1e-12);
  EXPECT_LT(mover.lo, 0);
  EXPECT_FALSE(v.comparisons[0].significant_for);
  EXPECT_EQ(v.verdict, "no effect");
  // Against numbers: 0.40 [0.28, 0.53] lies above 0.2; 0.35 lies inside it either way.
  ClaimCriterion k = Criterion({"t5 > 0.2"}, "max");
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "reproduced");
  k.holds = {"t5 < 0.2"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "contradicted");
  k.holds = {"t5 > 0.35"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "no effect");
  k.holds = {"t5 < 0.35"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "no effect");
  EXPECT_EQ(JudgeCriterion(k, dir.string()).groups.size(), 1u) << "a number is not a label";
  fs::remove_all(dir);
}

// Partly needs a comparison significant for the claim and none against it; a null difference,
// however it leans, is no effect.
TEST(Criterion, ANullDifferenceIsNoEffectAndPartlyNeedsASignificantOne) {
  const fs::path dir = testing::FreshTempDir("criterion_partly");
  const std::vector<double> noise = {0.01, -0.01, 0.0};
  for (int s = 1; s <= 3; ++s) {
    WriteFakeRun(dir, {"a", s, "completed", {20}, {0.9 + 0.001 * s}});
    WriteFakeRun(dir, {"b", s, "completed", {20}, {0.1 + 0.001 * s}});
    WriteFakeRun(dir, {"same", s, "completed", {20}, {0.9005 + noise[s - 1]}});
    WriteFakeRun(dir, {"c", s, "completed", {20}, {0.95 + 0.001 * s}});
  }
  ClaimCriterion k = Criterion({"a > b", "a > same"});
  k.length_lo = k.length_hi = 20;
  Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.verdict, "partly") << v.reason;
  EXPECT_TRUE(v.comparisons[0].family_for) << "0.8 apart: significant at Bonferroni's 0.975";
  EXPECT_FALSE(v.comparisons[1].significant_for || v.comparisons[1].significant_against);
  // The null comparison alone, in either direction (it leans against a by 0.0005 on average).
  k.holds = {"a > same"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "no effect");
  k.holds = {"same > a"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "no effect");
  // Half in direction used to make "partly": two null comparisons, one leaning each way.
  k.holds = {"a > same", "same > a"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "no effect");
  // Significant for and against at once: contradicted.
  k.holds = {"a > b", "a > c"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "contradicted");
  k.holds = {"b > a"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "contradicted");
  fs::remove_all(dir);
}

TEST(Criterion, LossRatiosAndSmallerIsBetter) {
  const fs::path dir = testing::FreshTempDir("criterion_loss");
  WriteFakeRun(dir, {"alibi", 1, "completed", {16, 128}, {2.0, 2.1}});
  WriteFakeRun(dir, {"rope", 1, "completed", {16, 128}, {1.5, 3.0}});
  ClaimCriterion k = Criterion({"alibi < rope"});
  k.metric = "loss";
  k.length_lo = k.length_hi = 128;
  k.relative_lo = k.relative_hi = 16;
  Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_NEAR(v.groups[0].score, 1.05, 1e-12);
  EXPECT_NEAR(v.groups[1].score, 2.0, 1e-12);
  EXPECT_EQ(v.groups[0].interval, "none (1 run)");
  EXPECT_TRUE(v.comparisons[0].in_direction);
  EXPECT_EQ(v.comparisons[0].test, "none") << "points without intervals cannot be significant";
  EXPECT_EQ(v.verdict, "no effect");
  // The raw loss at 128 orders them the same way (2.1 against 3.0); reversed, still no test.
  k.relative_lo = 0;
  k.holds = {"rope < alibi"};
  v = JudgeCriterion(k, dir.string());
  EXPECT_FALSE(v.comparisons[0].in_direction);
  EXPECT_EQ(v.verdict, "no effect");
  fs::remove_all(dir);
}

// Kazemnejad et al.'s distance between two models' attention: per layer the closest pair of
// heads, then the mean over layers; smaller is closer.
TEST(Criterion, JsToReferenceIsTheClosestPairOfHeadsPerLayerMeanOverLayers) {
  const fs::path dir = testing::FreshTempDir("criterion_js");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  FakeRun t5{"t5", 1, "completed", {8, 32}, {0, 0}};
  // Layer 0: closest pair 0.1; layer 1: 0.25 (a NaN entry is skipped). Mean 0.175.
  t5.js = {0.3, 0.1, 0.2, 0.4, 0.5, nan, 0.25, 0.6};
  WriteFakeRun(dir, t5);
  FakeRun rope{"rope", 1, "completed", {8, 32}, {0, 0}};
  rope.js = {0.3, 0.3, 0.3, 0.3, 0.2, 0.2, 0.2, 0.2};  // 0.25
  WriteFakeRun(dir, rope);
  ClaimCriterion k = Criterion({"t5 < rope"});
  k.metric = "js_to_reference";
  k.length_lo = 8;
  k.length_hi = 32;
  const Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_NEAR(v.groups[0].score, 0.175, 1e-12);
  EXPECT_NEAR(v.groups[1].score, 0.25, 1e-12);
  EXPECT_EQ(v.groups[0].x, (std::vector<double>{8, 32}));
  EXPECT_EQ(v.groups[0].interval, "none (1 run)") << "a divergence has no counts";
  EXPECT_TRUE(v.comparisons[0].in_direction);
  k.holds = {"rope < t5"};
  EXPECT_FALSE(JudgeCriterion(k, dir.string()).comparisons[0].in_direction);
  // A run analysed without its NoPE reference names the command that adds it.
  h5::Writer w((dir / "alibi-seed1.h5").string());
  w.root().SetAttr("format", "lexp-run/2");
  w.root().SetAttr("label", "alibi-seed1");
  w.root().SetAttr("seed", 1);
  w.root().SetAttr("train_max_length", 16);
  w.root().CreateGroup("status").SetAttr("state", "completed");
  w.root().CreateGroup("analysis").CreateGroup("geometry");
  w.Commit();
  k.holds = {"t5 < alibi"};
  const std::string error = JudgeError(k, dir);
  EXPECT_NE(error.find("alibi-seed1.h5' has no JS divergence"), std::string::npos) << error;
  EXPECT_NE(error.find("--reference"), std::string::npos) << error;
  fs::remove_all(dir);
}

// At equal compute: every run is read from its evaluations during training at the compute every
// compared run reached (the least total, or the claim's), between evaluations linearly; the axis
// decides (at equal tokens the longer run wins here, at equal FLOPs the cheaper one).
TEST(Criterion, AtEqualComputeEveryRunIsReadAtTheSameCompute) {
  const fs::path dir = testing::FreshTempDir("criterion_compute");
  FakeRun grow{"grow", 1, "completed", {}, {}};
  grow.step_flops.assign(10, 1.0);  // 10 FLOPs in all
  grow.history = {{0, 64, 3.0}, {5, 64, 2.0}, {5, 16, 9.0}, {10, 64, 1.2}};
  WriteFakeRun(dir, grow);
  FakeRun fixed{"fixed", 1, "completed", {}, {}};
  fixed.step_flops.assign(10, 1.5);  // 15 FLOPs: evaluations at 0, 7.5 and 15
  fixed.history = {{0, 64, 3.0}, {5, 64, 1.4}, {10, 64, 1.0}};
  WriteFakeRun(dir, fixed);
  ClaimCriterion k = Criterion({"grow < fixed"});
  k.metric = "loss";
  k.length_lo = k.length_hi = 64;
  k.compute = "flops";
  Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.at_compute, 10.0) << "the least total compute";
  EXPECT_NEAR(v.groups[0].score, 1.2, 1e-12) << "the length 16 row is not judged";
  EXPECT_NEAR(v.groups[1].score, 1.4 * 2 / 3 + 1.0 / 3, 1e-12) << "between 7.5 and 15 FLOPs";
  EXPECT_EQ(v.groups[0].interval, "none (1 run)");
  EXPECT_EQ(v.groups[1].x, (std::vector<double>{0, 7.5, 15}));
  EXPECT_EQ(v.groups[1].curve_mean, (std::vector<double>{3.0, 1.4, 1.0}));
  EXPECT_EQ(v.verdict, "no effect") << "ordered; one run each cannot be significant";
  // At 5 FLOPs the cheaper run is not ahead yet: 2.0 against 3 (1/3) + 1.4 (2/3).
  k.at_compute = 5;
  v = JudgeCriterion(k, dir.string());
  EXPECT_NEAR(v.groups[1].score, 3.0 / 3 + 1.4 * 2 / 3, 1e-12);
  EXPECT_FALSE(v.comparisons[0].in_direction);
  // At equal tokens (one per step) both end at 10 tokens, where the longer-trained run is lower.
  k.at_compute = 0;
  k.compute = "tokens";
  v = JudgeCriterion(k, dir.string());
  EXPECT_NEAR(v.groups[1].score, 1.0, 1e-12);
  EXPECT_FALSE(v.comparisons[0].in_direction);
  // A length with no evaluation during training is an input error naming the span.
  k.length_lo = k.length_hi = 32;
  const std::string error = JudgeError(k, dir);
  EXPECT_NE(error.find("no evaluation during training at a length in [32, 32]"), std::string::npos)
      << error;
  fs::remove_all(dir);
}

// Steps to a target (YaRN's measure): each run is scored by the training steps at which its loss
// first reaches the target, linearly between the evaluations around it. A run that never reaches
// it counts its whole training, a lower bound: harmless on the side claimed slower, but on the side
// claimed faster it would favour the claim, so that comparison is then never significant for it.
TEST(Criterion, StepsToReachAreInterpolatedAndAnUnreachedRunCannotSupportTheClaim) {
  const fs::path dir = testing::FreshTempDir("criterion_reach");
  // Per seed: the loss at steps 0, 2, 4, ... (length 64), over 10 training steps (fast) or 20
  // (slow); both variants of a seed fine-tune the same pre-training, so they are paired.
  auto write = [&](const std::string& label, int seed, const std::vector<double>& loss) {
    FakeRun r{label, seed, "completed", {}, {}};
    r.step_flops.assign(2 * (loss.size() - 1), 1.0);
    for (size_t i = 0; i < loss.size(); ++i)
      r.history.emplace_back(static_cast<int64_t>(2 * i), 64, loss[i]);
    r.init_from = (dir / ("pre-seed" + std::to_string(seed) + ".h5")).string();
    WriteFakeRun(dir, r);
  };
  write("fast", 1, {3.0, 1.0, 0.5, 0.5, 0.5, 0.5});  // reaches 1.5 at step 1.5
  write("fast", 2, {3.0, 0.5, 0.5, 0.5, 0.5, 0.5});  // at 1.2
  write("fast", 3, {3.0, 1.5, 0.5, 0.5, 0.5, 0.5});  // at 2 exactly
  const std::vector<double> slow_before = {3.0, 2.9, 2.8, 2.7, 2.6, 2.5, 2.4};  // steps 0..12
  auto slow = [&](std::vector<double> after) {
    std::vector<double> v = slow_before;
    v.insert(v.end(), after.begin(), after.end());
    return v;
  };
  write("slow", 1, slow({1.0, 0.9, 0.9, 0.9}));  // at 12 + 2 (0.9 / 1.4)
  write("slow", 2, slow({2.0, 1.5, 1.0, 1.0}));  // at 16
  write("slow", 3, slow({2.0, 1.9, 1.0, 1.0}));  // at 16 + 2 (0.4 / 0.9)
  ClaimCriterion k = Criterion({"fast < slow"});
  k.metric = "loss";
  k.length_lo = k.length_hi = 64;
  k.compute = "steps";
  k.reach = 1.5;
  Verdict v = JudgeCriterion(k, dir.string());
  ASSERT_EQ(v.groups.size(), 2u);
  EXPECT_NEAR(v.groups[0].per_seed[0], 1.5, 1e-12);
  EXPECT_NEAR(v.groups[0].per_seed[1], 1.2, 1e-12);
  EXPECT_NEAR(v.groups[0].per_seed[2], 2.0, 1e-12) << "reaching it at an evaluation";
  EXPECT_NEAR(v.groups[1].per_seed[0], 12 + 2 * 0.9 / 1.4, 1e-12);
  EXPECT_NEAR(v.groups[1].per_seed[1], 16.0, 1e-12);
  EXPECT_NEAR(v.groups[1].per_seed[2], 16 + 2 * 0.4 / 0.9, 1e-12);
  EXPECT_EQ(v.groups[1].censored, 0);
  EXPECT_EQ(v.comparisons[0].test, "paired t");
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  // The side claimed slower never reaching the target on a seed: scored at its 20 steps, a lower
  // bound that can only understate how much slower it is.
  write("slow", 3, slow({2.0, 1.9, 1.8, 1.7}));
  v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.groups[1].censored, 1);
  EXPECT_NEAR(v.groups[1].per_seed[2], 20.0, 1e-12);
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  // The side claimed faster never reaching it on a seed: its 10 steps are still fewer than the
  // slow side's, but they understate it, so the comparison cannot count for the claim.
  write("fast", 3, {3.0, 2.0, 2.0, 2.0, 2.0, 2.0});
  v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.groups[0].censored, 1);
  EXPECT_TRUE(v.comparisons[0].in_direction);
  EXPECT_FALSE(v.comparisons[0].significant_for);
  EXPECT_EQ(v.verdict, "no effect") << v.reason;
  fs::remove_all(dir);
}

// Two evaluations of the same trained models share the seeds' spread: the comparison is paired,
// judged on the seeds' differences, because the runs say so (weights_from), not because a claim
// declares it. The same values from separately trained models are compared unpaired (Welch), where
// the spread hides the difference.
TEST(Criterion, RunsOfTheSameTrainedModelsAreComparedPaired) {
  const fs::path dir = testing::FreshTempDir("criterion_paired");
  const std::vector<double> a = {1.0, 2.0, 3.0}, d = {-0.10, -0.12, -0.08};
  for (int s = 0; s < 3; ++s) {
    const std::string model = fmt::format("/runs/train/rope-seed{}.h5", s + 1);
    FakeRun cut{"rope+cut", s + 1, "completed", {128}, {a[s] + d[s]}};
    cut.weights_from = model;
    WriteFakeRun(dir / "same", cut);
    FakeRun none{"rope+none", s + 1, "completed", {128}, {a[s]}};
    none.weights_from = model;
    WriteFakeRun(dir / "same", none);
    // The same numbers from models trained apart.
    WriteFakeRun(dir / "apart", {"rope+cut", s + 1, "completed", {128}, {a[s] + d[s]}});
    WriteFakeRun(dir / "apart", {"rope+none", s + 1, "completed", {128}, {a[s]}});
  }
  ClaimCriterion k = Criterion({"rope+cut < rope+none"});
  k.metric = "loss";
  k.length_lo = k.length_hi = 128;
  Verdict v = JudgeCriterion(k, (dir / "same").string());
  const ComparisonResult& c = v.comparisons[0];
  EXPECT_EQ(c.test, "paired t");
  EXPECT_EQ(c.paired_seeds, 3);
  EXPECT_NEAR(c.difference.score, -0.1, 1e-12);
  const Interval t = MeanInterval(d);
  EXPECT_NEAR(c.difference.lo, t.lo, 1e-12);
  EXPECT_NEAR(c.difference.hi, t.hi, 1e-12);
  EXPECT_EQ(v.verdict, "reproduced");
  k.holds = {"rope+cut > rope+none"};
  EXPECT_EQ(JudgeCriterion(k, (dir / "same").string()).verdict, "contradicted");
  k.holds = {"rope+cut < rope+none"};
  v = JudgeCriterion(k, (dir / "apart").string());
  EXPECT_EQ(v.comparisons[0].test, "Welch t");
  EXPECT_EQ(v.verdict, "no effect") << "unpaired, the seeds' spread hides it";
  fs::remove_all(dir);
}

// Fine-tunings of one pre-training per seed are paired too (init_from); a seed whose two runs
// come from different models breaks the pairing, and one common seed gives no interval.
TEST(Criterion, FineTuningsOfOnePreTrainingArePairedAndMixedOriginsAreNot) {
  const fs::path dir = testing::FreshTempDir("criterion_paired_init");
  const std::vector<double> base = {2.0, 2.5, 3.0};
  for (int s = 1; s <= 3; ++s) {
    const std::string pre = fmt::format("/runs/pretrain/rope-seed{}.h5", s);
    FakeRun pi{"rope-pi", s, "completed", {256}, {base[s - 1] - 0.1}};
    pi.init_from = pre;
    FakeRun direct{"rope-direct", s, "completed", {256}, {base[s - 1]}};
    direct.init_from = s == 3 ? std::string("/runs/pretrain/other.h5") : pre;
    WriteFakeRun(dir / "mixed", pi);
    WriteFakeRun(dir / "mixed", direct);
    direct.init_from = pre;
    WriteFakeRun(dir / "shared", pi);
    WriteFakeRun(dir / "shared", direct);
  }
  FakeRun lone{"rope-lone", 1, "completed", {256}, {1.0}};
  lone.init_from = "/runs/pretrain/rope-seed1.h5";
  WriteFakeRun(dir / "shared", lone);
  ClaimCriterion k = Criterion({"rope-pi < rope-direct"});
  k.metric = "loss";
  k.length_lo = k.length_hi = 256;
  Verdict v = JudgeCriterion(k, (dir / "shared").string());
  EXPECT_EQ(v.comparisons[0].test, "paired t");
  EXPECT_EQ(v.verdict, "reproduced");
  v = JudgeCriterion(k, (dir / "mixed").string());
  EXPECT_EQ(v.comparisons[0].test, "Welch t") << "seed 3's runs share no model";
  k.holds = {"rope-lone < rope-direct"};
  v = JudgeCriterion(k, (dir / "shared").string());
  EXPECT_EQ(v.comparisons[0].test, "paired t");
  EXPECT_EQ(v.comparisons[0].paired_seeds, 1);
  EXPECT_TRUE(v.comparisons[0].in_direction);
  EXPECT_EQ(v.verdict, "no effect") << "one difference has no interval";
  fs::remove_all(dir);
}

TEST(Criterion, ALabelWithoutACompletedRunIsNotTestableAndSaysWhich) {
  const fs::path dir = testing::FreshTempDir("criterion_missing");
  WriteFakeRun(dir, {"nope", 1, "completed", {20}, {0.5}});
  WriteFakeRun(dir, {"rope", 1, "diverged", {}, {}});
  ClaimCriterion k = Criterion({"nope > rope"});
  k.length_lo = k.length_hi = 20;
  const Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.verdict, "not testable");
  EXPECT_NE(v.reason.find("no completed run of rope"), std::string::npos) << v.reason;
  // A span the runs did not evaluate is an input error naming it.
  k.length_lo = 30;
  k.length_hi = 40;
  const std::string error = JudgeError(k, dir);
  EXPECT_NE(error.find("evaluated no length in [30, 40]"), std::string::npos) << error;
  fs::remove_all(dir);
}

std::string ClaimError(const std::string& text) {
  try {
    ParseClaim(text, "bad.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Claims, BadClaimFilesNameTheKeyAndWhatIsAllowed) {
  const std::string good = R"([claim]
id = "P9"
name = "x"
statement = "s"
source = "src"
published = "p"
protocol = "pr"
[[stage]]
name = "train"
recipe = "default"
[criterion]
metric = "exact_match"
lengths = [17, 32]
holds = ["nope > rope"]
)";
  EXPECT_EQ(ClaimError(good), "");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return ClaimError(t);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {with("id = \"P9\"", "id = \"p9\""), "[claim].id = 'p9' must be a capital letter"},
      {with("recipe = \"default\"", "recipe = \"nosuch\""), "recipe 'nosuch' is not one of"},
      {with("recipe = \"default\"", "recipe = \"/no/such/r.toml\""),
       "cannot read the recipe file '/no/such/r.toml'"},
      {with("metric = \"exact_match\"", "metric = \"bleu\""),
       "allowed: exact_match, token_accuracy, loss, js_to_reference, attention_entropy, sink_mass, "
       "loss_limit, exact_match_limit, token_accuracy_limit, gap_share, shift_move, "
       "position_probe_error"},
      {with("[criterion]", "[criterion]\ncompute = \"hours\""),
       "compute = 'hours'; allowed: tokens, flops, seconds, steps"},
      {with("[criterion]", "[criterion]\nreach = 0.5"),
       "[criterion].reach scores the compute at which the metric reaches it: it needs compute"},
      {with("[criterion]", "[criterion]\ncompute = \"steps\"\nreach = 1.5"),
       "[criterion].reach must be a finite number in (0, 1] for a fraction"},
      {with("[criterion]", "[criterion]\ncompute = \"steps\"\nreach = 0.5\nseeds = \"max\""),
       "reach takes seeds = \"mean\""},
      {with("metric = \"exact_match\"", "metric = \"js_to_reference\"\ncompute = \"flops\""),
       "metric 'js_to_reference' is not evaluated during training"},
      {with("[criterion]", "[criterion]\ncompute = \"flops\"\nrelative_to = [1, 2]"),
       "relative_to and compute exclude each other"},
      {with("[criterion]", "[criterion]\nat_compute = 5.0"), "at_compute must be a positive"},
      {with("[criterion]", "[criterion]\npaired = true"),
       "[criterion].paired: a claim does not say whether its comparisons are paired"},
      {with("lengths = [17, 32]", "lengths = [32, 17]"), "lengths must be [LO, HI]"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope >> rope\"]"), "is not a comparison"},
      {with("holds = [\"nope > rope\"]", "holds = []"), "holds is empty"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope ~ rope within 0.1\"]"),
       "is a control (A ~ B within D); list it under requires"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope > rope\"]\nrequires = [\"nope ~ rope\"]"),
       "a control is \"A ~ B within D\", D a margin > 0"},
      {with("[criterion]", "[criterion]\nseeds = \"median\""), "allowed: mean, max"},
      {with("[criterion]", "[criterion]\nstage = \"nosuch\""), "is not a stage's name"},
      {with("[[stage]]", "[[stage]]\ninit_from = \"train/rope.h5\""), "an earlier stage"},
      {with("[[stage]]", "[[stage]]\nsteps = 3"), "unknown key 'steps'; allowed: name, recipe"},
      {with("[claim]", "[claims]\n[claim]"), "unknown table 'claims'"},
      {with("source = \"src\"\n", ""), "key 'source' is missing"},
      {ClaimError(good + "[budget]\nsmoke_minutes = \"ten\"\n"), "smoke_minutes must be a number"},
      {ClaimError("[claim\n"), "is not valid TOML"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope > rope at 9..3\"]"),
       "own span is \"at LO..HI\""},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope > rope at 9\"]"),
       "own span is \"at LO..HI\""},
      // A stage that evaluates an earlier one's runs again.
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"nosuch\"\n"
                         "scales = [\"pi:factor=2\"]\n"),
       "evaluate = 'nosuch' is not an earlier stage's name"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"), "scales is missing"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "scales = [\"warp:factor=2\"]\n"),
       "unknown rule 'warp'"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "scales = [\"none\"]\nvariants = [\"a\"]\n"),
       "takes no variants or init_from"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "recipe = \"default\"\nscales = [\"none\"]\n"),
       "either recipe"},
      {with("recipe = \"default\"", "recipe = \"default\"\nscales = [\"none\"]"),
       "scales, .evaluations and .diagnose belong to a stage that evaluates"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "scales = [\"none\"]\nevaluations = [\"full\"]\n"),
       "give one of scales (RoPE scaling rules), evaluations (named overrides) or diagnose"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "diagnose = [\"window\", \"rerope\"]\n"),
       "diagnose: 'rerope' is not an intervention of lexp diagnose, or is named twice; allowed: "
       "distance_clamp, position_remap, window"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "diagnose = [\"window\", \"window\"]\n"),
       "'window' is not an intervention of lexp diagnose, or is named twice"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "diagnose = [\"window\"]\nset = [\"eval.samples=4\"]\n"),
       "a stage that diagnoses takes no set, smoke or full"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "diagnose = [\"window\"]\nscales = [\"none\"]\n"),
       "give one of scales"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "diagnose = [\"window\"]\n"),
       "metric 'gap_share' reads /diagnosis, which only a stage with diagnose = [...] writes; "
       "such a stage is judged by gap_share (stage 'z', metric 'exact_match')"},
      {with("metric = \"exact_match\"", "metric = \"gap_share\""),
       "(stage 'train', metric 'gap_share')"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope@loss_limit > rope\"]"),
       "'nope@loss_limit' scores nope by loss_limit under metric 'exact_match'; a label's own "
       "metric (LABEL@METRIC) is allowed only among the *_limit metrics"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope@bleu > rope\"]"),
       "'nope@bleu': the metric after @ = 'bleu'; allowed: exact_match"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope@ > rope\"]"),
       "the left side must be a run label"},
      {with("recipe = \"default\"", "recipe = \"default\"\ndiagnose = [\"window\"]"),
       ".diagnose belong to a stage that evaluates"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "evaluations = [\"full\", \"full: model.pattern=\\\"lambda\\\"\"]\n"),
       "evaluations: 'full: model.pattern=\"lambda\"' needs a plain name of its own"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "evaluations = [\": model.pattern=\\\"lambda\\\"\"]\n"),
       "needs a plain name of its own"},
      {ClaimError(good + "[trend]\nstage = \"nosuch\"\nfull = [1000]\n"),
       "[trend].stage = 'nosuch' must be the name of a stage that trains"},
      {ClaimError(good + "[trend]\nstage = \"train\"\nfull = [0]\n"),
       "full must be a list of positive integers"},
  };
  for (const auto& [got, want] : cases) {
    EXPECT_NE(got.find(want), std::string::npos) << "got: " << got << "\nwanted: " << want;
    EXPECT_NE(got.find("bad.toml"), std::string::npos) << got;
  }
}

// A claim file of one's own may run a recipe file of one's own.
TEST(Claims, AStageMayRunARecipeFile) {
  const fs::path dir = testing::FreshTempDir("claim_recipe_file");
  std::ofstream(dir / "mine.toml") << "[train]\nsteps = 7\n";
  const Claim c = ParseClaim(
      "[claim]\nid = \"P9\"\nname = \"x\"\nstatement = \"s\"\n"
      "source = \"src\"\npublished = \"p\"\nprotocol = \"pr\"\n"
      "[[stage]]\nname = \"train\"\nrecipe = \"" +
          (dir / "mine.toml").string() +
          "\"\n[criterion]\nmetric = \"loss\"\nlengths = [1, 2]\n"
          "holds = [\"nope < rope\"]\n",
      "mine_claim.toml");
  const RecipeConfig cfg = StageRecipe(c, c.stages[0], "smoke", (dir / "out").string());
  EXPECT_EQ(cfg.steps, 7);
  EXPECT_EQ(cfg.source_name, (dir / "mine.toml").string());
  fs::remove_all(dir);
}

// Runs of a seed sweep, and their evaluations under a rule, group under one label.
TEST(Criterion, SeedSuffixesAreDroppedBeforeAndAfterAnEvaluationsRule) {
  EXPECT_EQ(GroupKey("rope-seed2"), "rope");
  EXPECT_EQ(GroupKey("rope-seed2+pix4"), "rope+pix4");
  EXPECT_EQ(GroupKey("rope-base10-seed13+none-log_ntrue"), "rope-base10+none-log_ntrue");
  EXPECT_EQ(GroupKey("rope+pix4"), "rope+pix4");
  EXPECT_EQ(GroupKey("rope-seedling"), "rope-seedling");
  EXPECT_EQ(GroupKey("rope-seed"), "rope-seed");
}

TEST(Criterion, AComparisonOverItsOwnSpanScoresItsLabelsThere) {
  const Comparison c = ParseComparison("a > b at 2..5", "test");
  EXPECT_EQ(c.a, "a");
  EXPECT_EQ(c.b, "b");
  EXPECT_EQ(c.lo, 2);
  EXPECT_EQ(c.hi, 5);
  EXPECT_EQ(c.Text(), "a > b at 2..5");
  EXPECT_EQ(ParseComparison("a < 0.9 at 1..20", "test").b_value, 0.9);
  // a above b at short lengths and below it at long ones (three seeds each).
  const fs::path dir = testing::FreshTempDir("criterion_spans");
  for (int seed = 1; seed <= 3; ++seed) {
    const double e = 0.01 * seed;
    WriteFakeRun(dir, {"a", seed, "completed", {4, 32}, {0.9 + e, 0.1 + e}, 100, 16});
    WriteFakeRun(dir, {"b", seed, "completed", {4, 32}, {0.5 + e, 0.6 + e}, 100, 16});
  }
  ClaimCriterion k = Criterion({"a < b", "a > b at 1..8"});
  k.length_lo = 17;
  const Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  ASSERT_EQ(v.comparisons.size(), 2u);
  EXPECT_NEAR(v.comparisons[1].a.score, 0.92, 1e-12);  // a's mean at length 4
  EXPECT_NEAR(v.comparisons[1].b.score, 0.52, 1e-12);
  EXPECT_NEAR(v.groups[0].score, 0.12, 1e-12);  // the groups keep the criterion's span
  // The same comparisons the other way round fail, at both spans.
  const Verdict w = JudgeCriterion(Criterion({"a > b", "a < b at 1..8"}), dir.string());
  EXPECT_EQ(w.verdict, "contradicted") << w.reason;
  // A span no run evaluated is an input error naming it.
  EXPECT_THROW(JudgeCriterion(Criterion({"a > b at 5..6"}), dir.string()), InputError);
  fs::remove_all(dir);
}

// The [claim] table of a test claim, and the overrides that make the default recipe's models tiny.
std::string ClaimHead(const std::string& id, const std::string& name) {
  return "[claim]\nid = \"" + id + "\"\nname = \"" + name +
         "\"\nstatement = \"s\"\nsource = \"src\"\npublished = \"p\"\nprotocol = \"pr\"\n";
}
const char* const kTinyModel =
    "\"model.d_model=16\", \"model.n_heads=2\", \"model.n_layers=1\", \"train.batch_size=8\", "
    "\"train.max_length=4\", \"eval.samples=8\", \"probe.lengths=[4]\", \"probe.samples=2\", "
    "\"probe.replay=0\"";

// A criterion naming a run no stage writes (F9 of the second fuzz: an encoding the claim does
// not train, a rule it does not evaluate, a task it does not run) is refused before the first
// stage trains, naming the label and listing those the stage writes.
TEST(Reproduce, ACriterionNamingARunNoStageWritesIsRefusedBeforeTraining) {
  const fs::path root = testing::FreshTempDir("reproduce_unplanned_label");
  const std::string stages = R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"nope\", \"rope\"]", "train.steps=5", "run.seeds=[1, 2]", )" +
                             std::string(kTinyModel) + R"(]
[[stage]]
name = "zero_shot"
evaluate = "train"
scales = ["none", "pi:factor=2"]
)";
  struct Case {
    std::string criterion, message;
  };
  const std::vector<Case> cases = {
      {"stage = \"train\"\nholds = [\"alibi > rope\"]",
       "holds 'alibi > rope' names 'alibi', which stage 'train' does not write at the smoke "
       "budget; its run labels: nope, rope"},
      {"stage = \"train\"\nholds = [\"nope > rope\"]\nalso = [\"t5\"]", "also names 't5'"},
      {"stage = \"train\"\ntask = \"reverse\"\nholds = [\"nope > rope\"]",
       "task = 'reverse': stage 'train' trains no run of it"},
      {"holds = [\"rope+yarnx2 < rope+none\"]",
       "names 'rope+yarnx2', which stage 'zero_shot' does not write"},
  };
  for (const auto& c : cases) {
    const Claim claim = ParseClaim(ClaimHead("X8", "unplanned") + stages + "[criterion]\nmetric = "
                                       "\"loss\"\nlengths = [4, 4]\n" + c.criterion + "\n",
                                   "unplanned.toml");
    ReproduceOptions opt;
    opt.out_root = root.string();
    opt.figures = false;
    std::string error;
    try {
      ReproduceClaim(claim, opt);
    } catch (const InputError& e) {
      error = e.what();
    }
    EXPECT_NE(error.find(c.message), std::string::npos) << c.criterion << "\n" << error;
    EXPECT_FALSE(fs::exists(root / "smoke" / "X8_unplanned" / "runs")) << c.criterion;
  }
  // The control: the same stages with labels they write are accepted by the check.
  const Claim good = ParseClaim(ClaimHead("X8", "unplanned") + stages +
                                    "[criterion]\nmetric = \"loss\"\nlengths = [4, 4]\nholds = "
                                    "[\"rope+pix2 < rope+none\"]\n",
                                "unplanned.toml");
  EXPECT_NO_THROW(CheckCriterionNamesPlannedRuns(
      good, StageRecipes(good, "smoke", root.string()), "smoke", root.string()));
  fs::remove_all(root);
}

// A stage that evaluates: an earlier stage's run evaluated again under each rule, with no
// training, its files judged under the labels <label>+<rule>; kept on a second call.
TEST(Reproduce, AnEvaluationStageJudgesTheRulesOnTheTrainedRuns) {
  const fs::path root = testing::FreshTempDir("reproduce_eval_stage");
  const Claim c = ParseClaim(ClaimHead("X9", "rules") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"rope\"]", "train.steps=20", "eval.lengths=[2, 4, 8]",
       "run.seeds=[1, 2]", )" + kTinyModel +
                                 R"(]
[[stage]]
name = "zero_shot"
evaluate = "train"
scales = ["none", "pi:factor=2"]
set = ["eval.lengths=[2, 4, 8]"]
[criterion]
metric = "loss"
lengths = [8, 8]
holds = ["rope+pix2 < rope+none", "rope+pix2 > rope+none at 2..4"]
)",
                             "rules_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  const fs::path runs = root / "smoke" / "X9_rules" / "runs";
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  for (const char* f :
       {"rope-seed1+none.h5", "rope-seed1+pix2.h5", "rope-seed2+none.h5", "rope-seed2+pix2.h5"})
    EXPECT_TRUE(fs::exists(runs / "zero_shot" / f)) << f;
  EXPECT_NE(rec.verdict.verdict, "not testable") << rec.verdict.reason;
  ASSERT_EQ(rec.verdict.groups.size(), 2u);
  EXPECT_EQ(rec.verdict.groups[0].label, "rope+pix2");
  EXPECT_EQ(rec.verdict.groups[0].seeds, (std::vector<int>{1, 2}));
  EXPECT_EQ(rec.verdict.groups[1].label, "rope+none");
  ASSERT_EQ(rec.verdict.comparisons.size(), 2u);
  EXPECT_EQ(rec.verdict.comparisons[1].comparison.lo, 2);
  // Unscaled evaluation equals the trained run's own evaluation, seed by seed.
  {
    h5::Reader a((runs / "train" / "rope-seed1.h5").string());
    h5::Reader b((runs / "zero_shot" / "rope-seed1+none.h5").string());
    EXPECT_EQ(a.root().OpenGroup("eval").ReadDoubles("loss"),
              b.root().OpenGroup("eval").ReadDoubles("loss"));
  }
  // A second call keeps the evaluations (same scores, no error about existing files).
  const auto before = fs::last_write_time(runs / "zero_shot" / "rope-seed1+pix2.h5");
  const VerdictRecord again = ReadVerdictFile(ReproduceClaim(c, opt));
  EXPECT_EQ(fs::last_write_time(runs / "zero_shot" / "rope-seed1+pix2.h5"), before);
  EXPECT_EQ(again.verdict.groups[0].score, rec.verdict.groups[0].score);
  fs::remove_all(root);
}

// Named evaluations: the same trained models measured under sets of overrides of their own (an
// attention pattern at evaluation), each file <label>+<name>; compared paired.
TEST(Reproduce, NamedEvaluationsMeasureTheSameModelsSeveralWays) {
  const fs::path root = testing::FreshTempDir("reproduce_named_evals");
  const Claim c = ParseClaim(ClaimHead("X9", "named") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"rope\"]", "train.steps=20", "eval.lengths=[2, 4, 8]",
       "run.seeds=[1, 2]", )" + kTinyModel +
                                 R"(]
[[stage]]
name = "patterns"
evaluate = "train"
evaluations = ["full", "window: model.pattern=\"sliding_window\"; model.pattern_window=2; model.pattern_when=\"eval\""]
[criterion]
metric = "loss"
lengths = [8, 8]
holds = ["rope+window > rope+full"]
)",
                             "named_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  const fs::path runs = root / "smoke" / "X9_named" / "runs";
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  for (const char* f : {"rope-seed1+full.h5", "rope-seed1+window.h5", "rope-seed2+full.h5",
                        "rope-seed2+window.h5"})
    EXPECT_TRUE(fs::exists(runs / "patterns" / f)) << f;
  // "full" evaluates the trained model unchanged: its loss is the training stage's own.
  {
    h5::Reader a((runs / "train" / "rope-seed1.h5").string());
    h5::Reader b((runs / "patterns" / "rope-seed1+full.h5").string());
    EXPECT_EQ(a.root().OpenGroup("eval").ReadDoubles("loss"),
              b.root().OpenGroup("eval").ReadDoubles("loss"));
    h5::Reader w((runs / "patterns" / "rope-seed1+window.h5").string());
    EXPECT_NE(w.root().OpenGroup("eval").ReadDoubles("loss"),
              b.root().OpenGroup("eval").ReadDoubles("loss"))
        << "a 2-token window at evaluation changes the loss at 8";
  }
  ASSERT_EQ(rec.verdict.comparisons.size(), 1u);
  EXPECT_EQ(rec.verdict.comparisons[0].test, "paired t");
  EXPECT_EQ(rec.verdict.comparisons[0].paired_seeds, 2);
  fs::remove_all(root);
}

// gap_share reads each intervention's share of /diagnosis per seed (planted: window closes 0.9,
// 0.8, 0.7 of the gap, the clamp 0.1, 0.0, 0.2); where a seed's gap was not significant (share
// NaN) at a judged length that seed is not scored (counted incomplete, as a run that did not
// learn), and with no seed left the label is not testable and says why; a length outside the
// judged ones whose gap is not significant is left out (as at 96 for every seed, a 1.5 N whose
// gap is small), the judged lengths still scored.
TEST(Criterion, GapShareIsReadPerInterventionAndAnInsignificantGapIsNotScored) {
  const fs::path dir = testing::FreshTempDir("criterion_gap_share");
  const double window[] = {0.9, 0.8, 0.7}, clamp[] = {0.1, 0.0, 0.2};
  for (int seed = 1; seed <= 3; ++seed) {
    FakeRun r;
    r.label = "rope";
    r.seed = seed;
    r.length = {12, 16};
    r.value.assign(2, 1.0);
    r.shares = {{"distance_clamp", {std::nan(""), clamp[seed - 1]}},
                {"window", {std::nan(""), window[seed - 1]}}};
    WriteFakeRun(dir / "runs", r);
  }
  ClaimCriterion k;
  k.metric = "gap_share";
  k.length_lo = k.length_hi = 16;
  k.holds = {"rope+window > rope+distance_clamp"};
  const Verdict v = JudgeCriterion(k, (dir / "runs").string());
  ASSERT_EQ(v.groups.size(), 2u) << v.reason;
  EXPECT_EQ(v.groups[0].seeds, (std::vector<int>{1, 2, 3})) << "no gap at 12 is not judged";
  EXPECT_NEAR(v.groups[0].score, 0.8, 1e-12);
  EXPECT_NEAR(v.groups[1].score, 0.1, 1e-12);
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  // A share that widens the gap has its interval below 0 (not cut at 0 as a loss's would be).
  EXPECT_LT(v.groups[1].lo, 0.0);
  EXPECT_LT(v.groups[1].lo, v.groups[1].hi);
  k.holds = {"rope+distance_clamp > 0.5"};  // the negative control: the clamp closes little
  EXPECT_EQ(JudgeCriterion(k, (dir / "runs").string()).verdict, "contradicted");
  FakeRun flat;
  flat.label = "rope";
  flat.length = {12, 16};
  flat.value.assign(2, 1.0);
  flat.shares = {{"distance_clamp", {0.5, std::nan("")}}, {"window", {0.5, std::nan("")}}};
  flat.seed = 2;
  WriteFakeRun(dir / "runs", flat);
  const Verdict one_flat = JudgeCriterion(k, (dir / "runs").string());
  ASSERT_EQ(one_flat.groups.size(), 1u);
  EXPECT_EQ(one_flat.groups[0].seeds, (std::vector<int>{1, 3}));
  EXPECT_EQ(one_flat.groups[0].incomplete, 1);
  for (const int seed : {1, 3}) {
    flat.seed = seed;
    WriteFakeRun(dir / "runs", flat);
  }
  const Verdict no_gap = JudgeCriterion(k, (dir / "runs").string());
  EXPECT_EQ(no_gap.verdict, "not testable");
  EXPECT_NE(no_gap.reason.find("rope+distance_clamp (no significant gap at length 16)"),
            std::string::npos)
      << no_gap.reason;
  fs::remove_all(dir);
}

// A label scored by its own *_limit metric (LABEL@METRIC): the same trained models' retrieval by
// exact match and text by loss, planted with limits 24 +- 1 and 128 +- 2 by seed, compared paired;
// the metrics are read each from its own run, so swapping them turns the verdict round.
TEST(Criterion, ALabelMayBeScoredByItsOwnLimitMetric) {
  const fs::path dir = testing::FreshTempDir("criterion_label_metric");
  for (int seed = 1; seed <= 3; ++seed) {
    FakeRun retrieval;  // exact match 1 up to 24 + seed - 2, then 0
    retrieval.label = "rope+retrieval";
    retrieval.seed = seed;
    retrieval.train_max_length = 16;
    retrieval.length = {4, 16, 22 + seed, 23 + seed};
    retrieval.value = Values({1, 1, 1, 0});
    retrieval.weights_from = (dir / fmt::format("rope-seed{}.h5", seed)).string();
    WriteFakeRun(dir / "runs", retrieval);
    FakeRun text = retrieval;  // loss 1 (learnt: 2 at length 4) up to 124 + 2 seed, then 10
    text.label = "rope+text";
    text.length = {4, 16, 124 + 2 * seed, 125 + 2 * seed};
    text.value = Values({2.0, 1.0, 1.0, 10.0});
    WriteFakeRun(dir / "runs", text);
  }
  ClaimCriterion k;
  k.metric = "exact_match_limit";
  k.length_lo = k.length_hi = 16;
  k.holds = {"rope+retrieval@exact_match_limit < rope+text@loss_limit"};
  const Verdict v = JudgeCriterion(k, (dir / "runs").string());
  ASSERT_EQ(v.groups.size(), 2u) << v.reason;
  EXPECT_EQ(v.groups[0].label, "rope+retrieval@exact_match_limit");
  EXPECT_NEAR(v.groups[0].score, 24, 1e-9);
  EXPECT_NEAR(v.groups[1].score, 128, 1e-9);
  EXPECT_EQ(v.comparisons[0].test.rfind("paired t", 0), 0u) << v.comparisons[0].test;
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  // Negative control: each side by the other's metric reads what that file cannot give (the
  // retrieval's "loss" falls to 0, unlearnt by loss; the text's accuracy is 1 then 10).
  k.holds = {"rope+retrieval@loss_limit < rope+text@exact_match_limit"};
  EXPECT_NE(JudgeCriterion(k, (dir / "runs").string()).verdict, "reproduced");
  fs::remove_all(dir);
}

// A diagnosing stage: each trained run copied with /diagnosis written into the copy (the source
// untouched), its labels <label>+<intervention> scored by gap_share exactly as /diagnosis/share
// reads, an intervention that does not apply refused by name, and a second call keeps the files.
TEST(Reproduce, ADiagnosisStageJudgesTheShareOfTheGapEachInterventionCloses) {
  const fs::path root = testing::FreshTempDir("reproduce_diagnose_stage");
  const std::string head = ClaimHead("X9", "diagnosed") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"rope\"]", "train.steps=200", "eval.lengths=[4, 16]",
       "run.seeds=[1, 2]", )" + kTinyModel + R"(, "eval.samples=32"]
[[stage]]
name = "why"
evaluate = "train"
diagnose = ["distance_clamp", "window", "position_remap"]
[criterion]
metric = "gap_share"
lengths = [16, 16]
)";
  const Claim c = ParseClaim(head + "holds = [\"rope+window > rope+distance_clamp\"]\n",
                             "diagnosed_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  opt.budget = "full";  // the smoke budget keeps 2 seeds and 30 steps
  const fs::path runs = root / "full" / "X9_diagnosed" / "runs";
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  for (const char* f : {"rope-seed1.h5", "rope-seed2.h5"}) {
    h5::Reader source((runs / "train" / f).string());
    EXPECT_FALSE(source.root().Has("diagnosis")) << "the trained run is left as it was";
    h5::Reader copy((runs / "why" / f).string());
    ASSERT_TRUE(copy.root().Has("diagnosis")) << f;
    const h5::Group d = copy.root().OpenGroup("diagnosis");
    EXPECT_EQ(d.AttrString("interventions"), "distance_clamp,window");
    EXPECT_NE(d.AttrString("not_applied").find("position_remap: 'rope' is not an absolute"),
              std::string::npos);
  }
  ASSERT_EQ(rec.verdict.groups.size(), 2u) << rec.verdict.reason;
  EXPECT_EQ(rec.verdict.groups[0].label, "rope+window");
  ASSERT_EQ(rec.verdict.groups[0].per_seed.size(), 2u) << rec.verdict.reason;
  for (size_t i = 0; i < 2; ++i) {  // each seed's score is its diagnosis' share at 16
    h5::Reader copy((runs / "why" / fmt::format("rope-seed{}.h5", i + 1)).string());
    const std::vector<double> share = copy.root().OpenGroup("diagnosis").ReadDoubles("share");
    ASSERT_EQ(share.size(), 2u);
    EXPECT_DOUBLE_EQ(rec.verdict.groups[0].per_seed[i], share[1]) << "window";
    EXPECT_DOUBLE_EQ(rec.verdict.groups[1].per_seed[i], share[0]) << "distance_clamp";
  }
  EXPECT_EQ(rec.verdict.comparisons[0].test, "paired t");
  // A second call keeps the diagnosed copies.
  const auto before = fs::last_write_time(runs / "why" / "rope-seed1.h5");
  ReproduceClaim(c, opt);
  EXPECT_EQ(fs::last_write_time(runs / "why" / "rope-seed1.h5"), before);
  // A criterion naming an intervention the diagnosis did not apply is refused with its reason.
  const Claim remap = ParseClaim(head + "holds = [\"rope+position_remap > 0\"]\n",
                                 "diagnosed_claim.toml");
  try {
    ReproduceClaim(remap, opt);
    ADD_FAILURE() << "position_remap on RoPE was judged";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("its diagnosis did not apply position_remap ("),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(root);
}

// Attention entropy (/analysis/entropy_mean at the probe lengths), relative to the training
// lengths: planted models whose entropy grows like ln n without log-n scaling and stays flat with
// it (evaluations of the same models, paired), and the negative control where both grow alike.
TEST(Criterion, AttentionEntropyGrowthIsReadFromTheProbeLengths) {
  const fs::path dir = testing::FreshTempDir("criterion_entropy");
  const std::vector<int64_t> lengths = {64, 256};
  auto write = [&](const std::string& label, int seed, double at64, double at256) {
    FakeRun r{label, seed, "completed", lengths, {at64, at256}};
    r.weights_from = (dir / ("trained-seed" + std::to_string(seed) + ".h5")).string();
    WriteFakeRun(dir, r);
  };
  for (int s = 1; s <= 3; ++s) {
    const double base = 2.0 + 0.1 * s;  // ln of the visible keys grows by ln 4 = 1.39 from 64
    write("rope+none", s, base, base + 1.30 + 0.02 * s);
    write("rope+logn", s, base, base + 0.05 + 0.01 * s);
  }
  ClaimCriterion k = Criterion({"rope+none > 1", "rope+logn < rope+none"});
  k.metric = "attention_entropy";
  k.length_lo = k.length_hi = 256;
  k.relative_lo = k.relative_hi = 64;
  Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_NEAR(v.groups[0].per_seed[0], (2.1 + 1.32) / 2.1, 1e-12);
  EXPECT_EQ(v.comparisons[1].test, "paired t");
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  for (int s = 1; s <= 3; ++s) write("rope+logn", s, 2.0 + 0.1 * s, 2.0 + 0.1 * s + 1.30 + 0.02 * s);
  v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.verdict, "partly") << "log-n changing nothing: only the growth holds; " << v.reason;
  EXPECT_FALSE(v.comparisons[1].significant_for);
  fs::remove_all(dir);
}

// A verdict's minutes are those of every run it was judged on: an earlier call's time counts when
// its runs are kept, not when they are gone (a changed claim whose runs were never committed).
TEST(Reproduce, AnEarlierVerdictsTimeCountsOnlyWithItsRuns) {
  const fs::path root = testing::FreshTempDir("reproduce_minutes");
  const Claim c = ParseClaim(ClaimHead("X9", "minutes") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"rope\", \"nope\"]", "train.steps=5", "eval.lengths=[2, 4]", )" +
                                 kTinyModel + R"(]
[criterion]
metric = "loss"
lengths = [4, 4]
holds = ["rope < nope"]
)",
                             "minutes_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  const std::string path = ReproduceClaim(c, opt);
  VerdictRecord rec = ReadVerdictFile(path);
  rec.minutes = 1000;  // as if the runs had taken 1000 minutes
  fs::remove(path);
  WriteVerdictFile(path, rec);
  EXPECT_GE(ReadVerdictFile(ReproduceClaim(c, opt)).minutes, 1000) << "runs kept: their time counts";
  fs::remove_all(fs::path(path).parent_path() / "runs");
  EXPECT_LT(ReadVerdictFile(ReproduceClaim(c, opt)).minutes, 1000) << "runs gone: a new time";
  fs::remove_all(root);
}

// One claim end to end at a tiny budget: two stages (pre-training, then fine-tuning from it),
// the verdict file's fields, the figure and the table row.
TEST(Reproduce, OneClaimEndToEndWritesItsVerdictFigureAndTableRow) {
  const fs::path root = testing::FreshTempDir("reproduce_e2e");
  Claim c = ParseClaim(R"([claim]
id = "P9"
name = "tiny"
statement = "a tiny claim's statement"
source = "lexp's tests"
published = "nope 0.5"
protocol = "copy"
[[stage]]
name = "pretrain"
recipe = "default"
set = ["model.encodings=[\"nope\", \"rope\"]", "model.d_model=16", "model.n_heads=2",
       "model.n_layers=1", "train.batch_size=8", "train.max_length=4", "eval.lengths=[2, 4, 6]",
       "eval.samples=16", "probe.lengths=[4]", "probe.samples=2", "probe.replay=0"]
smoke = ["train.steps=300"]
full = ["train.steps=40"]
[[stage]]
name = "finetune"
recipe = "default"
init_from = "pretrain/rope.h5"
set = ["model.encodings=[\"rope\"]", "model.d_model=16", "model.n_heads=2", "model.n_layers=1",
       "train.batch_size=8", "train.max_length=6", "train.steps=10", "eval.lengths=[2, 4, 6]",
       "eval.samples=16", "probe.lengths=[4]", "probe.samples=2", "probe.replay=0"]
[criterion]
stage = "pretrain"
metric = "token_accuracy"
lengths = [6, 6]
holds = ["nope > rope"]
published = { nope = 0.5 }
[budget]
smoke_minutes = 1
full_minutes = 1
)",
                       "tiny_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  std::vector<std::string> lines;
  opt.progress = [&](const std::string& s) { lines.push_back(s); };
  const std::string path = ReproduceClaim(c, opt);
  EXPECT_EQ(path, (root / "smoke" / "P9_tiny" / "verdict.h5").string());
  EXPECT_TRUE(fs::exists(root / "smoke" / "P9_tiny" / "runs" / "finetune" / "rope.h5"));
  {
    h5::Reader r((root / "smoke" / "P9_tiny" / "runs" / "finetune" / "rope.h5").string());
    EXPECT_NE(r.root().AttrString("init_from").find("pretrain"), std::string::npos);
  }
  {
    // The smoke budget capped the stage's 300 steps at kSmokeSteps, and the run file says so.
    h5::Reader r((root / "smoke" / "P9_tiny" / "runs" / "pretrain" / "rope.h5").string());
    const RecipeConfig ran = ParseRecipe(r.root().OpenGroup("config").ReadString("recipe"), "run");
    EXPECT_EQ(ran.steps, kSmokeSteps);
    EXPECT_EQ(ran.steps_cap, kSmokeSteps);
  }
  // Its verdict is printed as a pipeline check, not as evidence.
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("P9: pipeline check (smoke: at most 30 training steps, not evidence"),
            std::string::npos)
      << lines.back();
  const VerdictRecord rec = ReadVerdictFile(path);
  EXPECT_EQ(rec.claim.id, "P9");
  EXPECT_EQ(rec.budget, "smoke");
  EXPECT_EQ(rec.claim.criterion.metric, "token_accuracy");
  EXPECT_EQ(rec.claim.criterion.holds, (std::vector<std::string>{"nope > rope"}));
  EXPECT_TRUE(rec.verdict.verdict == "reproduced" || rec.verdict.verdict == "partly" ||
              rec.verdict.verdict == "no effect" || rec.verdict.verdict == "contradicted")
      << rec.verdict.verdict;
  EXPECT_EQ(rec.format, "lexp-verdict/2");
  ASSERT_EQ(rec.verdict.comparisons.size(), 1u);
  EXPECT_FALSE(rec.verdict.comparisons[0].test.empty());
  ASSERT_EQ(rec.verdict.groups.size(), 2u);
  EXPECT_EQ(rec.verdict.groups[0].seeds, (std::vector<int>{1}));
  EXPECT_EQ(rec.verdict.groups[0].x, (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(rec.claim.criterion.published.at("nope"), 0.5);
  EXPECT_EQ(rec.verdict.train_max_length, 4);
  {
    h5::Reader r(path);
    EXPECT_EQ(r.root().OpenGroup("status").AttrString("state"), "completed");
    EXPECT_TRUE(r.root().HasAttr("git_commit"));
  }
  // Judged from the pretrain stage's own run files: the scores are theirs.
  const Verdict again =
      JudgeCriterion(c.criterion, (root / "smoke" / "P9_tiny" / "runs" / "pretrain").string());
  EXPECT_EQ(again.groups[1].score, rec.verdict.groups[1].score);
  EXPECT_TRUE(fs::exists(root / "smoke" / "P9_tiny" / "figures" / "reproduction.png"));
  EXPECT_FALSE(fs::exists(root / "smoke" / "P9_tiny" / "figures" / "reproduction.log"))
      << "gnuplot printed something (a quote in a title?)";
  const std::string table = WriteGalleryTable((root / "smoke").string());
  std::ifstream in(table);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("| P9 | a tiny claim's statement | lexp's tests | nope 0.5 |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[figure](P9_tiny/figures/reproduction.png)"), std::string::npos);
  EXPECT_NE(text.find(VerdictRules()), std::string::npos) << "the rules head the table";
  EXPECT_NE(text.find("**The smoke budget checks the pipeline; it reads nothing.**"),
            std::string::npos);
  EXPECT_NE(text.find("| pipeline check: **"), std::string::npos) << "each smoke verdict marked";
  EXPECT_NE(text.find("; nope > rope: "), std::string::npos) << "each comparison's difference";
  EXPECT_NE(text.find("| judged by " + std::string(GitCommit()) + " |"), std::string::npos)
      << "the build that judged it (a claim outside experiments/reproductions/ has no criterion "
         "commit)";
  EXPECT_FALSE(lines.empty());
  // Again: the finished runs are kept (no error about existing run files).
  EXPECT_NO_THROW(ReproduceClaim(c, opt));
  // The full budget is no pipeline check: its runs train their own steps, its verdict is read.
  opt.budget = "full";
  ReproduceClaim(c, opt);
  EXPECT_EQ(lines.back().find("pipeline check"), std::string::npos) << lines.back();
  {
    h5::Reader r((root / "full" / "P9_tiny" / "runs" / "pretrain" / "rope.h5").string());
    const RecipeConfig ran = ParseRecipe(r.root().OpenGroup("config").ReadString("recipe"), "run");
    EXPECT_EQ(ran.steps, 40);
    EXPECT_EQ(ran.steps_cap, 0);
  }
  std::ifstream full_in(WriteGalleryTable((root / "full").string()));
  const std::string full_text((std::istreambuf_iterator<char>(full_in)), {});
  EXPECT_EQ(full_text.find("pipeline"), std::string::npos) << full_text;
  fs::remove_all(root);
}

// A claim whose runs give no finite score (two steps: nothing learnt, so no extrapolation limit)
// still gets its figure, each panel saying so, and gnuplot complains of nothing (M6 and L1 at the
// smoke budget wrote only a .log before).
TEST(Reproduce, AFigureOfRunsWithoutAScoreSaysSoInsteadOfFailing) {
  const fs::path root = testing::FreshTempDir("reproduce_no_score");
  const Claim c = ParseClaim(ClaimHead("X9", "unlearnt") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"nope\", \"rope\"]", "train.steps=2", "eval.lengths=[2, 4, 6]",
       "run.seeds=[1, 2]", )" + kTinyModel + R"(]
[criterion]
metric = "exact_match_limit"
lengths = [4, 4]
holds = ["rope > nope"]
)",
                             "unlearnt_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.budget = "full";
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  ASSERT_FALSE(rec.verdict.groups.empty()) << rec.verdict.reason;
  const fs::path figures = root / "full" / "X9_unlearnt" / "figures";
  EXPECT_TRUE(fs::exists(figures / "reproduction.png"));
  EXPECT_FALSE(fs::exists(figures / "reproduction.log"))
      << testing::Slurp(figures / "reproduction.log");
  EXPECT_NE(testing::Slurp(figures / "reproduction.gp").find("no finite score to draw"),
            std::string::npos);
  // Beside a label with one value (L1 at the smoke budget): the empty label's block keeps its
  // place in the data file, and the single value gets a range around it.
  VerdictRecord mixed = rec;
  ASSERT_EQ(mixed.verdict.groups.size(), 2u);
  GroupScore& none = mixed.verdict.groups[0];
  none.seeds.clear();
  none.per_seed.clear();
  none.x.clear();
  none.curve_mean.clear();
  none.curve_min.clear();
  none.curve_max.clear();
  GroupScore& one = mixed.verdict.groups[1];
  one.seeds = {1, 2};
  one.per_seed = {256, 256};
  one.score = one.lo = one.hi = 256;
  one.x = {4};
  one.curve_mean = one.curve_min = one.curve_max = {256};
  const fs::path mixed_dir = root / "mixed";
  fs::create_directories(mixed_dir);
  WriteVerdictFile((mixed_dir / "verdict.h5").string(), mixed);
  DrawReproduction(mixed_dir.string());
  EXPECT_TRUE(fs::exists(mixed_dir / "figures" / "reproduction.png"));
  EXPECT_FALSE(fs::exists(mixed_dir / "figures" / "reproduction.log"))
      << testing::Slurp(mixed_dir / "figures" / "reproduction.log");
  fs::remove_all(root);
}

// A claim that fine-tunes gives each seed its own pre-training ({seed} in init_from): the seeds'
// spread then includes the pre-training's, and two fine-tunings of one seed share it, so their
// comparison is paired.
TEST(Reproduce, EachSeedFineTunesItsOwnPreTrainingAndTheVariantsArePaired) {
  const fs::path root = testing::FreshTempDir("reproduce_seed_init");
  const Claim c = ParseClaim(ClaimHead("X9", "seeded") + R"([[stage]]
name = "pretrain"
recipe = "default"
set = ["model.encodings=[\"rope\"]", "train.steps=12", "eval.lengths=[2, 4, 6]",
       "run.seeds=[1, 2, 3]", )" + kTinyModel + R"(]
[[stage]]
name = "finetune"
recipe = "default"
init_from = "pretrain/rope-seed{seed}.h5"
set = ["model.encodings=[\"rope\"]", "train.steps=6", "eval.lengths=[2, 4, 6]",
       "run.seeds=[1, 2, 3]", "run.variants=[\"slow: train.lr=0.0001\", \"fast\"]",
       )" + kTinyModel + R"(]
[criterion]
metric = "loss"
lengths = [6, 6]
holds = ["rope-fast < rope-slow"]
)",
                             "seeded_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  opt.budget = "full";  // the smoke budget keeps 2 seeds and 30 steps
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  const fs::path runs = root / "full" / "X9_seeded" / "runs";
  for (int seed = 1; seed <= 3; ++seed)
    for (const char* variant : {"slow", "fast"}) {
      h5::Reader r((runs / "finetune" / fmt::format("rope-{}-seed{}.h5", variant, seed)).string());
      EXPECT_EQ(fs::path(r.root().AttrString("init_from")).filename().string(),
                fmt::format("rope-seed{}.h5", seed));
    }
  ASSERT_EQ(rec.verdict.comparisons.size(), 1u);
  EXPECT_EQ(rec.verdict.comparisons[0].test, "paired t");
  EXPECT_EQ(rec.verdict.comparisons[0].paired_seeds, 3);
  fs::remove_all(root);
}

// The verdict rule behind that test: a claim that fine-tunes several seeds from one pre-training
// (no {seed} in init_from) would give intervals without the pre-training's spread; it is refused
// before anything trains, naming the fix.
TEST(Reproduce, SeveralSeedsFineTunedFromOnePreTrainingAreRefused) {
  const fs::path root = testing::FreshTempDir("reproduce_one_pretraining");
  const Claim c = ParseClaim(ClaimHead("X9", "shared") + R"([[stage]]
name = "pretrain"
recipe = "default"
set = ["model.encodings=[\"rope\"]", "train.steps=12", "eval.lengths=[2, 4, 6]",
       )" + kTinyModel + R"(]
[[stage]]
name = "finetune"
recipe = "default"
init_from = "pretrain/rope.h5"
set = ["model.encodings=[\"rope\"]", "train.steps=6", "eval.lengths=[2, 4, 6]",
       "run.seeds=[1, 2, 3]", )" + kTinyModel + R"(]
[criterion]
metric = "loss"
lengths = [6, 6]
holds = ["rope < 9"]
)",
                             "shared_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  opt.budget = "full";  // the smoke budget keeps 2 seeds and 30 steps
  try {
    ReproduceClaim(c, opt);
    ADD_FAILURE() << "three fine-tuning seeds from one pre-training were accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("starts all 3 seeds from one pre-training"), std::string::npos) << what;
    EXPECT_NE(what.find("{seed}"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(root / "full" / "X9_shared" / "runs" / "pretrain" / "rope.h5"));
  fs::remove_all(root);
}

// A claim with a trend is judged again at each number of steps of its trend stage, each in its
// own directory; the verdict file keeps every point in order of steps, the budget's own among
// them; the table gives the verdict at each and links the figure against steps.
TEST(Reproduce, ATrendJudgesTheClaimAgainAtEachNumberOfSteps) {
  const fs::path root = testing::FreshTempDir("reproduce_trend");
  const Claim c = ParseClaim(ClaimHead("P9", "trend") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"nope\", \"rope\"]", "train.steps=12", "eval.lengths=[2, 4, 6]",
       )" + kTinyModel + R"(]
[criterion]
metric = "token_accuracy"
lengths = [6, 6]
holds = ["nope > rope"]
[trend]
stage = "train"
smoke = [24, 6, 12]
)",
                             "trend_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  const fs::path dir = root / "smoke" / "P9_trend";
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  EXPECT_TRUE(fs::exists(dir / "runs" / "train" / "rope.h5"));
  EXPECT_TRUE(fs::exists(dir / "steps6" / "runs" / "train" / "rope.h5"));
  EXPECT_TRUE(fs::exists(dir / "steps24" / "runs" / "train" / "nope.h5"));
  EXPECT_FALSE(fs::exists(dir / "steps12")) << "12 is the budget's own point";
  {
    h5::Reader r((dir / "steps24" / "runs" / "train" / "rope.h5").string());
    EXPECT_EQ(r.root().OpenGroup("train").ReadDoubles("loss").size(), 24u);
  }
  EXPECT_EQ(rec.trend_stage, "train");
  ASSERT_EQ(rec.trend.size(), 3u);
  EXPECT_EQ(rec.trend[0].steps, 6);
  EXPECT_EQ(rec.trend[1].steps, 12);
  EXPECT_EQ(rec.trend[2].steps, 24);
  EXPECT_TRUE(rec.trend[1].budget);
  EXPECT_FALSE(rec.trend[0].budget);
  EXPECT_EQ(rec.trend[1].verdict.verdict, rec.verdict.verdict);
  ASSERT_EQ(rec.trend[1].verdict.groups.size(), 2u);
  EXPECT_EQ(rec.trend[1].verdict.groups[1].score, rec.verdict.groups[1].score);
  EXPECT_TRUE(fs::exists(dir / "figures" / "reproduction_steps.png"));
  EXPECT_FALSE(fs::exists(dir / "figures" / "reproduction_steps.log"));
  std::ifstream in(WriteGalleryTable((root / "smoke").string()));
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("with steps: 6 steps: "), std::string::npos) << text;
  EXPECT_NE(text.find("12 steps (this budget): "), std::string::npos) << text;
  EXPECT_NE(text.find("[against steps](P9_trend/figures/reproduction_steps.png)"),
            std::string::npos)
      << text;
  fs::remove_all(root);
}

// A pre-training that diverges leaves its fine-tuning untested: the verdict says so and why,
// and nothing is thrown (the rest of a gallery goes on).
TEST(Reproduce, AFineTuningFromADivergedRunIsNotTestable) {
  const fs::path root = testing::FreshTempDir("reproduce_diverged");
  const std::string tiny =
      "\"model.d_model=16\", \"model.n_heads=2\", \"model.n_layers=1\", \"train.batch_size=8\", "
      "\"train.max_length=4\", \"eval.lengths=[2, 4]\", \"eval.samples=8\", "
      "\"probe.lengths=[4]\", \"probe.samples=2\", \"probe.replay=0\", "
      "\"model.encodings=[\\\"rope\\\"]\"";
  const Claim c = ParseClaim(
      "[claim]\nid = \"P9\"\nname = \"diverged\"\nstatement = \"s\"\nsource = \"src\"\n"
      "published = \"p\"\nprotocol = \"pr\"\n"
      "[[stage]]\nname = \"pretrain\"\nrecipe = \"default\"\nset = [" +
          tiny +
          ", \"train.steps=20\", \"train.lr=10\", \"train.weight_decay=10\", "
          "\"train.warmup_steps=1\"]\n"
          "[[stage]]\nname = \"finetune\"\nrecipe = \"default\"\ninit_from = \"pretrain/rope.h5\"\n"
          "set = [" +
          tiny +
          ", \"train.steps=5\"]\n"
          "[criterion]\nmetric = \"loss\"\nlengths = [4, 4]\nholds = [\"rope < 1\"]\n",
      "diverged_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  EXPECT_EQ(rec.verdict.verdict, "not testable");
  EXPECT_NE(rec.verdict.reason.find("starts from 'pretrain/rope.h5', which did not complete"),
            std::string::npos)
      << rec.verdict.reason;
  fs::remove_all(root);
}

}  // namespace
}  // namespace lexp
