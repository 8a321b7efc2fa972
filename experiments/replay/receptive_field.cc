#include "experiments/replay/receptive_field.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "experiments/replay/model_replay.h"
#include "nn/ops/cross_entropy.h"

namespace lexp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxSequences = 32;

}  // namespace

ReceptiveField MeasureReceptiveField(const std::string& run_file) {
  ReceptiveField rf;
  ModelReplay replay(run_file);
  const RecipeConfig& cfg = replay.config();
  AssembledModel& m = replay.parts();
  rf.train_tokens = replay.SequenceLength(cfg.train_max_length);
  rf.samples = std::min(cfg.eval_samples, kMaxSequences);
  rf.lengths = cfg.EvalLengths();
  for (int n : rf.lengths) rf.sequence_lengths.push_back(replay.SequenceLength(n));
  rf.max_tokens = static_cast<uint64_t>(
      *std::max_element(rf.sequence_lengths.begin(), rf.sequence_lengths.end()));
  const uint64_t E = rf.lengths.size(), M = rf.max_tokens;
  rf.share.assign(E * M, kNaN);
  MatF logits, d_logits;
  std::vector<int> targets;
  std::vector<uint8_t> mask;
  const long C = m.model->config().d_model;
  for (uint64_t x = 0; x < E; ++x) {
    const uint64_t T = static_cast<uint64_t>(rf.sequence_lengths[x]);
    std::vector<double> share(T, 0.0);
    int sequences = 0;
    replay.ForEachEvalBatch(
        rf.lengths[x], rf.samples, [&](const Batch& b, const std::vector<double>& pos, int) {
          m.model->Forward(b.tokens, b.B, b.T, pos, true, false, logits);
          // The gradient of -ln p(top) at the last position of each sequence, over B of them
          // (the cross-entropy against the model's own top token there): shares of its norm are
          // those of ln p(top)'s, sign and the 1/B scale cancelling.
          targets.assign(b.tokens.size(), 0);
          mask.assign(b.tokens.size(), 0);
          for (int s = 0; s < b.B; ++s) {
            const long row = static_cast<long>(s) * b.T + (b.T - 1);
            Eigen::Index top;
            logits.row(row).maxCoeff(&top);
            targets[row] = static_cast<int>(top);
            mask[row] = 1;
          }
          CrossEntropyForwardBackward<float>(logits, targets, mask, &d_logits, nullptr, nullptr);
          m.model->Backward(b.tokens, d_logits);
          const MatF& g = m.model->InputGradient();
          for (int s = 0; s < b.B; ++s) {
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
            for (uint64_t j = 0; j < T; ++j) share[T - 1 - j] += norm[j] / total;
            ++sequences;
          }
        });
    double cum = 0, beyond = 0, c50 = kNaN, c90 = kNaN;
    for (uint64_t d = 0; d < T; ++d) {
      const double v = sequences ? share[d] / sequences : kNaN;
      rf.share[x * M + d] = v;
      cum += v;
      if (std::isnan(c50) && cum >= 0.5) c50 = static_cast<double>(d);
      if (std::isnan(c90) && cum >= 0.9) c90 = static_cast<double>(d);
      if (d >= static_cast<uint64_t>(rf.train_tokens)) beyond += v;
    }
    rf.context50.push_back(c50);
    rf.context90.push_back(c90);
    rf.share_beyond_window.push_back(beyond);
  }
  return rf;
}

std::string WriteReceptiveField(const ReceptiveField& rf, const h5::Group& analysis) {
  analysis.Remove("receptive_field");
  h5::Group g = analysis.CreateGroup("receptive_field");
  const uint64_t E = rf.lengths.size(), M = rf.max_tokens;
  g.SetAttr("source",
            "gradient of ln p(top token) at the last position with respect to the embedded input, "
            "over the evaluation stream (experiments/replay/receptive_field.h)");
  g.SetAttr("train_tokens", rf.train_tokens);
  g.SetAttr("samples", rf.samples);
  std::vector<int64_t> n(rf.lengths.begin(), rf.lengths.end()),
      t(rf.sequence_lengths.begin(), rf.sequence_lengths.end());
  g.WriteInts("length", n, {E}, "length", "tokens (requested task length n)");
  g.WriteInts("sequence_length", t, {E}, "length", "tokens (model sequence T)");
  g.WriteDoubles("gradient_share", rf.share, {E, M}, "length,distance",
                 "share of ||d ln p(top) / d x_j|| at distance d = i - j from the last position "
                 "i, mean over sequences (sums to 1 over d; NaN beyond the length)");
  g.WriteDoubles("context_50", rf.context50, {E}, "length",
                 "tokens: smallest D whose distances 0..D hold half the gradient");
  g.WriteDoubles("context_90", rf.context90, {E}, "length", "tokens: the same for 90%");
  g.WriteDoubles("share_beyond_window", rf.share_beyond_window, {E}, "length",
                 "share of the gradient at distances >= train_tokens");
  const uint64_t x = E - 1;
  return fmt::format(
      "gradient receptive field at n = {}: half the gradient within {:g} tokens, 90% within {:g} "
      "(training sequence: {} tokens); {:.2f} of it beyond that distance\n",
      rf.lengths[x], rf.context50[x], rf.context90[x], rf.train_tokens, rf.share_beyond_window[x]);
}

}  // namespace lexp
