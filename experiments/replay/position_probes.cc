#include "experiments/replay/position_probes.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

#include "experiments/replay/model_replay.h"
#include "nn/check.h"

namespace lexp {
namespace {

constexpr int kMaxTestSequences = 64;  // bounds the memory of the stored states

// Every residual stream of `samples` evaluation sequences of length n, appended to rows[l].
void Collect(ModelReplay& replay, int n, int samples, int* next_sequence,
             std::vector<ProbeRows>& rows) {
  const RecipeConfig& cfg = replay.config();
  AssembledModel& m = replay.parts();
  m.model->set_keep_residuals(true);  // every residual stream, not the two an evaluation keeps
  const bool decoder = m.model->config().causal;
  const long T = replay.SequenceLength(n), C = cfg.model.d_model;
  const int input = replay.InputTokens(n);
  const long before = rows[0].x.rows(), added = static_cast<long>(samples) * T;
  for (auto& r : rows) r.x.conservativeResize(before + added, C);
  for (long k = 0; k < added; ++k) {
    const int t = static_cast<int>(k % T);
    const int segment = t < input               ? static_cast<int>(Segment::kInput)
                        : decoder && t == input ? static_cast<int>(Segment::kSeparator)
                                                : static_cast<int>(Segment::kAnswer);
    for (auto& r : rows) {
      r.position.push_back(t);
      r.separator.push_back(decoder ? input : -1);
      r.segment.push_back(segment);
      r.sequence.push_back(*next_sequence + static_cast<int>(k / T));
    }
  }
  *next_sequence += samples;
  MatF logits;
  replay.ForEachEvalBatch(n, samples,
                          [&](const Batch& b, const std::vector<double>& pos, int first) {
                            m.model->Forward(b.tokens, b.B, b.T, pos, false, false, logits);
                            for (size_t l = 0; l < rows.size(); ++l)
                              rows[l].x.middleRows(before + first * T, b.B * T) =
                                  m.model->Residual(static_cast<int>(l)).cast<double>();
                          });
}

}  // namespace

PositionProbes MeasurePositionProbes(const std::string& run_file) {
  PositionProbes p;
  ModelReplay replay(run_file);
  const RecipeConfig& cfg = replay.config();
  const std::vector<int> lengths = cfg.EvalLengths();
  p.train_length = cfg.train_max_length;
  p.train_tokens = replay.SequenceLength(p.train_length);
  p.long_length = *std::max_element(lengths.begin(), lengths.end());
  p.long_tokens = replay.SequenceLength(p.long_length);
  for (int n : lengths)
    if (n <= p.train_length) p.fit_lengths.push_back(n);
  LEXP_INPUT_CHECK(!p.fit_lengths.empty(),
                   "position probes: the recipe evaluates no length <= train.max_length = " +
                       std::to_string(p.train_length) + " to fit them on");
  const int L = cfg.model.n_layers;
  const int per_length =
      std::clamp(PositionProbes::kFitSequences / static_cast<int>(p.fit_lengths.size()), 2,
                 std::max(2, cfg.eval_samples));
  std::vector<ProbeRows> fit(L + 1), test(L + 1);
  int sequences = 0;
  // At least two sequences per fit length, so that the held-out reading (odd sequences against
  // the even ones) finds every fit length on both sides.
  for (int n : p.fit_lengths)
    Collect(replay, n, std::max(2, std::min(per_length, cfg.eval_samples)), &sequences, fit);
  p.fit_sequences = sequences;
  p.test_sequences = std::min(cfg.eval_samples, kMaxTestSequences);
  sequences = 0;
  Collect(replay, p.long_length, p.test_sequences, &sequences, test);
  for (int l = 0; l <= L; ++l) p.residual.push_back(ReadPositionProbes(fit[l], test[l]));
  return p;
}

std::string WritePositionProbes(const PositionProbes& p, const h5::Group& analysis) {
  analysis.Remove("position_probes");
  h5::Group g = analysis.CreateGroup("position_probes");
  const uint64_t K = p.residual.size();
  const PositionProbeReading& top = p.residual.back();
  g.SetAttr("source",
            "evaluation stream replayed: fit on eval sequences at the evaluation lengths <= N, "
            "tested on the longest evaluation length; rows read by segment "
            "(experiments/replay/position_probes.h, analysis/position_probes.h)");
  g.SetAttr("train_length", p.train_length);
  g.SetAttr("train_tokens", p.train_tokens);
  g.SetAttr("long_length", p.long_length);
  g.SetAttr("long_tokens", p.long_tokens);
  g.SetAttr("fit_lengths", fmt::format("{}", fmt::join(p.fit_lengths, ",")));
  g.SetAttr("fit_sequences", p.fit_sequences);
  g.SetAttr("test_sequences", p.test_sequences);
  g.SetAttr("rows_seen", static_cast<int64_t>(top.rows_seen));
  g.SetAttr("rows_unseen", static_cast<int64_t>(top.rows_unseen));
  g.SetAttr("segments_classified", top.segments_classified);
  g.SetAttr("segments_ood", top.segments_ood);
  if (!top.separator_applicable) g.SetAttr("separator_not_applicable", top.separator_note);
  auto write = [&](const std::string& name, double PositionProbeReading::*field,
                   const std::string& what) {
    std::vector<double> v;
    for (const auto& r : p.residual) v.push_back(r.*field);
    g.WriteDoubles(name, v, {K}, "residual", what);
  };
  write("index_rmse_fit", &PositionProbeReading::index_rmse_fit,
        "tokens: RMSE of the linear probe for the absolute index on its own fit set (residual 0: "
        "the embedded input; L: the last block's output)");
  write("index_rmse_in_range", &PositionProbeReading::index_rmse_in_range,
        "tokens: the same probe on the test rows whose index lies within the fit set's");
  write("index_rmse_beyond", &PositionProbeReading::index_rmse_beyond,
        "tokens: and on those beyond it");
  write("index_chance_in_range", &PositionProbeReading::index_chance_in_range,
        "tokens: RMSE of the fit set's mean index on the same rows (no linear signal)");
  write("index_chance_beyond", &PositionProbeReading::index_chance_beyond, "the same, beyond");
  write("index_rmse_held_out", &PositionProbeReading::index_rmse_held_out,
        "tokens: the index probe fitted on the even fit sequences, read on the odd ones (in "
        "distribution, held out; NaN: fewer than two fit sequences)");
  write("index_chance_held_out", &PositionProbeReading::index_chance_held_out,
        "tokens: RMSE of the even fit sequences' mean index on the same odd rows");
  write("index_last_predicted", &PositionProbeReading::index_last_predicted,
        "tokens: mean predicted index of the last position (true: long_tokens - 1)");
  write("separator_rmse_in_range", &PositionProbeReading::separator_rmse_in_range,
        "tokens: probe for the signed distance t - separator, on the test rows whose distance "
        "lies within the fit set's (NaN: not applicable, see separator_not_applicable)");
  write("separator_rmse_beyond", &PositionProbeReading::separator_rmse_beyond, "the same, beyond");
  write("separator_chance_in_range", &PositionProbeReading::separator_chance_in_range,
        "tokens: RMSE of the fit set's mean distance on the same rows");
  write("separator_chance_beyond", &PositionProbeReading::separator_chance_beyond,
        "the same, beyond");
  write("beyond_accuracy", &PositionProbeReading::beyond_accuracy,
        "balanced accuracy of a linear classifier of unseen (segment, position) rows within each "
        "segment holding both, fitted on the even test sequences and scored on the odd ones (0.5: "
        "no linear signal beyond the segment; NaN: no segment holds both)");
  write("beyond_accuracy_pooled", &PositionProbeReading::beyond_accuracy_pooled,
        "the same classifier over all segments at once (compare with beyond_segment_baseline)");
  write("beyond_segment_baseline", &PositionProbeReading::beyond_segment_baseline,
        "balanced accuracy of the best rule that knows only each row's segment, on the same rows");
  write("ood_seen", &PositionProbeReading::ood_seen,
        "fraction of test states at seen (segment, position) rows beyond the 99th percentile of "
        "their segment's fit states' Mahalanobis distance (0.01 expected in distribution)");
  write("ood_unseen", &PositionProbeReading::ood_unseen, "the same at unseen rows");
  auto ratio = [](double a, double b) { return fmt::format("{:.1f} (a constant: {:.1f})", a, b); };
  const std::string separator =
      top.separator_applicable
          ? fmt::format("distance to the separator {} in range, {} beyond",
                        ratio(top.separator_rmse_in_range, top.separator_chance_in_range),
                        ratio(top.separator_rmse_beyond, top.separator_chance_beyond))
          : "distance to the separator not applicable: " + top.separator_note;
  const std::string classifier =
      std::isnan(top.beyond_accuracy)
          ? std::string("no segment holds both seen and unseen positions to classify")
          : fmt::format(
                "unseen positions told from seen ones within the {} segment(s) {:.2f} "
                "(0.5: no signal; over all segments {:.2f}, the segment alone {:.2f})",
                top.segments_classified, top.beyond_accuracy, top.beyond_accuracy_pooled,
                top.beyond_segment_baseline);
  return fmt::format(
      "position probes (last block; fit on {} sequences at n = {}..{}, tested at n = {}): index "
      "RMSE {} tokens in range, {} beyond (last position predicted {:.1f} of {}); {}; {}; "
      "out-of-distribution states {:.2f} at seen positions, {:.2f} at unseen ones (0.01 expected "
      "in distribution; each row against the fit rows of its segment: {})\n",
      p.fit_sequences, p.fit_lengths.front(), p.fit_lengths.back(), p.long_length,
      ratio(top.index_rmse_in_range, top.index_chance_in_range),
      ratio(top.index_rmse_beyond, top.index_chance_beyond), top.index_last_predicted,
      p.long_tokens - 1, separator, classifier, top.ood_seen, top.ood_unseen, top.segments_ood);
}

}  // namespace lexp
