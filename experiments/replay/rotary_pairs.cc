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

  // Post-critical ablation: every cut, both modes, every evaluation length, sequence by sequence.
  // The 2 (P + 1) replays are independent: they run in parallel, each writing its own row (the
  // same numbers whatever the thread count).
  const size_t E = a.eval_lengths.size();
  a.ablation_loss.assign(2 * (P + 1) * E, 0.0);
  a.ablation_loss_sd.assign(a.ablation_loss.size(), 0.0);
  a.samples = cfg.eval_samples;
  a.chance_loss = std::log(static_cast<double>(plain.model().config().vocab));
  std::vector<CutAblationInput> judged(2);
  for (int m = 0; m < 2; ++m) {
    judged[m].lengths = a.eval_lengths;
    judged[m].train_length = a.train_max_length;
    judged[m].chance_loss = a.chance_loss;
    judged[m].loss.assign(P + 1, std::vector<std::vector<double>>(E));
  }
  const std::string opt = "encoding_options." + enc + ".";
  ParallelFor(2L * (P + 1), [&](long task) {
    const int m = static_cast<int>(task / (P + 1)), c = static_cast<int>(task % (P + 1));
    ModelReplay ablated(run,
                        {opt + "ablate_from=" + std::to_string(c), opt + "ablation=" + kModes[m]});
    for (size_t e = 0; e < E; ++e) {
      const size_t at = (m * (P + 1) + c) * E + e;
      std::vector<double>& per = judged[m].loss[c][e];
      per = ablated.EvalLossBySequence(a.eval_lengths[e], &a.ablation_loss[at]);
      double mean = 0, sq = 0;
      for (double v : per) mean += v / static_cast<double>(per.size());
      for (double v : per) sq += (v - mean) * (v - mean);
      a.ablation_loss_sd[at] =
          per.size() > 1 ? std::sqrt(sq / static_cast<double>(per.size() - 1)) : 0.0;
    }
  });
  for (int m = 0; m < 2; ++m) {
    a.verdict[m] = JudgeCutAblation(judged[m]);
    a.measured_boundary[m] = a.verdict[m].boundary;
  }
  return a;
}

namespace {

// Cuts as ranges: "4-8, 11".
std::string CutRanges(const std::vector<int>& flags) {
  std::string out;
  for (size_t c = 0; c < flags.size(); ++c) {
    if (!flags[c] || (c > 0 && flags[c - 1])) continue;
    size_t e = c;
    while (e + 1 < flags.size() && flags[e + 1]) ++e;
    out += (out.empty() ? "" : ", ") + (e == c ? fmt::format("{}", c) : fmt::format("{}-{}", c, e));
  }
  return out;
}

// One ablation mode's result in words: the unablated loss beyond N, the lowest cut with its paired
// difference and in-distribution cost, the cuts that help, and the measured boundary or why there
// is none.
std::string AblationOutcome(const RotaryPairAnalysis& a, int mode) {
  const CutAblationVerdict& v = a.verdict[mode];
  const int P = a.pairs, c = v.lowest;
  std::string s = fmt::format("{}: unablated {:.3f} [{:.3f}, {:.3f}]", kModes[mode],
                              v.beyond_loss[P], v.beyond_lo[P], v.beyond_hi[P]);
  if (c < 0 || c == P) return s + "; no cut lowers it: no measured boundary";
  s += fmt::format(
      "; lowest at cut {}: {:.3f} [{:.3f}, {:.3f}], {:+.3f} [{:+.3f}, {:+.3f}] against unablated, "
      "{:+.3f} [{:+.3f}, {:+.3f}] in distribution",
      c, v.beyond_loss[c], v.beyond_lo[c], v.beyond_hi[c], v.beyond_difference[c],
      v.difference_lo[c], v.difference_hi[c], v.in_distribution_cost[c], v.cost_lo[c],
      v.cost_hi[c]);
  if (v.boundary >= 0)
    return s + fmt::format(
                   "; cuts below unablated and better than a uniform guess: {} (the predicted cut "
                   "{} {}); measured boundary {}",
                   CutRanges(v.helps), a.predicted_boundary,
                   v.helps[a.predicted_boundary] ? "among them" : "not among them", v.boundary);
  bool any_chance = false, any_lower = false;
  for (int k = 0; k <= P; ++k) {
    any_chance = any_chance || v.better_than_chance[k];
    any_lower = any_lower || v.difference_hi[k] < 0;
  }
  if (!any_chance)
    return s + "; no cut is better than a uniform guess beyond N: no measured boundary";
  if (!any_lower)
    return s + "; no cut is below unablated beyond its 95% interval: no measured boundary";
  return s +
         "; no cut is both below unablated and better than a uniform guess: no measured boundary";
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
  g.SetAttr("chance_loss", a.chance_loss);
  g.SetAttr("samples", a.samples);
  if (!a.verdict[0].applicable)
    g.SetAttr("measured_boundary_not_applicable",
              "no evaluation length beyond (or none within) the training length, or fewer than 2 "
              "sequences (measured_boundary_* = -1)");
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
  g.WriteDoubles("ablation_loss_sd", a.ablation_loss_sd, {2, P + 1, E}, "ablation,cut,length",
                 "nats: standard deviation over the evaluation sequences of each one's loss");
  std::vector<double> bl, blo, bhi, df, dlo, dhi, il, ic, clo, chi;
  std::vector<int64_t> chance, helps;
  for (const CutAblationVerdict& v : a.verdict) {
    bl.insert(bl.end(), v.beyond_loss.begin(), v.beyond_loss.end());
    blo.insert(blo.end(), v.beyond_lo.begin(), v.beyond_lo.end());
    bhi.insert(bhi.end(), v.beyond_hi.begin(), v.beyond_hi.end());
    df.insert(df.end(), v.beyond_difference.begin(), v.beyond_difference.end());
    dlo.insert(dlo.end(), v.difference_lo.begin(), v.difference_lo.end());
    dhi.insert(dhi.end(), v.difference_hi.begin(), v.difference_hi.end());
    il.insert(il.end(), v.in_distribution_loss.begin(), v.in_distribution_loss.end());
    ic.insert(ic.end(), v.in_distribution_cost.begin(), v.in_distribution_cost.end());
    clo.insert(clo.end(), v.cost_lo.begin(), v.cost_lo.end());
    chi.insert(chi.end(), v.cost_hi.begin(), v.cost_hi.end());
    chance.insert(chance.end(), v.better_than_chance.begin(), v.better_than_chance.end());
    helps.insert(helps.end(), v.helps.begin(), v.helps.end());
  }
  const std::vector<uint64_t> mc = {2, P + 1};
  const char* mca = "ablation,cut";
  g.WriteDoubles("beyond_loss", bl, mc, mca,
                 "nats: mean over sequences of each one's mean loss over the lengths > N (NaN: "
                 "not applicable)");
  g.WriteDoubles("beyond_loss_lo", blo, mc, mca, "its 95% Student-t interval over sequences");
  g.WriteDoubles("beyond_loss_hi", bhi, mc, mca, "the interval's upper end");
  g.WriteDoubles("beyond_difference", df, mc, mca,
                 "nats: paired difference of beyond_loss against cut P (nothing ablated), mean "
                 "over sequences");
  g.WriteDoubles("beyond_difference_lo", dlo, mc, mca, "its paired 95% interval");
  g.WriteDoubles("beyond_difference_hi", dhi, mc, mca, "the interval's upper end");
  g.WriteDoubles("in_distribution_loss", il, mc, mca, "nats: the same over the lengths <= N");
  g.WriteDoubles("in_distribution_cost", ic, mc, mca,
                 "nats: paired difference of in_distribution_loss against cut P");
  g.WriteDoubles("in_distribution_cost_lo", clo, mc, mca, "its paired 95% interval");
  g.WriteDoubles("in_distribution_cost_hi", chi, mc, mca, "the interval's upper end");
  g.WriteInts("better_than_chance", chance, mc, mca,
              "1 when beyond_loss_hi < chance_loss (ln V: a uniform guess)");
  g.WriteInts("helps", helps, mc, mca,
              "1 when beyond_difference_hi < 0 and better_than_chance: the cuts "
              "measured_boundary_* is chosen from");
  double sup = -std::numeric_limits<double>::infinity(), obs = sup;  // maxima may be negative
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
         (!a.verdict[0].applicable
              ? fmt::format("post-critical ablation: losses written, measured boundary not "
                            "applicable: no evaluation length beyond (or none within) the "
                            "training length {}\n",
                            a.train_max_length)
              : fmt::format("post-critical ablation (predicted boundary: cut {}), loss per token "
                            "beyond N over {} sequences with 95% intervals, uniform guess {:.2f}:\n"
                            "  {}\n  {}\n",
                            a.predicted_boundary, a.samples, a.chance_loss, AblationOutcome(a, 0),
                            AblationOutcome(a, 1)));
}

}  // namespace lexp
