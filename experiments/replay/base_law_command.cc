#include "experiments/replay/base_law_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "analysis/base_law.h"
#include "analysis/censored_regression.h"
#include "analysis/rope_theory.h"
#include "experiments/core/provenance.h"
#include "experiments/core/run_file.h"
#include "experiments/replay/model_replay.h"
#include "experiments/replay/rotary_pairs.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/parallel.h"
#include "notebooks_cpp/figures.h"
#include "pe/rope.h"

namespace lexp {
namespace {

constexpr double kLearntAccuracy = 0.5;  // an accuracy criterion's "learnt" at the reference length

struct Row {
  std::string label;
  LimitCriterion criterion = LimitCriterion::kLoss;
  double base, pretrain_base, predicted, predicted_own, measured, longest;
  double limit_lo, limit_hi;  // tokens: the limit lies in [lo, hi) (lo 0: below hi; hi inf)
  double train_span;          // positions training showed (rotary_pairs.h TrainedDistance + 1)
  int rotary_dims, train_tokens, d_extra, d_extra_own;
  bool censored, immediate, learnt, fine_tuned;
};

// The RoPE base a run file's recipe gave (RoPE's default 1e4 when it names none).
double RopeBaseOf(const h5::Group& root) {
  if (!root.Has("config")) return 1e4;
  const h5::Group cfg = root.OpenGroup("config");
  return cfg.HasAttr("encoding_option.base") ? std::stod(cfg.AttrString("encoding_option.base"))
                                             : 1e4;
}

// The RoPE base of the run a fine-tuned run started from: its recipe's base (RoPE's default 1e4
// when it names none). init_from is the path the recipe gave (relative to where it ran); it is
// also tried relative to the fine-tuned run's directory. *found = false when neither file exists:
// 1e4 is then assumed, and said so.
double PretrainingBase(const std::string& init_from, const std::string& run_file, bool* found) {
  namespace fs = std::filesystem;
  fs::path file = init_from;
  if (!fs::is_regular_file(file)) file = fs::path(run_file).parent_path() / init_from;
  if (!fs::is_regular_file(file))
    file = fs::path(run_file).parent_path() / fs::path(init_from).filename();
  *found = fs::is_regular_file(file);
  if (!*found) return 1e4;
  h5::Reader r(file.string());
  return RopeBaseOf(r.root());
}

// The exponent of ln(limit) on ln(base) over the learnt runs at bases >= 1e4, fitted separately
// for runs from scratch and fine-tuned runs, each limit as the interval the evaluation grid gives
// (analysis/censored_regression.h), against the exponent each reading predicts: fine-tuned runs
// keep the pre-training d_extra, so d_extra / d; runs from scratch have their own d_extra at every
// base, so the least-squares slope of their own ln T_extra on ln(base) (runs whose every pair
// completes a period, T_extra infinite, left out of it). Writes attributes fit_<group>_* and
// returns report lines.
std::string FitExponents(const std::vector<Row>& rows, const h5::Group& root) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::string report;
  for (const bool tuned : {false, true}) {
    const std::string group = tuned ? "fine_tuned" : "scratch";
    int runs = 0, not_learnt = 0, small = 0;
    std::vector<CensoredPoint> pts;
    std::vector<double> xo, yo;
    double predicted = nan;
    for (const auto& r : rows) {
      if (r.fine_tuned != tuned) continue;
      ++runs;
      if (!r.learnt) {
        ++not_learnt;
        continue;
      }
      if (r.base < 1e4) {
        ++small;
        continue;
      }
      pts.push_back(
          {std::log(r.base),
           r.limit_lo > 0 ? std::log(r.limit_lo) : -std::numeric_limits<double>::infinity(),
           std::log(r.limit_hi)});
      if (tuned) predicted = static_cast<double>(r.d_extra) / r.rotary_dims;
      if (!tuned && std::isfinite(r.predicted_own)) {
        xo.push_back(std::log(r.base));
        yo.push_back(std::log(r.predicted_own));
      }
    }
    if (runs == 0) continue;
    if (!tuned) {
      bool spread = false;
      for (double x : xo) spread = spread || x != xo.front();
      predicted = xo.size() >= 2 && spread ? FitLine(xo, yo).slope : nan;
    }
    const CensoredLineFit f = FitCensoredLine(pts);
    const std::string a = "fit_" + group + "_";
    root.SetAttr(a + "runs", runs);
    root.SetAttr(a + "not_learnt", not_learnt);
    root.SetAttr(a + "below_1e4", small);
    root.SetAttr(a + "points", f.n);
    root.SetAttr(a + "interval", f.interval);
    root.SetAttr(a + "right_censored", f.right_censored);
    root.SetAttr(a + "immediate", f.left_censored);  // only below the first longer length
    root.SetAttr(a + "exponent", f.slope);
    root.SetAttr(a + "intercept", f.intercept);
    root.SetAttr(a + "exponent_lo", f.slope_lo);
    root.SetAttr(a + "exponent_hi", f.slope_hi);
    root.SetAttr(a + "sigma", f.sigma);
    root.SetAttr(a + "sigma_held", static_cast<int>(f.sigma_at_floor));
    root.SetAttr(a + "predicted_exponent", predicted);
    if (!f.ok) root.SetAttr(a + "no_fit", f.why);
    const std::string counts = fmt::format(
        "{} runs: {} not learnt and {} below base 1e4 left out; {} in the fit ({} between two "
        "lengths, {} failing right after training, {} beyond the longest length)",
        runs, not_learnt, small, f.n, f.interval, f.left_censored, f.right_censored);
    report += fmt::format("{} fit of ln(limit) on ln(base), limits as grid intervals: {}\n  {}",
                          tuned ? "fine-tuned" : "from-scratch", counts,
                          f.ok ? fmt::format("exponent {:.3f} [95% CI {:.3f}, {:.3f}], sigma "
                                             "{:.2f}{}",
                                             f.slope, f.slope_lo, f.slope_hi, f.sigma,
                                             f.sigma_at_floor ? " (held: a line fits every "
                                                                "interval)"
                                                              : "")
                               : "no fit: " + f.why);
    report += fmt::format(
        "; predicted {:.3f} ({})\n", predicted,
        tuned ? "d_extra / d of the pre-training base" : "slope of the runs' own ln T_extra");
  }
  return report;
}

}  // namespace

std::string WriteBaseLaw(const std::string& run_dir, double tolerance,
                         const std::string& criterion) {
  LEXP_INPUT_CHECK(
      tolerance > 0 && tolerance < 1,
      "base-law: --tolerance must lie in (0, 1) (got " + fmt::format("{:g}", tolerance) + ")");
  LEXP_INPUT_CHECK(criterion == "auto" || criterion == "loss" || criterion == "token_accuracy" ||
                       criterion == "exact_match",
                   "base-law: --criterion '" + criterion +
                       "' is not one of auto, loss, token_accuracy, exact_match");

  std::vector<Row> rows;
  std::vector<std::string> assumed_bases;  // fine-tuned runs whose starting file is gone
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& path : FindRunFiles(run_dir)) {
    std::string encoding, state, label;
    std::vector<double> tokens, loss, lengths, score;
    std::vector<uint64_t> got;
    double base = 1e4, pretrain_base = 1e4;
    bool fine_tuned = false;
    int N = 0;
    {
      const RunFileHead head = ReadRunFileHead(path);  // a damaged head is refused, named
      encoding = head.encoding;
      if (!IsRopeEncoding(encoding) || head.state != RunState::kCompleted) continue;
      h5::Reader r(path);
      if (r.root().OpenGroup("eval").HasAttr("skipped")) continue;  // capture-only: no scores
      label = RunLabel(r.root());
      N = static_cast<int>(r.root().AttrInt("train_max_length"));
      base = RopeBaseOf(r.root());
      // Fine-tuned runs keep the critical dimension of the model they started from.
      if (r.root().HasAttr("init_from")) {
        fine_tuned = true;
        bool found = false;
        pretrain_base = PretrainingBase(r.root().AttrString("init_from"), path, &found);
        if (!found) assumed_bases.push_back(label);
      }
      const h5::Group ev = r.root().OpenGroup("eval");
      // One entry per evaluation length: the scan below indexes all three by the same i.
      for (auto v : ev.ReadIntsShaped("length", {h5::Group::kAnySize}, &got))
        lengths.push_back(static_cast<double>(v));
      for (auto v : ev.ReadIntsShaped("sequence_length", got))
        tokens.push_back(static_cast<double>(v));
      loss = ev.ReadDoublesShaped("loss", got);
    }
    // The trained model once: its task, rotary width, training tokens and the positions training
    // showed.
    ModelReplay replay(path);
    const LimitCriterion crit = criterion == "loss"                ? LimitCriterion::kLoss
                                : criterion == "token_accuracy"    ? LimitCriterion::kTokenAccuracy
                                : criterion == "exact_match"       ? LimitCriterion::kExactMatch
                                : replay.parts().task->HasAnswer() ? LimitCriterion::kTokenAccuracy
                                                                   : LimitCriterion::kLoss;
    if (crit == LimitCriterion::kLoss) {
      score = loss;
    } else {
      h5::Reader r(path);
      score = r.root().OpenGroup("eval").ReadDoublesShaped(LimitCriterionDataset(crit), got);
    }
    const int d = FindRope(replay.encoding())->rotary_dims();
    const int train_tokens = replay.SequenceLength(N);
    const double span = TrainedDistance(replay) + 1;
    // Reference: the loss at the longest evaluated length within training; the scan starts beyond
    // it (shorter sequences have higher loss on a source whose structure is learnt from context).
    int ref = -1;
    for (size_t i = 0; i < loss.size(); ++i)
      if (lengths[i] <= N) ref = static_cast<int>(i);
    if (ref < 0 || tokens.empty()) continue;
    const std::vector<double> beyond_tokens(tokens.begin() + ref + 1, tokens.end()),
        beyond_score(score.begin() + ref + 1, score.end());
    Row row;
    row.label = label;
    row.criterion = crit;
    row.base = base;
    row.pretrain_base = pretrain_base;
    row.fine_tuned = fine_tuned;
    row.rotary_dims = d;
    row.train_tokens = train_tokens;
    row.train_span = span;
    // The critical dimension counts the pairs whose period fits in the positions training showed
    // (the token count for consecutive positions; more under randomized or shifted positions).
    row.d_extra = theory::CriticalDim(d, span, pretrain_base).d_extra;
    row.predicted = base >= 1e4 ? theory::ExtrapolationLimit(base, row.d_extra, d) : nan;
    // From-scratch reading: the period of the run's own first pair that never completes a period
    // in training (infinite when every pair does: no unseen angle limits extrapolation).
    row.d_extra_own = theory::CriticalDim(d, span, base).d_extra;
    row.predicted_own = row.d_extra_own >= d ? std::numeric_limits<double>::infinity()
                                             : theory::ExtrapolationLimit(base, row.d_extra_own, d);
    row.measured =
        ExtrapolationLimitMeasured(beyond_tokens, beyond_score, score[ref], tolerance, crit);
    row.longest = tokens.back();
    // What the grid says of the limit: between the last length that passed and the first that
    // failed; below the first longer length when that one already fails (immediate); at least
    // the longest when every one passed (censored).
    row.immediate = row.measured == 0 && !beyond_tokens.empty();
    row.censored = beyond_tokens.empty() || row.measured >= row.longest;
    if (row.measured == 0) row.measured = tokens[ref];  // the table shows the training length
    row.limit_lo = row.immediate ? 0.0 : row.measured;
    row.limit_hi = std::numeric_limits<double>::infinity();
    for (double t : beyond_tokens)
      if (t > row.measured) {
        row.limit_hi = t;
        break;
      }
    // A run that did not learn the task has nothing to extrapolate: by loss (a source whose
    // structure is learnt from context), its loss at the training length must be below 0.95 x the
    // loss at the shortest evaluated length; by accuracy, at least kLearntAccuracy there.
    row.learnt =
        crit == LimitCriterion::kLoss ? loss[ref] < 0.95 * loss[0] : score[ref] >= kLearntAccuracy;
    rows.push_back(row);
  }
  LEXP_INPUT_CHECK(!rows.empty(),
                   "base-law: no completed rope run with evaluation losses in '" + run_dir + "'");
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.base != b.base ? a.base < b.base : a.label < b.label;
  });
  std::string s = fmt::format(
      "RoPE base-scaling law (tolerance {:g}: the score within (1 + tol) x its value at the "
      "longest "
      "training length for a loss, (1 - tol) x for an accuracy; criterion: {})\n"
      "predicted: T_extra = 2 pi b^(d_extra/d) with d_extra of the pre-training base (1e4 for runs "
      "from scratch; the law's fine-tuning setting), and with the run's own d_extra (from scratch; "
      "inf: every pair completes a period); d_extra counts the pairs whose period fits in the "
      "positions training showed\n"
      "{:<26} {:>10} {:>6} {:>8} {:>11} {:>8} {:>11} {:>10}  {}\n",
      tolerance,
      criterion == "auto" ? "auto: token accuracy for tasks with an answer, loss for sources"
                          : criterion,
      "run", "base", "d_rot", "d_extra", "T_extra", "own d_ex", "own T_ex", "measured",
      "criterion");
  for (const auto& r : rows)
    s += fmt::format(
        "{:<26} {:>10g} {:>6} {:>8} {:>11} {:>8} {:>11} {:>10}  {}\n", r.label, r.base,
        r.rotary_dims, r.d_extra,
        std::isnan(r.predicted) ? std::string("(b < 1e4)") : fmt::format("{:.1f}", r.predicted),
        r.d_extra_own,
        std::isinf(r.predicted_own) ? std::string("inf") : fmt::format("{:.1f}", r.predicted_own),
        !r.learnt     ? std::string("not learnt")
        : r.censored  ? fmt::format(">= {:g}", r.measured)
        : r.immediate ? fmt::format("< {:g}", r.limit_hi)
                      : fmt::format("{:g}", r.measured),
        LimitCriterionName(r.criterion));
  // Small-base side (Liu et al. 2023, base-scaling law): bases at or below the exact full-period
  // base let every pair complete a period in training; the law expects no unseen-angle limit there.
  const int d0 = rows[0].rotary_dims, T0 = rows[0].train_tokens;
  const double S0 = rows[0].train_span;  // positions training showed: T_train of the criticals
  const double full_base = theory::FullPeriodBase(S0, d0);
  const theory::SmallBaseCriticals crit = theory::SmallBaseCriticalValues(S0);
  int small = 0, small_far = 0, large = 0, large_far = 0;
  int not_learnt = 0;
  for (const auto& r : rows) {
    if (!r.learnt) {
      ++not_learnt;
      continue;
    }
    const bool far = r.measured >= 4.0 * r.train_tokens;
    if (r.base <= full_base) {
      ++small;
      small_far += far;
    } else {
      ++large;
      large_far += far;
    }
  }
  s += fmt::format(
      "small-base criticals for {:g} trained positions: b1 = 2T/pi = {:.1f}, b2 = T/pi = {:.1f}, "
      "b3 = "
      "T/2pi = {:.1f}; every pair completes a period for b <= {:.2f} (d = {})\n"
      "runs reaching 4x the training length: {} of {} at b <= {:.2f}, {} of {} above{}\n",
      S0, crit.quarter, crit.half, crit.full, full_base, d0, small_far, small, full_base, large_far,
      large,
      not_learnt ? fmt::format(" ({} runs that did not learn the source left out)", not_learnt)
                 : std::string());
  const std::filesystem::path out = std::filesystem::path(run_dir) / "base_law.h5";
  h5::Writer w(out.string());
  WriteProvenance(w.root(), ThreadLimit::Active());
  w.root().SetAttr("tolerance", tolerance);
  w.root().SetAttr("criterion_requested", criterion);
  std::vector<double> bases, pred, meas;
  std::vector<int64_t> cens;
  std::string labels, criteria;
  for (const auto& r : rows) {
    if (!criteria.empty()) criteria += ',';
    criteria += LimitCriterionName(r.criterion);
    bases.push_back(r.base);
    pred.push_back(r.predicted);
    meas.push_back(r.measured);
    cens.push_back(r.censored);
    labels += (labels.empty() ? "" : ",") + r.label;
  }
  const uint64_t R = rows.size();
  w.root().SetAttr("runs", labels);
  w.root().SetAttr("criteria", criteria);
  w.root().WriteDoubles("base", bases, {R}, "run", "RoPE base");
  w.root().WriteDoubles("predicted_limit", pred, {R}, "run",
                        "tokens: T_extra = 2 pi b^(d_extra/d) (NaN below base 1e4)");
  std::vector<double> pred_own, d_own;
  std::vector<int64_t> learnt;
  for (const auto& r : rows) {
    pred_own.push_back(r.predicted_own);
    d_own.push_back(r.d_extra_own);
    learnt.push_back(r.learnt);
  }
  w.root().WriteInts("learnt", learnt, {R}, "run",
                     "1 when the run learnt its task: by loss, its loss at the training length is "
                     "below 0.95 x the loss at the shortest evaluated length; by accuracy, it is "
                     "at least 0.5 there (0: left out of the fit)");
  w.root().WriteDoubles("predicted_limit_own", pred_own, {R}, "run",
                        "tokens: 2 pi b^(d_extra/d) with the run's own d_extra (inf: every pair "
                        "completes a period in training)");
  w.root().WriteDoubles("d_extra_own", d_own, {R}, "run", "critical dimension at the run's base");
  w.root().SetAttr("train_tokens", T0);
  w.root().SetAttr("train_span", S0);
  w.root().SetAttr("rotary_dims", d0);
  w.root().SetAttr("d_extra", rows[0].d_extra);
  w.root().SetAttr("full_period_base", full_base);
  w.root().SetAttr("b1_quarter_period", crit.quarter);
  w.root().SetAttr("b2_half_period", crit.half);
  w.root().SetAttr("b3_full_period", crit.full);
  w.root().SetAttr("longest_evaluated", rows[0].longest);
  w.root().WriteDoubles("measured_limit", meas, {R}, "run",
                        "tokens: longest evaluated sequence within the tolerance of the run's "
                        "criterion (attribute criteria)");
  w.root().WriteInts("censored", cens, {R}, "run",
                     "1 when the limit reached the longest evaluated sequence (a lower bound)");
  std::vector<double> lo, hi, span;
  std::vector<int64_t> immediate, tuned;
  for (const auto& r : rows) {
    lo.push_back(r.limit_lo);
    hi.push_back(r.limit_hi);
    span.push_back(r.train_span);
    immediate.push_back(r.immediate);
    tuned.push_back(r.fine_tuned);
  }
  w.root().WriteDoubles("limit_lo", lo, {R}, "run",
                        "tokens: the limit is at least this (0: the first length beyond training "
                        "already failed, so only limit_hi is known)");
  w.root().WriteDoubles("limit_hi", hi, {R}, "run",
                        "tokens: the limit is below this, the first evaluated length that failed "
                        "(inf: none failed)");
  w.root().WriteInts("immediate_failure", immediate, {R}, "run",
                     "1 when the first evaluated length beyond training already failed");
  w.root().WriteInts("fine_tuned", tuned, {R}, "run",
                     "1 when the run started from another's "
                     "weights (train.init_from)");
  w.root().WriteDoubles("train_span", span, {R}, "run",
                        "positions training showed (largest trained distance + 1): the T_train "
                        "of the critical dimension");
  s += FitExponents(rows, w.root());
  if (!assumed_bases.empty()) {
    std::string list;
    for (const auto& l : assumed_bases) list += (list.empty() ? "" : ",") + l;
    w.root().SetAttr("pretraining_base_assumed", list);
    s += fmt::format(
        "the file {} runs were fine-tuned from is not found (train.init_from is relative to where "
        "they ran): their pre-training base is taken as 1e4 ({})\n",
        assumed_bases.size(), list);
  }
  w.Commit();
  return s;
}

}  // namespace lexp
