#include "experiments/replay/rotary_pairs.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "experiments/replay/model_replay.h"
#include "nn/check.h"
#include "nn/parallel.h"
#include "pe/rope.h"

namespace lexp {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;
const char* const kModes[2] = {"freeze", "remove"};

// Largest p_i - p_j the encoding's position ids reach for T tokens (training: over 256 draws).
double LargestDistance(PositionEncoding<float>& enc, int T, bool training, Rng rng) {
  std::vector<double> pos;
  double best = 0;
  for (int draw = 0; draw < (training ? 256 : 1); ++draw) {
    enc.PositionIds(T, training, rng, pos);
    const auto [lo, hi] = std::minmax_element(pos.begin(), pos.end());
    best = std::max(best, *hi - *lo);
  }
  return best;
}

}  // namespace

const Rope<float>* FindRope(const PositionEncoding<float>& e) {
  if (auto* r = dynamic_cast<const Rope<float>*>(&e)) return r;
  if (auto* f = dynamic_cast<const ForwardingEncoding<float>*>(&e)) return FindRope(f->inner());
  return nullptr;
}

double TrainedDistance(ModelReplay& replay) {
  const RecipeConfig& cfg = replay.config();
  const Rng rng = Rng(static_cast<uint64_t>(cfg.seed)).Split("rotary-analysis");
  return LargestDistance(replay.encoding(), replay.SequenceLength(cfg.train_max_length), true,
                         rng.Split("train"));
}

RotaryPairAnalysis AnalyzeRotaryPairs(const std::string& run_file) {
  RotaryPairAnalysis a;
  const TrainedRun run = ReadTrainedRun(run_file);  // every replay below builds from it
  ModelReplay plain(run);
  const RecipeConfig& cfg = plain.config();
  const std::string enc = plain.encoding_name();
  const Rope<float>* rope = FindRope(plain.encoding());
  LEXP_INPUT_CHECK(rope != nullptr, "rotary pair analysis: '" + enc + "' does not rotate");
  a.rotary_dims = rope->rotary_dims();
  a.pairs = a.rotary_dims / 2;
  a.inv_freq = rope->inverse_frequencies();
  a.train_max_length = cfg.train_max_length;
  a.train_tokens = plain.SequenceLength(cfg.train_max_length);
  const int P = a.pairs;
  // Angle ranges: the boundary counts the pairs whose period fits in the positions training
  // showed (randomized, PoSE and shifted positions reach far beyond the token count).
  const Rng rng = Rng(static_cast<uint64_t>(cfg.seed)).Split("rotary-analysis");
  a.train_distance = TrainedDistance(plain);
  a.train_span = a.train_distance + 1;
  for (double t : a.inv_freq) {
    a.period.push_back(t > 0 ? kTwoPi / t : std::numeric_limits<double>::infinity());
    a.predicted_boundary += a.period.back() <= a.train_span;
    a.train_angle.push_back(t * a.train_distance);
  }
  a.eval_lengths = cfg.EvalLengths();
  for (int n : a.eval_lengths) {
    const double d = LargestDistance(plain.encoding(), plain.SequenceLength(n), false,
                                     rng.Split(static_cast<uint64_t>(n)));
    a.eval_distance.push_back(d);
    for (double t : a.inv_freq) a.eval_angle.push_back(t * d);
  }

  // Pair contributions on the longest probe, one sequence per pass.
  const auto probe_lengths = cfg.ProbeLengths();
  a.probe_length = *std::max_element(probe_lengths.begin(), probe_lengths.end());
  RotaryPairProbe<float>* probe = nullptr;
  ModelReplay observed(run, {}, [&](std::unique_ptr<PositionEncoding<float>> inner) {
    auto p = std::make_unique<RotaryPairProbe<float>>(std::move(inner), cfg.model.n_layers,
                                                      cfg.model.n_heads, P, rope->interleaved(),
                                                      a.train_span);
    probe = p.get();
    return p;
  });
  observed.ForEachProbeSequence(a.probe_length, [&](int, int) { probe->EndSequence(); });
  a.contributions = probe->Stats();

  // Post-critical ablation: every cut, both modes, every evaluation length. The 2 (P + 1) replays
  // are independent: they run in parallel, each writing its own row (the same numbers whatever
  // the thread count).
  const size_t E = a.eval_lengths.size();
  a.ablation_loss.assign(2 * (P + 1) * E, 0.0);
  const std::string opt = "encoding_options." + enc + ".";
  ParallelFor(2L * (P + 1), [&](long task) {
    const int m = static_cast<int>(task / (P + 1)), c = static_cast<int>(task % (P + 1));
    ModelReplay ablated(run,
                        {opt + "ablate_from=" + std::to_string(c), opt + "ablation=" + kModes[m]});
    for (size_t e = 0; e < E; ++e)
      a.ablation_loss[(m * (P + 1) + c) * E + e] = ablated.EvalLoss(a.eval_lengths[e]);
  });
  for (int m = 0; m < 2; ++m) {
    double best = std::numeric_limits<double>::infinity();
    for (int c = 0; c <= P; ++c) {
      double beyond = 0;
      int nb = 0;
      for (size_t e = 0; e < E; ++e)
        if (a.eval_lengths[e] > a.train_max_length) {
          beyond += a.ablation_loss[(m * (P + 1) + c) * E + e];
          ++nb;
        }
      beyond = nb ? beyond / nb : std::numeric_limits<double>::quiet_NaN();
      if (nb == 0) a.measured_boundary[m] = -1;  // no length beyond training: nothing to measure
      if (beyond < best) {
        best = beyond;
        a.measured_boundary[m] = c;
      }
      if (c == P) a.beyond_loss[m][0] = beyond;
    }
    a.beyond_loss[m][1] = best;
  }
  return a;
}

namespace {

// One ablation mode's result in words: the best cut, or that no cut lowers the loss (the best
// "cut" is then P, nothing ablated).
std::string AblationOutcome(const RotaryPairAnalysis& a, int mode) {
  if (a.measured_boundary[mode] >= a.pairs) return "no cut lowers the loss";
  const double gain = a.beyond_loss[mode][0] - a.beyond_loss[mode][1];
  // Below the printed precision the "best" cut is noise: say that no ablation helps.
  if (gain < 5e-4)
    return fmt::format("no cut lowers the loss by 0.001 nats or more (best cut {}, {:.1e} below)",
                       a.measured_boundary[mode], gain);
  return fmt::format("best at cut {} ({:.3f}, {:.3f} nats below)", a.measured_boundary[mode],
                     a.beyond_loss[mode][1], gain);
}

}  // namespace

std::string WriteRotaryPairs(const RotaryPairAnalysis& a, const h5::Group& analysis) {
  analysis.Remove("rotary");
  h5::Group g = analysis.CreateGroup("rotary");
  const uint64_t P = a.pairs, E = a.eval_lengths.size();
  const uint64_t L = a.contributions.layers, H = a.contributions.heads;
  g.SetAttr("rotary_dims", a.rotary_dims);
  g.SetAttr("train_length", a.train_tokens);
  g.SetAttr("train_max_length", a.train_max_length);
  g.SetAttr("d_extra", 2 * a.predicted_boundary);
  g.SetAttr("predicted_boundary", a.predicted_boundary);
  g.SetAttr("measured_boundary_freeze", a.measured_boundary[0]);
  g.SetAttr("measured_boundary_remove", a.measured_boundary[1]);
  if (a.measured_boundary[0] < 0)
    g.SetAttr("measured_boundary_not_applicable",
              "no evaluation length beyond the training length (measured_boundary_* = -1)");
  g.SetAttr("train_distance", a.train_distance);
  g.SetAttr("train_span", a.train_span);
  g.SetAttr("probe_length", a.probe_length);
  g.WriteDoubles("inverse_frequency", a.inv_freq, {P}, "pair", "radians per token");
  g.WriteDoubles("pair_period", a.period, {P}, "pair", "tokens: 2 pi / theta_k");
  g.WriteDoubles("train_angle", a.train_angle, {P}, "pair",
                 "radians: theta_k x the largest distance seen in training");
  std::vector<int64_t> lengths(a.eval_lengths.begin(), a.eval_lengths.end());
  g.WriteInts("eval_length", lengths, {E}, "length", "tokens (requested task length n)");
  g.WriteDoubles("eval_distance", a.eval_distance, {E}, "length",
                 "tokens: largest distance at that length");
  g.WriteDoubles("eval_angle", a.eval_angle, {E, P}, "length,pair",
                 "radians: theta_k x the largest distance at that length");
  const RotaryPairStats& c = a.contributions;
  g.WriteDoubles("contribution_near", c.near_abs, {L, H, P}, "layer,head,pair",
                 "logit: mean |c_k| over visible pairs at distance < train_span");
  g.WriteDoubles("contribution_far", c.far_abs, {L, H, P}, "layer,head,pair",
                 "logit: mean |c_k| over visible pairs at distance >= train_span (NaN: none)");
  g.WriteDoubles("logit_supremum", c.supremum, {L, H}, "layer,head",
                 "logit: max over visible (i, j) of scale (sum_k |q_ik||k_jk| + q_u.k_u), u the "
                 "unrotated dims (none when all rotate), mean over sequences");
  g.WriteDoubles("logit_observed_max", c.observed, {L, H}, "layer,head",
                 "logit: max over visible (i, j) of the rotary logit, mean over sequences");
  g.WriteDoubles("ablation_loss", a.ablation_loss, {2, P + 1, E}, "ablation,cut,length",
                 "nats per scored token; ablation 0 = freeze, 1 = remove; pairs k >= cut "
                 "ablated (cut = P: none)");
  double sup = 0, obs = 0;
  for (uint64_t lh = 0; lh < L * H; ++lh) {
    sup = std::max(sup, c.supremum[lh]);
    obs = std::max(obs, c.observed[lh]);
  }
  return fmt::format(
             "rotary: {} of {} pairs complete a period within the {:g} positions training "
             "showed ({} tokens; predicted boundary {}); the longest evaluation reaches {:.3g} "
             "periods of the slowest pair\n",
             a.predicted_boundary, a.pairs, a.train_span, a.train_tokens, a.predicted_boundary,
             a.eval_angle.empty() ? 0.0 : a.eval_angle.back() / kTwoPi) +
         fmt::format(
             "rotary logits on the {}-token probe: largest observed {:.2f}, supremum over "
             "distances {:.2f}\n",
             a.probe_length, obs, sup) +
         (a.measured_boundary[0] < 0
              ? fmt::format("post-critical ablation: losses written, measured boundary not "
                            "applicable: no evaluation length beyond the training length {}\n",
                            a.train_max_length)
              : fmt::format("post-critical ablation, mean loss beyond training ({:.3f} "
                            "unablated): freeze {}, remove {}; predicted cut {}\n",
                            a.beyond_loss[0][0], AblationOutcome(a, 0), AblationOutcome(a, 1),
                            a.predicted_boundary));
}

}  // namespace lexp
