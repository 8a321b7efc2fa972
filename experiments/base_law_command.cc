#include "experiments/base_law_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "analysis/base_law.h"
#include "analysis/rope_theory.h"
#include "experiments/provenance.h"
#include "experiments/trainer.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/parallel.h"
#include "notebooks_cpp/figures.h"
#include "pe/rope.h"

namespace lexp {

std::string WriteBaseLaw(const std::string& run_dir, double tolerance) {
  LEXP_INPUT_CHECK(tolerance > 0, "base-law: --tolerance must be positive");
  struct Row {
    std::string label;
    double base, predicted, predicted_own, measured, longest;
    int rotary_dims, train_tokens, d_extra, d_extra_own;
    bool censored, learnt;
  };
  std::vector<Row> rows;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& path : FindRunFiles(run_dir)) {
    std::string encoding, state, label;
    std::vector<double> tokens, loss, lengths;
    double base = 1e4;
    int N = 0;
    {
      h5::Reader r(path);
      if (!r.root().HasAttr("encoding") || !r.root().Has("status")) continue;
      encoding = r.root().AttrString("encoding");
      state = r.root().OpenGroup("status").AttrString("state");
      if (!IsRopeEncoding(encoding) || state != "completed") continue;
      label = RunLabel(r.root());
      N = static_cast<int>(r.root().AttrInt("train_max_length"));
      const h5::Group cfg = r.root().OpenGroup("config");
      if (cfg.HasAttr("encoding_option.base"))
        base = std::stod(cfg.AttrString("encoding_option.base"));
      const h5::Group ev = r.root().OpenGroup("eval");
      // One entry per evaluation length: the scan below indexes all three by the same i.
      std::vector<uint64_t> got;
      for (auto v : ev.ReadIntsShaped("length", {h5::Group::kAnySize}, &got))
        lengths.push_back(static_cast<double>(v));
      for (auto v : ev.ReadIntsShaped("sequence_length", got))
        tokens.push_back(static_cast<double>(v));
      loss = ev.ReadDoublesShaped("loss", got);
    }
    std::string name;
    EncodingShape shape;
    auto enc = LoadTrainedEncoding(path, &name, &shape);
    const int d = dynamic_cast<const Rope<double>&>(*enc).rotary_dims();
    // Reference: the loss at the longest evaluated length within training; the scan starts beyond
    // it (shorter sequences have higher loss on a source whose structure is learnt from context).
    int ref = -1;
    for (size_t i = 0; i < loss.size(); ++i)
      if (lengths[i] <= N) ref = static_cast<int>(i);
    if (ref < 0 || tokens.empty()) continue;
    const std::vector<double> beyond_tokens(tokens.begin() + ref + 1, tokens.end()),
        beyond_loss(loss.begin() + ref + 1, loss.end());
    Row row;
    row.label = label;
    row.base = base;
    row.rotary_dims = d;
    row.train_tokens = shape.train_length;
    row.d_extra = theory::CriticalDim(d, shape.train_length, 1e4).d_extra;
    row.predicted = base >= 1e4 ? theory::ExtrapolationLimit(base, row.d_extra, d) : nan;
    // From-scratch reading: the period of the run's own first pair that never completes a period
    // in training (infinite when every pair does: no unseen angle limits extrapolation).
    row.d_extra_own = theory::CriticalDim(d, shape.train_length, base).d_extra;
    row.predicted_own = row.d_extra_own >= d ? std::numeric_limits<double>::infinity()
                                             : theory::ExtrapolationLimit(base, row.d_extra_own, d);
    row.measured = ExtrapolationLimitMeasured(beyond_tokens, beyond_loss, loss[ref], tolerance);
    if (row.measured == 0) row.measured = tokens[ref];  // the first longer length already fails
    row.longest = tokens.back();
    row.censored = row.measured >= row.longest;
    // A run that did not learn to use its context has nothing to extrapolate (its loss is flat at
    // every length): its loss at the training length must be below 0.95 x the loss at the shortest
    // evaluated length.
    row.learnt = loss[ref] < 0.95 * loss[0];
    rows.push_back(row);
  }
  LEXP_INPUT_CHECK(!rows.empty(),
                   "base-law: no completed rope run with evaluation losses in '" + run_dir + "'");
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.base != b.base ? a.base < b.base : a.label < b.label;
  });
  std::vector<double> x, y;
  for (const auto& r : rows)
    if (r.base >= 1e4 && r.measured > 0 && !r.censored && r.learnt) {
      x.push_back(std::log(r.base));
      y.push_back(std::log(r.measured));
    }
  std::string s = fmt::format(
      "RoPE base-scaling law (tolerance {:g}: loss within (1 + tol) x the loss at the longest "
      "training length)\n"
      "predicted: T_extra = 2 pi b^(d_extra/d) with d_extra of base 1e4 (the law's fine-tuning "
      "setting), and with the run's own d_extra (from scratch; inf: every pair completes a "
      "period)\n"
      "{:<26} {:>10} {:>6} {:>8} {:>11} {:>8} {:>11} {:>10}\n",
      tolerance, "run", "base", "d_rot", "d_extra", "T_extra", "own d_ex", "own T_ex", "measured");
  for (const auto& r : rows)
    s += fmt::format(
        "{:<26} {:>10g} {:>6} {:>8} {:>11} {:>8} {:>11} {:>10}\n", r.label, r.base, r.rotary_dims,
        r.d_extra,
        std::isnan(r.predicted) ? std::string("(b < 1e4)") : fmt::format("{:.1f}", r.predicted),
        r.d_extra_own,
        std::isinf(r.predicted_own) ? std::string("inf") : fmt::format("{:.1f}", r.predicted_own),
        r.learnt ? fmt::format("{}{:g}", r.censored ? ">= " : "", r.measured)
                 : std::string("not learnt"));
  // Small-base side (formulas.md 7.6): bases at or below the exact full-period base let every pair
  // complete a period in training; the law expects no unseen-angle limit there.
  const int d0 = rows[0].rotary_dims, T0 = rows[0].train_tokens;
  const double full_base = theory::FullPeriodBase(T0, d0);
  const theory::SmallBaseCriticals crit = theory::SmallBaseCriticalValues(T0);
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
      "small-base criticals for {} training tokens: b1 = 2T/pi = {:.1f}, b2 = T/pi = {:.1f}, b3 = "
      "T/2pi = {:.1f}; every pair completes a period for b <= {:.2f} (d = {})\n"
      "runs reaching 4x the training length: {} of {} at b <= {:.2f}, {} of {} above{}\n",
      T0, crit.quarter, crit.half, crit.full, full_base, d0, small_far, small, full_base, large_far,
      large,
      not_learnt ? fmt::format(" ({} runs that did not learn the source left out)", not_learnt)
                 : std::string());
  const std::filesystem::path out = std::filesystem::path(run_dir) / "base_law.h5";
  h5::Writer w(out.string());
  WriteProvenance(w.root(), ThreadLimit::Active());
  w.root().SetAttr("tolerance", tolerance);
  std::vector<double> bases, pred, meas;
  std::vector<int64_t> cens;
  std::string labels;
  for (const auto& r : rows) {
    bases.push_back(r.base);
    pred.push_back(r.predicted);
    meas.push_back(r.measured);
    cens.push_back(r.censored);
    labels += (labels.empty() ? "" : ",") + r.label;
  }
  const uint64_t R = rows.size();
  w.root().SetAttr("runs", labels);
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
                     "1 when the loss at the training length is below 0.95 x the loss at the "
                     "shortest evaluated length (0: the run did not learn the source; left out)");
  w.root().WriteDoubles("predicted_limit_own", pred_own, {R}, "run",
                        "tokens: 2 pi b^(d_extra/d) with the run's own d_extra (inf: every pair "
                        "completes a period in training)");
  w.root().WriteDoubles("d_extra_own", d_own, {R}, "run", "critical dimension at the run's base");
  w.root().SetAttr("train_tokens", T0);
  w.root().SetAttr("rotary_dims", d0);
  w.root().SetAttr("d_extra", rows[0].d_extra);
  w.root().SetAttr("full_period_base", full_base);
  w.root().SetAttr("b1_quarter_period", crit.quarter);
  w.root().SetAttr("b2_half_period", crit.half);
  w.root().SetAttr("b3_full_period", crit.full);
  w.root().SetAttr("longest_evaluated", rows[0].longest);
  w.root().WriteDoubles("measured_limit", meas, {R}, "run",
                        "tokens: longest evaluated sequence within the loss tolerance");
  w.root().WriteInts("censored", cens, {R}, "run",
                     "1 when the limit reached the longest evaluated sequence (a lower bound)");
  if (x.size() >= 2) {
    const LineFit f = FitLine(x, y);
    const double predicted_slope = static_cast<double>(rows[0].d_extra) / rows[0].rotary_dims;
    w.root().SetAttr("fitted_exponent", f.slope);
    w.root().SetAttr("fitted_exponent_lo", f.slope_lo);
    w.root().SetAttr("fitted_exponent_hi", f.slope_hi);
    w.root().SetAttr("predicted_exponent", predicted_slope);
    s += fmt::format(
        "fitted exponent of ln(limit) on ln(base) over {} bases >= 1e4: {:.3f} {}; "
        "predicted d_extra/d = {:.3f}\n",
        f.n, f.slope,
        f.n >= 3 ? fmt::format("[95% CI {:.3f}, {:.3f}]", f.slope_lo, f.slope_hi)
                 : std::string("(no interval from 2 points)"),
        predicted_slope);
  } else {
    s += "fitted exponent: fewer than two uncensored bases >= 1e4, no fit\n";
  }
  w.Commit();
  return s;
}

}  // namespace lexp
