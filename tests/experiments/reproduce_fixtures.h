// What the reproduction tests share (claim_files_test.cc, criterion_test.cc, reproduce_test.cc,
// reproduce_finetune_test.cc): hand-made run files that order a claim's labels as it claims or the
// reverse, a test criterion, the input error of judging or parsing, and a tiny claim's head.
#pragma once

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

namespace lexp::reproduce_testing {

namespace fs = std::filesystem;

// A list of values built out of line: GCC 12.2 at -O2/-O3 -march=x86-64-v4 (AVX-512) stored
// {1, 1, 1, 1} for `value = {1.0, 1.0, 1.0, 0.0}` inlined in a loop of this file (the value
// numbering of a vectorized constant store; -fno-tree-fre or -fno-tree-slp-vectorize avoid it).
inline __attribute__((noinline)) std::vector<double> Values(std::initializer_list<double> v) {
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

inline void WriteFakeRun(const fs::path& dir, const FakeRun& r) {
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
inline std::map<std::string, int> Levels(const ClaimCriterion& k, const std::vector<Comparison>& span) {
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
inline void WriteOrderedLimitRuns(const fs::path& dir, const ClaimCriterion& k, bool reverse) {
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

inline void WriteOrderedRuns(const fs::path& dir, const ClaimCriterion& k, bool reverse) {
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

// The input error judging `k` on the runs of `dir` raises (empty when there is none).
inline std::string JudgeError(const ClaimCriterion& k, const fs::path& dir) {
  try {
    JudgeCriterion(k, dir.string());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

inline ClaimCriterion Criterion(std::vector<std::string> holds, std::string seeds = "mean") {
  ClaimCriterion k;
  k.metric = "exact_match";
  k.length_lo = 17;
  k.length_hi = 32;
  k.seeds = std::move(seeds);
  k.holds = std::move(holds);
  return k;
}

inline std::string ClaimError(const std::string& text) {
  try {
    ParseClaim(text, "bad.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The [claim] table of a test claim, and the overrides that make the default recipe's models tiny.
inline std::string ClaimHead(const std::string& id, const std::string& name) {
  return "[claim]\nid = \"" + id + "\"\nname = \"" + name +
         "\"\nstatement = \"s\"\nsource = \"src\"\npublished = \"p\"\nprotocol = \"pr\"\n";
}
inline constexpr const char* kTinyModel =
    "\"model.d_model=16\", \"model.n_heads=2\", \"model.n_layers=1\", \"train.batch_size=8\", "
    "\"train.max_length=4\", \"eval.samples=8\", \"probe.lengths=[4]\", \"probe.samples=2\", "
    "\"probe.replay=0\"";

}  // namespace lexp::reproduce_testing
