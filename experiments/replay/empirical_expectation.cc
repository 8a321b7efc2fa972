#include "experiments/replay/empirical_expectation.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/attention_geometry.h"
#include "analysis/rope_theory.h"
#include "experiments/replay/model_replay.h"

namespace lexp {

EmpiricalExpectation MeasureExpectation(const std::string& run_file) {
  EmpiricalExpectation e;
  ModelReplay replay(run_file);
  const RecipeConfig& cfg = replay.config();
  e.lengths = cfg.EvalLengths();
  e.layers = cfg.model.n_layers;
  e.heads = cfg.model.n_heads;
  for (int n : e.lengths) e.sequence_lengths.push_back(replay.SequenceLength(n));
  e.max_tokens = static_cast<uint64_t>(
      *std::max_element(e.sequence_lengths.begin(), e.sequence_lengths.end()));
  const uint64_t E = e.lengths.size(), LH = e.layers * e.heads, M = e.max_tokens;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  e.mean.assign(E * LH * M, nan);
  e.sd.assign(E * LH * M, nan);
  e.resolution.assign(E * LH, nan);
  e.resolution_b.assign(E * LH, nan);
  e.resolution_window.assign(E * LH, nan);
  e.resolution_flat.assign(E, nan);
  e.resolution_flat_window.assign(E, nan);
  e.train_tokens = replay.SequenceLength(cfg.train_max_length);
  for (uint64_t x = 0; x < E; ++x) {
    const uint64_t T = e.sequence_lengths[x];
    std::vector<double> sum(LH * T, 0.0), sq(LH * T, 0.0), cnt(LH * T, 0.0);
    replay.ForEachProbeSequence(e.lengths[x], [&](int, int T_seq) {
      std::vector<double> s(T_seq), q(T_seq), c(T_seq);
      for (uint64_t l = 0; l < e.layers; ++l) {
        const MatF& z = replay.model().Logits(static_cast<int>(l));  // [H*T, T]
        for (uint64_t h = 0; h < e.heads; ++h) {
          std::fill(s.begin(), s.end(), 0.0);
          std::fill(q.begin(), q.end(), 0.0);
          std::fill(c.begin(), c.end(), 0.0);
          AccumulateLogitsByDistance(z.data() + h * T_seq * T_seq, T_seq, T_seq, s, c, &q);
          const uint64_t lh = l * e.heads + h;
          for (int n = 0; n < T_seq; ++n) {
            sum[lh * T + n] += s[n];
            sq[lh * T + n] += q[n];
            cnt[lh * T + n] += c[n];
          }
        }
      }
    });
    // The curve keeps its gaps (NaN: no visible pair at that distance), so the resolution never
    // joins distances across one (theory::ResolutionsOf).
    for (uint64_t lh = 0; lh < LH; ++lh) {
      std::vector<double> curve(T, nan);
      for (uint64_t n = 0; n < T; ++n) {
        const double k = cnt[lh * T + n];
        if (k <= 0) continue;
        const double m = sum[lh * T + n] / k;
        e.mean[(x * LH + lh) * M + n] = m;
        e.sd[(x * LH + lh) * M + n] = std::sqrt(std::max(0.0, sq[lh * T + n] / k - m * m));
        curve[n] = m;
      }
      const theory::CurveResolutions res =
          theory::ResolutionsOf(curve, static_cast<size_t>(e.train_tokens));
      e.resolution[x * LH + lh] = res.a;
      e.resolution_b[x * LH + lh] = res.b;
      e.resolution_window[x * LH + lh] = res.window;
      if (lh == 0) {  // the gaps are the visibility's, the same for every head
        e.resolution_flat[x] = res.flat;
        e.resolution_flat_window[x] = res.flat_window;
      }
    }
  }
  return e;
}

std::string WriteEmpiricalExpectation(const EmpiricalExpectation& e, const h5::Group& analysis) {
  analysis.Remove("expectation");
  h5::Group g = analysis.CreateGroup("expectation");
  const uint64_t E = e.lengths.size(), L = e.layers, H = e.heads, M = e.max_tokens;
  g.SetAttr("source",
            "replay of the probe stream (probe.samples sequences) at every evaluation length "
            "(experiments/replay/empirical_expectation.h)");
  std::vector<int64_t> n(e.lengths.begin(), e.lengths.end()),
      t(e.sequence_lengths.begin(), e.sequence_lengths.end());
  g.WriteInts("length", n, {E}, "length", "tokens (requested task length n)");
  g.WriteInts("sequence_length", t, {E}, "length", "tokens (model sequence T)");
  g.WriteDoubles("logit_mean_by_distance", e.mean, {E, L, H, M}, "length,layer,head,distance",
                 "logit: mean over visible pairs at distance n (NaN beyond the length)");
  g.WriteDoubles("logit_sd_by_distance", e.sd, {E, L, H, M}, "length,layer,head,distance",
                 "logit: standard deviation over the same pairs");
  g.WriteDoubles("resolution", e.resolution, {E, L, H}, "length,layer,head",
                 "attention resolution of the mean curve, convention A (the sequence ends); gaps "
                 "(distances with no pair) are not joined");
  g.WriteDoubles("resolution_b", e.resolution_b, {E, L, H}, "length,layer,head",
                 "the same, convention B (the i = N term dropped)");
  g.WriteDoubles("resolution_train_window", e.resolution_window, {E, L, H}, "length,layer,head",
                 "resolution over distances 0 .. train_tokens - 1 only (the same N at every "
                 "length)");
  g.WriteDoubles("resolution_flat", e.resolution_flat, {E}, "length",
                 "resolution of a flat curve over the same distances, 1/K^2 for K distances: the "
                 "part of the fall with length that length alone causes");
  g.WriteDoubles("resolution_flat_train_window", e.resolution_flat_window, {E}, "length",
                 "the same over the training window");
  g.SetAttr("train_tokens", e.train_tokens);
  const auto mean_at = [&](uint64_t x) {
    double s = 0;
    for (uint64_t lh = 0; lh < L * H; ++lh) s += e.resolution[x * L * H + lh] / (L * H);
    return s;
  };
  const auto window_at = [&](uint64_t x) {
    double s = 0;
    for (uint64_t lh = 0; lh < L * H; ++lh) s += e.resolution_window[x * L * H + lh] / (L * H);
    return s;
  };
  return fmt::format(
      "empirical expectation at {} evaluation lengths; resolution (mean over heads) {:.3f} at "
      "n = {} and {:.3f} at n = {} (a flat curve: {:.4f} and {:.4f}); over the training window "
      "only {:.3f} and {:.3f}\n",
      E, mean_at(0), e.lengths.front(), mean_at(E - 1), e.lengths.back(), e.resolution_flat[0],
      e.resolution_flat[E - 1], window_at(0), window_at(E - 1));
}

}  // namespace lexp
