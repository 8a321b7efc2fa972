#include "experiments/replay/position_scores.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "experiments/replay/model_replay.h"
#include "nn/ops/cross_entropy.h"

namespace lexp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Loss and correct counts over the scored rows of one forward pass.
struct Tally {
  double loss = 0, correct = 0, count = 0;
  double Loss() const { return count > 0 ? loss / count : kNaN; }
  double Accuracy() const { return count > 0 ? correct / count : kNaN; }
};

}  // namespace

PositionScores MeasurePositionScores(const std::string& run_file) {
  PositionScores p;
  ModelReplay replay(run_file);
  const RecipeConfig& cfg = replay.config();
  AssembledModel& m = replay.parts();
  p.train_tokens = replay.SequenceLength(cfg.train_max_length);
  p.window = p.train_tokens;
  if (!m.task->Stationary())
    p.window_split_not_applicable =
        "task '" + m.task->Name() +
        "' is not a stationary source: its targets answer a prompt or a query that may lie "
        "before the last window, so the window alone lacks what they read (the split into extra "
        "keys and unseen positions holds for language-modelling sources)";
  const bool split = p.window_split_not_applicable.empty();
  p.lengths = cfg.EvalLengths();
  for (int n : p.lengths) p.sequence_lengths.push_back(replay.SequenceLength(n));
  p.max_tokens = static_cast<uint64_t>(
      *std::max_element(p.sequence_lengths.begin(), p.sequence_lengths.end()));
  const uint64_t E = p.lengths.size(), M = p.max_tokens;
  p.loss_by_position.assign(E * M, 0.0);
  p.accuracy_by_position.assign(E * M, 0.0);
  p.scored_by_position.assign(E * M, 0.0);
  MatF logits;
  std::vector<double> pos_w, row_loss;
  std::vector<uint8_t> row_correct;
  std::vector<int> tokens_w, targets_w;
  std::vector<uint8_t> mask_w;
  const int W = p.window;
  for (uint64_t x = 0; x < E; ++x) {
    const int n = p.lengths[x];
    Rng window_positions =
        Rng(static_cast<uint64_t>(cfg.seed)).Split("window-only").Split(static_cast<uint64_t>(n));
    Tally all, last, only, shifted;
    replay.ForEachEvalBatch(n, cfg.eval_samples,
                            [&](const Batch& b, const std::vector<double>& pos, int) {
                              m.model->Forward(b.tokens, b.B, b.T, pos, false, false, logits);
                              CrossEntropyForwardBackward<float>(logits, b.targets, b.mask, nullptr,
                                                                 &row_loss, &row_correct);
                              for (int s = 0; s < b.B; ++s)
                                for (int t = 0; t < b.T; ++t) {
                                  const size_t i = static_cast<size_t>(s) * b.T + t;
                                  if (!b.mask[i]) continue;
                                  p.loss_by_position[x * M + t] += row_loss[i];
                                  p.accuracy_by_position[x * M + t] += row_correct[i];
                                  p.scored_by_position[x * M + t] += 1;
                                  for (Tally* k : {&all, t >= b.T - W ? &last : nullptr})
                                    if (k) {
                                      k->loss += row_loss[i];
                                      k->correct += row_correct[i];
                                      k->count += 1;
                                    }
                                }
                              if (b.T <= W || !split)
                                return;  // the window is the whole
                                         // sequence, or not a fair input
                              // The last W tokens alone, with position ids from 0 and with their
                              // own.
                              tokens_w.resize(static_cast<size_t>(b.B) * W);
                              targets_w.resize(tokens_w.size());
                              mask_w.resize(tokens_w.size());
                              for (int s = 0; s < b.B; ++s)
                                for (int t = 0; t < W; ++t) {
                                  const size_t from = static_cast<size_t>(s) * b.T + (b.T - W + t),
                                               to = static_cast<size_t>(s) * W + t;
                                  tokens_w[to] = b.tokens[from];
                                  targets_w[to] = b.targets[from];
                                  mask_w[to] = b.mask[from];
                                }
                              for (const bool keep_positions : {false, true}) {
                                if (keep_positions)
                                  pos_w.assign(pos.end() - W, pos.end());
                                else
                                  m.encoding->PositionIds(W, false, window_positions, pos_w);
                                m.model->Forward(tokens_w, b.B, W, pos_w, false, false, logits);
                                const CrossEntropyResult ce = CrossEntropyForwardBackward<float>(
                                    logits, targets_w, mask_w, nullptr, &row_loss, &row_correct);
                                Tally& k = keep_positions ? shifted : only;
                                k.loss += ce.loss_sum;
                                k.correct += static_cast<double>(ce.correct);
                                k.count += static_cast<double>(ce.count);
                              }
                            });
    for (uint64_t t = 0; t < M; ++t) {
      double& c = p.scored_by_position[x * M + t];
      p.loss_by_position[x * M + t] = c > 0 ? p.loss_by_position[x * M + t] / c : kNaN;
      p.accuracy_by_position[x * M + t] = c > 0 ? p.accuracy_by_position[x * M + t] / c : kNaN;
    }
    if (p.sequence_lengths[x] <= W) only = shifted = last = all;
    if (!split) only = shifted = Tally{};  // NaN: not applicable
    p.loss.push_back(all.Loss());
    p.accuracy.push_back(all.Accuracy());
    p.last_window_loss.push_back(last.Loss());
    p.last_window_accuracy.push_back(last.Accuracy());
    p.window_only_loss.push_back(only.Loss());
    p.window_only_accuracy.push_back(only.Accuracy());
    p.window_shifted_loss.push_back(shifted.Loss());
    p.window_shifted_accuracy.push_back(shifted.Accuracy());
  }
  return p;
}

std::string WritePositionScores(const PositionScores& p, const h5::Group& analysis) {
  analysis.Remove("position_scores");
  h5::Group g = analysis.CreateGroup("position_scores");
  const uint64_t E = p.lengths.size(), M = p.max_tokens;
  g.SetAttr("source",
            "replay of the evaluation stream (eval.samples sequences, teacher forcing) at every "
            "evaluation length (experiments/replay/position_scores.h)");
  g.SetAttr("train_tokens", p.train_tokens);
  g.SetAttr("window", p.window);
  if (!p.window_split_not_applicable.empty())
    g.SetAttr("window_split_not_applicable", p.window_split_not_applicable);
  std::vector<int64_t> n(p.lengths.begin(), p.lengths.end()),
      t(p.sequence_lengths.begin(), p.sequence_lengths.end());
  g.WriteInts("length", n, {E}, "length", "tokens (requested task length n)");
  g.WriteInts("sequence_length", t, {E}, "length", "tokens (model sequence T)");
  g.WriteDoubles("loss_by_position", p.loss_by_position, {E, M}, "length,position",
                 "nats: mean loss of the scored targets at absolute position t (NaN: none)");
  g.WriteDoubles("accuracy_by_position", p.accuracy_by_position, {E, M}, "length,position",
                 "teacher-forced token accuracy at absolute position t (NaN: none scored)");
  g.WriteDoubles("scored_by_position", p.scored_by_position, {E, M}, "length,position",
                 "scored targets at position t over the evaluation sequences");
  g.WriteDoubles("loss", p.loss, {E}, "length", "nats per scored target (equals /eval/loss)");
  g.WriteDoubles("accuracy", p.accuracy, {E}, "length", "teacher-forced token accuracy");
  g.WriteDoubles("last_window_loss", p.last_window_loss, {E}, "length",
                 "nats: the scored targets of the last `window` tokens, the whole sequence before "
                 "them");
  g.WriteDoubles("last_window_accuracy", p.last_window_accuracy, {E}, "length", "the same");
  g.WriteDoubles("window_only_loss", p.window_only_loss, {E}, "length",
                 "nats: the same targets with only the last `window` tokens as input, with the "
                 "position ids the run's scheme gives a sequence that long (0.. for consecutive "
                 "positions; seen positions, `window` keys; NaN: window_split_not_applicable)");
  g.WriteDoubles("window_only_accuracy", p.window_only_accuracy, {E}, "length", "the same");
  g.WriteDoubles("window_shifted_loss", p.window_shifted_loss, {E}, "length",
                 "nats: the same window alone with its original position ids (unseen positions, "
                 "`window` keys)");
  g.WriteDoubles("window_shifted_accuracy", p.window_shifted_accuracy, {E}, "length", "the same");
  const uint64_t x = E - 1;
  const std::string head = fmt::format(
      "position scores at n = {} (teacher forced): loss {:.3f}; last {} tokens {:.3f} with the "
      "whole sequence",
      p.lengths[x], p.loss[x], p.window, p.last_window_loss[x]);
  if (!p.window_split_not_applicable.empty())
    return head + "; last-window split not applicable: " + p.window_split_not_applicable + "\n";
  return head + fmt::format(
                    ", {:.3f} alone at their own positions (extra keys cost {:+.3f}), {:.3f} alone "
                    "at a short sequence's positions (unseen positions cost {:+.3f})\n",
                    p.window_shifted_loss[x], p.last_window_loss[x] - p.window_shifted_loss[x],
                    p.window_only_loss[x], p.window_shifted_loss[x] - p.window_only_loss[x]);
}

}  // namespace lexp
