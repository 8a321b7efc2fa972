#include "experiments/reproduce/run_scores.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "analysis/base_law.h"
#include "experiments/replay/diagnosis.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_data.h"

namespace lexp {

const std::vector<CriterionMetric>& CriterionMetrics() {
  static const std::vector<CriterionMetric> metrics = {
      {"exact_match", "exact match (fraction of sequences)", true, true, true},
      {"token_accuracy", "token accuracy (fraction of graded tokens)", true, true, true},
      {"loss", "loss (nats per graded token)", false, false, true},
      {"js_to_reference",
       "JS divergence to the reference NoPE run (nats; per layer the closest pair of heads, mean "
       "over layers)",
       false, false, false},
      {"attention_entropy",
       "attention entropy (nats over the visible keys; mean over queries, probe sequences, layers "
       "and heads)",
       false, false, false},
      {"sink_mass",
       "attention on the first token (mean over queries 1.., probe sequences, layers and heads)",
       true, false, false},
      {"loss_limit",
       "extrapolation limit by the loss (the longest evaluated length up to which the loss stays "
       "within 1.1 x its value at the training length; lengths)",
       true, false, false},
      {"exact_match_limit",
       "extrapolation limit by exact match (the longest evaluated length up to which it stays at "
       "least 0.9 x its value at the training length; lengths)",
       true, false, false},
      {"token_accuracy_limit",
       "extrapolation limit by token accuracy (the longest evaluated length up to which it stays "
       "at least 0.9 x its value at the training length; lengths)",
       true, false, false},
      {"gap_share",
       "share of the loss gap beyond N closed by the intervention (lexp diagnose; 1: closed, 0: "
       "no effect, below 0: widened)",
       true, false, false},
      {"shift_move",
       "attention's move under a shift of every position id by 16 (sum over keys of |a(pos + 16) "
       "- a(pos)|, mean over queries, probe sequences, layers and heads; 0..2)",
       false, false, false},
      {"position_probe_error",
       "position probe error (the index probe's RMSE on held-out sequences of the training "
       "lengths over their mean's; smallest over blocks 1..L)",
       false, false, false},
  };
  return metrics;
}

const CriterionMetric& FindCriterionMetric(const std::string& name, const std::string& where) {
  std::string names;
  for (const auto& m : CriterionMetrics()) {
    if (m.name == name) return m;
    names += (names.empty() ? "" : ", ") + m.name;
  }
  FailInput(where + " = '" + name + "'; allowed: " + names);
}

namespace {

namespace fs = std::filesystem;

// /eval/<metric> at every evaluated length.
void ReadEvalPoints(const h5::Group& root, const std::string& path, const std::string& metric,
                    RunScores& s) {
  const h5::Group eval = root.OpenGroup("eval");
  LEXP_INPUT_CHECK(eval.Has(metric), "run file '" + path + "' has no /eval/" + metric);
  const std::vector<int64_t> length = eval.ReadInts("length");
  const uint64_t L = length.size();
  const std::vector<double> value = eval.ReadDoublesShaped(metric, {L});
  const std::vector<int64_t> samples = eval.ReadIntsShaped("samples", {L});
  for (uint64_t i = 0; i < L; ++i) {
    const double n = static_cast<double>(length[i]);
    s.points.push_back({n, n, value[i], static_cast<double>(samples[i]), 0});
  }
}

// attention_entropy at every probe length: /analysis/entropy_mean (Chiang & Cholak 2022, the
// quantity log-n scaling keeps flat).
void ReadEntropyPoints(const h5::Group& root, const std::string& path, RunScores& s) {
  LEXP_INPUT_CHECK(root.Has("analysis") && root.OpenGroup("analysis").Has("entropy_mean"),
                   "run file '" + path + "' has no /analysis/entropy_mean: attention_entropy is "
                   "measured at the probe lengths (probe.lengths)");
  const h5::Group an = root.OpenGroup("analysis");
  std::vector<uint64_t> got;
  const std::vector<int64_t> n = an.ReadIntsShaped("probe_length", {h5::Group::kAnySize}, &got);
  const std::vector<double> e = an.ReadDoublesShaped("entropy_mean", {got[0]});
  for (size_t i = 0; i < n.size(); ++i) {
    const double len = static_cast<double>(n[i]);
    s.points.push_back({len, len, e[i], 0, 0});
  }
  std::sort(s.points.begin(), s.points.end(),
            [](const RunPoint& a, const RunPoint& b) { return a.x < b.x; });
}

// sink_mass at every probe length of /analysis/geometry: head_sink_mass, mean over layers and heads
// (Xiao et al. 2023: trained language models put a large share of attention on the first tokens).
void ReadSinkPoints(const h5::Group& root, const std::string& path, RunScores& s) {
  const std::string missing = "run file '" + path +
                              "' has no /analysis/geometry/length_<n>/head_sink_mass: sink_mass "
                              "is measured on the probe sequences at the probe lengths";
  LEXP_INPUT_CHECK(root.Has("analysis") && root.OpenGroup("analysis").Has("geometry"), missing);
  const h5::Group geo = root.OpenGroup("analysis").OpenGroup("geometry");
  for (const std::string& child : geo.Children()) {
    if (child.rfind("length_", 0) != 0) continue;
    const h5::Group g = geo.OpenGroup(child);
    LEXP_INPUT_CHECK(g.Has("head_sink_mass"), missing);
    std::vector<uint64_t> dims;
    const std::vector<double> mass = g.ReadDoublesShaped(
        "head_sink_mass", {h5::Group::kAnySize, h5::Group::kAnySize}, &dims);
    LEXP_INPUT_CHECK(!mass.empty(), missing);
    double sum = 0;
    for (const double v : mass) sum += v;
    const double n = static_cast<double>(g.AttrInt("length"));
    s.points.push_back({n, n, sum / static_cast<double>(mass.size()), 0, 0});
  }
  std::sort(s.points.begin(), s.points.end(),
            [](const RunPoint& a, const RunPoint& b) { return a.x < b.x; });
  LEXP_INPUT_CHECK(!s.points.empty(), missing);
}

// shift_move from /analysis/position_shift (Wang et al. 2024, arXiv:2411.13476, Eq. 4): at each
// probe length, row_l1 at the first shift (16, the paper's Fig. 1), mean over layers and heads. A
// shift the run could not replay (NaN) is refused rather than averaged.
void ReadShiftPoints(const h5::Group& root, const std::string& path, RunScores& s) {
  const std::string missing =
      "run file '" + path +
      "' has no /analysis/position_shift: shift_move needs the replay analysis position_shift "
      "(probe.replay = 1 with probe.analyses naming it, or `lexp analyze " + path + "`)";
  LEXP_INPUT_CHECK(root.Has("analysis") && root.OpenGroup("analysis").Has("position_shift"),
                   missing);
  const h5::Group g = root.OpenGroup("analysis").OpenGroup("position_shift");
  LEXP_INPUT_CHECK(g.Has("shift") && g.Has("length") && g.Has("row_l1"), missing);
  const std::vector<double> shifts = g.ReadDoubles("shift");
  const std::vector<int64_t> lengths = g.ReadInts("length");
  LEXP_INPUT_CHECK(!shifts.empty() && shifts[0] == 16.0 && !lengths.empty(),
                   "run file '" + path + "': /analysis/position_shift/shift does not start at 16 "
                   "(shift_move reads the move at 16)");
  std::vector<uint64_t> dims;
  const std::vector<double> l1 = g.ReadDoublesShaped(
      "row_l1", {shifts.size(), lengths.size(), h5::Group::kAnySize, h5::Group::kAnySize}, &dims);
  const uint64_t per_length = dims[2] * dims[3];
  LEXP_INPUT_CHECK(per_length > 0, missing);
  for (size_t p = 0; p < lengths.size(); ++p) {
    double sum = 0;
    for (uint64_t i = 0; i < per_length; ++i) sum += l1[p * per_length + i];  // shift index 0
    LEXP_INPUT_CHECK(std::isfinite(sum),
                     "run file '" + path + "': /analysis/position_shift has no move at shift 16 "
                     "and length " + std::to_string(lengths[p]) + " (not replayed: see its "
                     "not_applicable_shift_16 attribute)");
    const double n = static_cast<double>(lengths[p]);
    s.points.push_back({n, n, sum / static_cast<double>(per_length), 0, 0});
  }
  std::sort(s.points.begin(), s.points.end(),
            [](const RunPoint& a, const RunPoint& b) { return a.x < b.x; });
}

// position_probe_error from /analysis/position_probes (Haviv et al. 2022: a causal model without
// positional encoding still carries its tokens' positions): one value at the run's training
// length, the smallest over the streams 1..L of index_rmse_held_out / index_chance_held_out: the
// probe fitted and read in distribution (other sequences of the training lengths), as Haviv et al.
// probe. The in-range rows of the longest length are not in distribution (their states come from
// longer sequences: a bidirectional model without position read 1.34 x chance there).
void ReadProbePoints(const h5::Group& root, const std::string& path, RunScores& s) {
  const std::string missing =
      "run file '" + path +
      "' has no /analysis/position_probes: position_probe_error needs the replay analyses "
      "(probe.replay = 1, or `lexp analyze " + path + "`)";
  LEXP_INPUT_CHECK(root.Has("analysis") && root.OpenGroup("analysis").Has("position_probes"),
                   missing);
  const h5::Group p = root.OpenGroup("analysis").OpenGroup("position_probes");
  LEXP_INPUT_CHECK(p.Has("index_rmse_held_out"),
                   "run file '" + path +
                       "': /analysis/position_probes has no index_rmse_held_out (analysed by an "
                       "earlier lexp): `lexp analyze " + path + "` measures it again");
  std::vector<uint64_t> got;
  const std::vector<double> rmse =
      p.ReadDoublesShaped("index_rmse_held_out", {h5::Group::kAnySize}, &got);
  const std::vector<double> chance = p.ReadDoublesShaped("index_chance_held_out", {got[0]});
  double least = std::numeric_limits<double>::infinity();
  for (uint64_t r = 1; r < got[0]; ++r)
    if (std::isfinite(rmse[r]) && std::isfinite(chance[r]) && chance[r] > 0)
      least = std::min(least, rmse[r] / chance[r]);
  LEXP_INPUT_CHECK(std::isfinite(least), "run file '" + path +
                                             "': /analysis/position_probes holds no finite "
                                             "held-out error after the first block");
  const double n = static_cast<double>(s.train_max_length);
  s.points.push_back({n, n, least, 0, 0});
}

// <score>_limit: the extrapolation limit of `lexp base-law` (Liu et al. 2023; analysis/base_law.h)
// on the run's /eval, with its relative tolerance 0.1, in task lengths (base-law's table is in
// tokens): the longest evaluated length beyond the training length N up to which every score
// stays within the tolerance of the score at the longest evaluated length <= N (the reference: a
// loss at most 1.1 x it, an accuracy at least 0.9 x it); the reference length when the first
// longer length already fails; censored (a lower bound) when every evaluated length passes. One
// value per run, at N.
void ReadLimitPoints(const h5::Group& root, const std::string& path, const std::string& metric,
                     RunScores& s) {
  const std::string score = metric.substr(0, metric.size() - std::string("_limit").size());
  const h5::Group eval = root.OpenGroup("eval");
  LEXP_INPUT_CHECK(eval.Has(score), "run file '" + path + "' has no /eval/" + score);
  const std::vector<int64_t> length = eval.ReadInts("length");
  const std::vector<double> value = eval.ReadDoublesShaped(score, {length.size()});
  int ref = -1;
  std::vector<double> beyond_length, beyond_value;
  for (size_t i = 0; i < length.size(); ++i) {
    if (length[i] <= s.train_max_length) {
      if (ref < 0 || length[i] > length[static_cast<size_t>(ref)]) ref = static_cast<int>(i);
    } else {
      beyond_length.push_back(static_cast<double>(length[i]));
      beyond_value.push_back(value[i]);
    }
  }
  LEXP_INPUT_CHECK(ref >= 0 && !beyond_length.empty(),
                   "run file '" + path + "': " + metric +
                       " needs an evaluated length <= the training length " +
                       std::to_string(s.train_max_length) + " and one beyond it");
  const LimitCriterion c = score == "loss"          ? LimitCriterion::kLoss
                           : score == "exact_match" ? LimitCriterion::kExactMatch
                                                    : LimitCriterion::kTokenAccuracy;
  // A run that did not learn the task has nothing to extrapolate (lexp base-law's rule): by loss,
  // its loss at the reference length must be below 0.95 x the loss at the shortest evaluated
  // length; by an accuracy, at least 0.5 there. Such a run is not scored (counted incomplete).
  const double at_ref = value[static_cast<size_t>(ref)];
  size_t shortest = 0;
  for (size_t i = 1; i < length.size(); ++i)
    if (length[i] < length[shortest]) shortest = i;
  const bool learnt =
      c == LimitCriterion::kLoss ? at_ref < 0.95 * value[shortest] : at_ref >= 0.5;
  if (!learnt) {
    s.state = "not learnt";
    return;
  }
  double limit = ExtrapolationLimitMeasured(beyond_length, beyond_value, at_ref, 0.1, c);
  s.limit_censored = limit >= beyond_length.back();
  if (limit == 0) limit = static_cast<double>(length[static_cast<size_t>(ref)]);
  const double n = static_cast<double>(s.train_max_length);
  s.points.push_back({n, n, limit, 0, 0});
}

// js_to_reference at every probe length of /analysis/geometry: per layer the smallest divergence
// over (head, reference head), mean over layers (Kazemnejad et al. 2023, eq. 2 and their mean
// over layers).
void ReadJsPoints(const h5::Group& root, const std::string& path, RunScores& s) {
  const std::string missing =
      "run file '" + path +
      "' has no JS divergence to a reference run (/analysis/geometry/length_<n>/js_vs_reference: "
      "the NoPE run beside it with the same seed must have completed when it was analysed; "
      "`lexp analyze " +
      path + " --reference NOPE_RUN` adds it)";
  LEXP_INPUT_CHECK(root.Has("analysis") && root.OpenGroup("analysis").Has("geometry"), missing);
  const h5::Group geo = root.OpenGroup("analysis").OpenGroup("geometry");
  for (const std::string& child : geo.Children()) {
    if (child.rfind("length_", 0) != 0) continue;
    const h5::Group g = geo.OpenGroup(child);
    LEXP_INPUT_CHECK(g.Has("js_vs_reference"), missing);
    std::vector<uint64_t> dims;
    const std::vector<double> js = g.ReadDoublesShaped(
        "js_vs_reference", {h5::Group::kAnySize, h5::Group::kAnySize, h5::Group::kAnySize}, &dims);
    double sum = 0;
    int layers = 0;
    for (uint64_t l = 0; l < dims[0]; ++l) {
      double least = std::numeric_limits<double>::infinity();
      for (uint64_t i = 0; i < dims[1] * dims[2]; ++i) {
        const double v = js[l * dims[1] * dims[2] + i];
        if (std::isfinite(v)) least = std::min(least, v);
      }
      if (!std::isfinite(least)) continue;
      sum += least;
      ++layers;
    }
    if (layers == 0) continue;
    const double n = static_cast<double>(g.AttrInt("length"));
    s.points.push_back({n, n, sum / layers, 0, 0});
  }
  std::sort(s.points.begin(), s.points.end(),
            [](const RunPoint& a, const RunPoint& b) { return a.x < b.x; });
  LEXP_INPUT_CHECK(!s.points.empty(), missing);
}

// /train/eval_history's metric at every evaluation, against the compute of the steps before it.
void ReadComputePoints(const h5::Group& root, const std::string& path, const std::string& metric,
                       const std::string& compute, RunScores& s) {
  const h5::Group train = root.OpenGroup("train");
  LEXP_INPUT_CHECK(train.Has("eval_history"),
                   "run file '" + path +
                       "' has no /train/eval_history: a criterion at equal compute needs "
                       "train.eval_every > 0");
  const char* per_step = compute == "flops" ? "flops" : compute == "steps" ? "step" : "tokens";
  LEXP_INPUT_CHECK(train.Has(per_step), "run file '" + path + "' has no /train/" + per_step +
                                            " (run files of before 2026-12-02 do not)");
  std::vector<uint64_t> got;
  const std::vector<int64_t> steps = train.ReadIntsShaped("step", {h5::Group::kAnySize}, &got);
  const uint64_t S = got[0];
  std::vector<double> cost(S);
  if (compute == "flops") {
    cost = train.ReadDoublesShaped("flops", {S});
  } else if (compute == "steps") {
    cost.assign(S, 1.0);
  } else {
    const std::vector<int64_t> tokens = train.ReadIntsShaped("tokens", {S});
    const std::vector<double> rate =
        compute == "seconds" ? train.ReadDoublesShaped("tokens_per_s", {S}) : std::vector<double>{};
    for (uint64_t i = 0; i < S; ++i)
      cost[i] = static_cast<double>(tokens[i]) / (compute == "seconds" ? rate[i] : 1.0);
  }
  // before[t]: the compute of the steps trained before step t.
  std::vector<double> before(S + 1, 0.0);
  for (uint64_t i = 0; i < S; ++i) before[i + 1] = before[i] + cost[i];
  s.total_compute = before[S];
  const h5::Group h = train.OpenGroup("eval_history");
  const std::vector<int64_t> step = h.ReadIntsShaped("step", {h5::Group::kAnySize}, &got);
  const uint64_t R = got[0];
  const std::vector<int64_t> length = h.ReadIntsShaped("length", {R});
  const std::vector<double> value = h.ReadDoublesShaped(metric, {R});
  for (uint64_t r = 0; r < R; ++r) {
    LEXP_INPUT_CHECK(step[r] >= 0 && static_cast<uint64_t>(step[r]) <= S,
                     "run file '" + path + "': /train/eval_history/step beyond /train");
    s.points.push_back({before[step[r]], static_cast<double>(length[r]), value[r], 0, step[r]});
  }
}

// gap_share: one RunScores per intervention of /diagnosis the criterion names (label
// <label>+<intervention>), the share at each diagnosed length. A length whose gap is not
// significant (share NaN) has no share: within the criterion's lengths the run is then "no
// significant gap" there, unscored; outside them the length is left out.
std::vector<RunScores> ReadDiagnosisRuns(const h5::Group& root, const std::string& path,
                                         const RunScores& run, const ClaimCriterion& k,
                                         const std::vector<std::string>& labels) {
  std::vector<RunScores> out;
  for (const auto& name : DiagnosisInterventions()) {
    RunScores s = run;
    // Every intervention replays this one trained model: its labels of a seed are paired.
    s.origin = fs::absolute(path).lexically_normal().string();
    s.label = run.label + "+" + name;
    if (std::find(labels.begin(), labels.end(), s.label) != labels.end()) out.push_back(s);
  }
  if (out.empty() || run.state != "completed") return out;
  LEXP_INPUT_CHECK(root.Has("diagnosis"), "run file '" + path +
                                              "' has no /diagnosis: gap_share is read from a "
                                              "diagnosis (lexp diagnose, or a stage with "
                                              "diagnose = [...])");
  const h5::Group g = root.OpenGroup("diagnosis");
  std::vector<std::string> run_names;
  std::stringstream list(g.AttrString("interventions"));
  for (std::string n; std::getline(list, n, ',');) run_names.push_back(n);
  std::vector<uint64_t> got;
  const std::vector<int64_t> length = g.ReadIntsShaped("length", {h5::Group::kAnySize}, &got);
  const uint64_t L = got[0], I = run_names.size();
  const std::vector<double> share =
      I == 0 ? std::vector<double>{} : g.ReadDoublesShaped("share", {I, L});
  for (RunScores& s : out) {
    const std::string name = s.label.substr(run.label.size() + 1);
    const auto at = std::find(run_names.begin(), run_names.end(), name);
    LEXP_INPUT_CHECK(at != run_names.end(),
                     "run file '" + path + "': the criterion names " + s.label +
                         ", but its diagnosis did not apply " + name + " (" +
                         g.AttrString("not_applied") + ")");
    const size_t i = static_cast<size_t>(at - run_names.begin());
    for (uint64_t j = 0; j < L; ++j) {
      const double n = static_cast<double>(length[j]);
      if (!std::isnan(share[i * L + j])) {
        s.points.push_back({n, n, share[i * L + j], 0, 0});
      } else if (length[j] >= k.length_lo && length[j] <= k.length_hi) {
        s.state = fmt::format("no significant gap at length {}", length[j]);
        s.points.clear();
        break;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<RunScores> ReadRun(const std::string& path, const ClaimCriterion& k,
                               const std::vector<std::string>& labels) {
  h5::Reader r(path);
  const h5::Group& root = r.root();
  RunScores s;
  s.label = GroupKey(RunLabel(root));  // a seed sweep's runs group under their label
  const bool diagnosis = k.metric == "gap_share";
  if (!diagnosis && std::find(labels.begin(), labels.end(), s.label) == labels.end()) return {};
  s.seed = static_cast<int>(root.AttrInt("seed"));
  // An evaluation of trained weights comes from them; a fine-tuning from its pre-training.
  for (const char* from : {"weights_from", "init_from"})
    if (s.origin.empty() && root.HasAttr(from))
      s.origin = fs::absolute(root.AttrString(from)).lexically_normal().string();
  s.train_max_length = static_cast<int>(root.AttrInt("train_max_length"));
  s.state = root.Has("status") ? root.OpenGroup("status").AttrString("state") : "interrupted";
  if (diagnosis) return ReadDiagnosisRuns(root, path, s, k, labels);
  if (s.state != "completed") return {s};
  if (!k.compute.empty()) {
    ReadComputePoints(root, path, k.metric, k.compute, s);
  } else if (k.metric == "js_to_reference") {
    ReadJsPoints(root, path, s);
  } else if (k.metric == "attention_entropy") {
    ReadEntropyPoints(root, path, s);
  } else if (k.metric == "sink_mass") {
    ReadSinkPoints(root, path, s);
  } else if (k.metric == "shift_move") {
    ReadShiftPoints(root, path, s);
  } else if (k.metric == "position_probe_error") {
    ReadProbePoints(root, path, s);
  } else if (k.metric.size() > 6 && k.metric.substr(k.metric.size() - 6) == "_limit") {
    ReadLimitPoints(root, path, k.metric, s);
  } else {
    ReadEvalPoints(root, path, k.metric, s);
  }
  return {s};
}

}  // namespace lexp
