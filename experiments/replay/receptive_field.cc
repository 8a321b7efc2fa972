#include "experiments/replay/receptive_field.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "experiments/replay/model_replay.h"
#include "nn/ops/cross_entropy.h"

namespace lexp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxSequences = 32;

// The smallest D whose distances 0..D hold `q` of a share curve (NaN: never).
double ContextHolding(const std::vector<double>& share, double q) {
  double cum = 0;
  for (size_t d = 0; d < share.size(); ++d) {
    cum += share[d];
    if (cum >= q) return static_cast<double>(d);
  }
  return kNaN;
}

// Up to k of the rows, evenly spaced from the first to the last.
std::vector<int> EvenlySpaced(const std::vector<int>& rows, int k) {
  if (static_cast<int>(rows.size()) <= k) return rows;
  std::vector<int> out;
  for (int r = 0; r < k; ++r)
    out.push_back(rows[static_cast<size_t>(
        std::lround(static_cast<double>(r) * (rows.size() - 1) / (k - 1)))]);
  return out;
}

}  // namespace

ReceptiveField MeasureReceptiveField(const std::string& run_file) {
  ReceptiveField rf;
  ModelReplay replay(run_file);
  const RecipeConfig& cfg = replay.config();
  AssembledModel& m = replay.parts();
  const int end_token = m.EvalLayout().End();
  const int K = ReceptiveField::kRowsPerSequence;
  rf.train_tokens = replay.SequenceLength(cfg.train_max_length);
  rf.samples = std::min(cfg.eval_samples, kMaxSequences);
  rf.bidirectional = !m.model->config().causal;
  rf.answer_rows = end_token >= 0;
  rf.rows_used = fmt::format(
      "up to {} graded target rows per sequence, evenly spaced{}; distance {} from that row", K,
      end_token >= 0 ? " among the answer's tokens (the end token's row left out)" : "",
      rf.bidirectional ? "|i - j|" : "i - j");
  rf.lengths = cfg.EvalLengths();
  for (int n : rf.lengths) rf.sequence_lengths.push_back(replay.SequenceLength(n));
  rf.max_tokens = static_cast<uint64_t>(
      *std::max_element(rf.sequence_lengths.begin(), rf.sequence_lengths.end()));
  const uint64_t E = rf.lengths.size(), M = rf.max_tokens;
  rf.share.assign(E * M, kNaN);
  rf.share_sd.assign(E * M, kNaN);
  rf.rows.assign(E * K, kNaN);
  MatF logits, d_logits;
  std::vector<int> targets;
  std::vector<uint8_t> mask;
  const long C = m.model->config().d_model;
  for (uint64_t x = 0; x < E; ++x) {
    const uint64_t T = static_cast<uint64_t>(rf.sequence_lengths[x]);
    std::vector<std::vector<double>> curves;  // per sequence, by distance
    replay.ForEachEvalBatch(
        rf.lengths[x], rf.samples, [&](const Batch& b, const std::vector<double>& pos, int first) {
          // Each sequence's rows: its graded targets, less the end token's.
          std::vector<std::vector<int>> rows(b.B);
          for (int s = 0; s < b.B; ++s) {
            std::vector<int> graded;
            for (int t = 0; t < b.T; ++t) {
              const size_t i = static_cast<size_t>(s) * b.T + t;
              if (b.graded[i] && b.targets[i] != end_token) graded.push_back(t);
            }
            rows[s] = EvenlySpaced(graded, K);
          }
          if (first == 0)
            for (size_t r = 0; r < rows[0].size(); ++r) rf.rows[x * K + r] = rows[0][r];
          std::vector<std::vector<double>> curve(b.B, std::vector<double>(T, 0.0));
          std::vector<int> used(b.B, 0);
          m.model->Forward(b.tokens, b.B, b.T, pos, true, false, logits);
          // Pass r differentiates each sequence's r-th row (the sequences of a batch do not
          // interact, so one backward pass gives each its own gradient): the cross-entropy
          // against the true target there, whose input gradient is that of -ln p(target) / B;
          // shares of its norm are those of ln p(target)'s.
          for (int r = 0; r < K; ++r) {
            targets.assign(b.tokens.size(), 0);
            mask.assign(b.tokens.size(), 0);
            bool any = false;
            for (int s = 0; s < b.B; ++s)
              if (r < static_cast<int>(rows[s].size())) {
                const size_t i = static_cast<size_t>(s) * b.T + rows[s][r];
                targets[i] = b.targets[i];
                mask[i] = 1;
                any = true;
              }
            if (!any) break;
            CrossEntropyForwardBackward<float>(logits, targets, mask, &d_logits, nullptr, nullptr);
            m.model->Backward(b.tokens, d_logits);
            const MatF& g = m.model->InputGradient();
            for (int s = 0; s < b.B; ++s) {
              if (r >= static_cast<int>(rows[s].size())) continue;
              const long i = rows[s][r];
              std::vector<double> norm(T, 0.0);
              double total = 0;
              for (uint64_t j = 0; j < T; ++j) {
                double sq = 0;
                for (long c = 0; c < C; ++c) {
                  const double v = g(static_cast<long>(s) * b.T + static_cast<long>(j), c);
                  sq += v * v;
                }
                norm[j] = std::sqrt(sq);
                total += norm[j];
              }
              if (!(total > 0)) continue;
              for (uint64_t j = 0; j < T; ++j) {
                const long d = i - static_cast<long>(j);
                if (d < 0 && !rf.bidirectional) continue;  // causal: no gradient there
                curve[s][static_cast<size_t>(std::labs(d))] += norm[j] / total;
              }
              ++used[s];
            }
          }
          for (int s = 0; s < b.B; ++s) {
            if (used[s] == 0) continue;
            for (double& v : curve[s]) v /= used[s];
            curves.push_back(std::move(curve[s]));
          }
        });
    const double S = static_cast<double>(curves.size());
    std::vector<double> mean(T, kNaN);
    for (uint64_t d = 0; d < T; ++d) {
      if (curves.empty()) break;
      double sum = 0, sq = 0;
      for (const auto& c : curves) {
        sum += c[d];
        sq += c[d] * c[d];
      }
      mean[d] = sum / S;
      rf.share[x * M + d] = mean[d];
      if (curves.size() > 1)
        rf.share_sd[x * M + d] = std::sqrt(std::max(0.0, (sq - S * mean[d] * mean[d]) / (S - 1)));
    }
    double beyond = 0;
    for (uint64_t d = static_cast<uint64_t>(rf.train_tokens); d < T; ++d) beyond += mean[d];
    rf.context50.push_back(curves.empty() ? kNaN : ContextHolding(mean, 0.5));
    rf.context90.push_back(curves.empty() ? kNaN : ContextHolding(mean, 0.9));
    rf.share_beyond_window.push_back(curves.empty() ? kNaN : beyond);
    double c_sum = 0, c_sq = 0;
    for (const auto& c : curves) {
      const double v = ContextHolding(c, 0.5);
      c_sum += v;
      c_sq += v * v;
    }
    rf.context50_sd.push_back(
        curves.size() > 1 ? std::sqrt(std::max(0.0, (c_sq - c_sum * c_sum / S) / (S - 1))) : kNaN);
  }
  return rf;
}

std::string WriteReceptiveField(const ReceptiveField& rf, const h5::Group& analysis) {
  analysis.Remove("receptive_field");
  h5::Group g = analysis.CreateGroup("receptive_field");
  const uint64_t E = rf.lengths.size(), M = rf.max_tokens;
  const uint64_t K = ReceptiveField::kRowsPerSequence;
  g.SetAttr("source",
            "gradient of ln p(target) at scored rows with respect to the embedded input, over the "
            "evaluation stream, teacher forced (experiments/replay/receptive_field.h)");
  g.SetAttr("rows_used", rf.rows_used);
  g.SetAttr("train_tokens", rf.train_tokens);
  g.SetAttr("samples", rf.samples);
  g.SetAttr("bidirectional", static_cast<int64_t>(rf.bidirectional));
  std::vector<int64_t> n(rf.lengths.begin(), rf.lengths.end()),
      t(rf.sequence_lengths.begin(), rf.sequence_lengths.end());
  g.WriteInts("length", n, {E}, "length", "tokens (requested task length n)");
  g.WriteInts("sequence_length", t, {E}, "length", "tokens (model sequence T)");
  g.WriteDoubles("rows", rf.rows, {E, K}, "length,row",
                 "positions i differentiated in the first sequence (NaN: fewer rows)");
  g.WriteDoubles("gradient_share", rf.share, {E, M}, "length,distance",
                 "share of ||d ln p(target) / d x_j|| at distance d from the differentiated row, "
                 "mean over its rows and then over sequences (sums to 1 over d; NaN beyond the "
                 "length)");
  g.WriteDoubles("gradient_share_sd", rf.share_sd, {E, M}, "length,distance",
                 "standard deviation over sequences of each sequence's share at d");
  g.WriteDoubles("context_50", rf.context50, {E}, "length",
                 "tokens: smallest D whose distances 0..D hold half the gradient (mean curve)");
  g.WriteDoubles("context_50_sd", rf.context50_sd, {E}, "length",
                 "tokens: standard deviation over sequences of each sequence's own context_50");
  g.WriteDoubles("context_90", rf.context90, {E}, "length", "tokens: the same for 90%");
  g.WriteDoubles("share_beyond_window", rf.share_beyond_window, {E}, "length",
                 "share of the gradient at distances >= train_tokens");
  const uint64_t x = E - 1;
  return fmt::format(
      "gradient receptive field at n = {} (ln p(target) at up to {} {} rows per sequence, {} "
      "sequences; distance from each row): half the gradient within {:g} tokens (sd {:.1f} over "
      "sequences), 90% within {:g}; {:.2f} of it at distances >= the {} training tokens\n",
      rf.lengths[x], K, rf.answer_rows ? "answer" : "scored", rf.samples, rf.context50[x],
      rf.context50_sd[x], rf.context90[x], rf.share_beyond_window[x], rf.train_tokens);
}

}  // namespace lexp
