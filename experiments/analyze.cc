#include "experiments/analyze.h"

#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include "analysis/attention_geometry.h"
#include "analysis/attention_stats.h"
#include "analysis/rope_theory.h"
#include "experiments/assembled_model.h"
#include "experiments/empirical_expectation.h"
#include "experiments/entropy_variants.h"
#include "experiments/rotary_pairs.h"
#include "experiments/trainer.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "pe/rope.h"

namespace lexp {
namespace {

struct StoredProbe {
  int length = 0;
  uint64_t S = 0, L = 0, H = 0, T = 0;
  std::vector<float> logits, probs;  // [S, L, H, T, T]
  std::vector<int64_t> tokens;       // [S, T]
  const float* Map(const std::vector<float>& v, uint64_t s, uint64_t l, uint64_t h) const {
    return v.data() + (((s * L + l) * H + h) * T * T);
  }
};

std::vector<StoredProbe> ReadProbes(const h5::Group& root) {
  std::vector<StoredProbe> out;
  if (!root.Has("probe")) return out;
  const h5::Group probe = root.OpenGroup("probe");
  for (const auto& child : probe.Children()) {
    if (!probe.IsGroup(child)) continue;
    const h5::Group g = probe.OpenGroup(child);
    if (!g.Has("logits")) continue;
    StoredProbe p;
    p.length = static_cast<int>(g.AttrInt("length"));
    constexpr uint64_t kAny = h5::Group::kAnySize;
    std::vector<uint64_t> dims;  // [sample, layer, head, query, key]
    const auto z = g.ReadDoublesShaped("logits", {kAny, kAny, kAny, kAny, kAny}, &dims);
    if (dims[0] == 0) continue;  // probe.stored_samples = 0: nothing stored
    // The metrics walk square T x T maps and read the last query of each.
    LEXP_INPUT_CHECK(dims[3] == dims[4] && dims[3] > 0,
                     "file '" + g.FileName() + "': /probe/" + child +
                         "/logits has query and key extents " + std::to_string(dims[3]) + " and " +
                         std::to_string(dims[4]) + ", expected equal and non-zero");
    p.S = dims[0];
    p.L = dims[1];
    p.H = dims[2];
    p.T = dims[3];
    p.logits.assign(z.begin(), z.end());
    const auto pr = g.ReadDoublesShaped("probs", dims);
    p.probs.assign(pr.begin(), pr.end());
    // The reference probe is matched on equal tokens, so its sample count is that of `tokens`.
    p.tokens = g.ReadIntsShaped("tokens", {p.S, p.T});
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::string AnalyzeRunFile(const std::string& path, const std::string& reference_given, bool replay,
                           bool finish) {
  std::string report, reference = reference_given;
  std::vector<StoredProbe> probes, refs;
  std::string encoding, label;
  {
    h5::Reader r(path);
    LEXP_INPUT_CHECK(r.root().Has("status"),
                     "'" + path + "' is not a finished lexp run file (no /status)");
    const std::string state = r.root().OpenGroup("status").AttrString("state");
    LEXP_INPUT_CHECK(HasFinalWeights(state), "'" + path + "' did not complete (" + state +
                                                 "); there is nothing to analyze");
    encoding = r.root().AttrString("encoding");
    label = RunLabel(r.root());
    probes = ReadProbes(r.root());
  }
  // No reference given: the NoPE run of the same directory and sweep point, when there is one.
  if (reference.empty() && encoding != "nope" && label.rfind(encoding, 0) == 0) {
    const auto candidate = std::filesystem::path(path).parent_path() /
                           ("nope" + label.substr(encoding.size()) + ".h5");
    if (std::filesystem::exists(candidate)) {
      h5::Reader r(candidate.string());
      if (r.root().Has("status") &&
          r.root().OpenGroup("status").AttrString("state") == "completed") {
        reference = candidate.string();
        report += "reference for the JS divergence: " + reference + " (found beside the run)\n";
      }
    }
  }
  if (!reference.empty()) {
    h5::Reader r(reference);
    refs = ReadProbes(r.root());
  }
  // Replays of the trained model (before the file is opened for update).
  std::optional<EntropyVariants> entropy;
  std::optional<EmpiricalExpectation> expectation;
  std::optional<RotaryPairAnalysis> rotary;
  const bool rotates = IsRopeEncoding(encoding);
  if (replay && !probes.empty()) entropy = EntropyUnderVariants(path);
  if (replay) expectation = MeasureExpectation(path);
  if (replay && rotates) rotary = AnalyzeRotaryPairs(path);
  h5::Writer w(path, h5::Writer::Mode::kUpdate);
  h5::Group analysis = w.root().CreateGroup("analysis");
  analysis.Remove("geometry");
  h5::Group geo = analysis.CreateGroup("geometry");
  geo.SetAttr("source", "attention stored on the probe batch (probe.stored_samples sequences)");
  if (entropy) geo.SetAttr("train_tokens", entropy->train_tokens);
  if (probes.empty())
    report +=
        "attention metrics: not applicable: the run stored no probe attention "
        "(probe.stored_samples = 0)\n";
  for (const auto& p : probes) {
    const uint64_t L = p.L, H = p.H, T = p.T;
    std::vector<double> explosion(L * H * T, 0.0), entropy(L * H * T, 0.0),
        mean_dist(L * H * T, 0.0), argmax_dist(L * H * T, 0.0), visible(T, 0.0), js(L * H, 0.0);
    std::vector<double> explosion_n(L * H * T, 0.0), by_dist(L * H * T, 0.0),
        by_dist_n(L * H * T, 0.0), by_dist_sq(L * H * T, 0.0);
    const StoredProbe* ref = nullptr;
    for (const auto& q : refs)
      if (q.length == p.length && q.T == T && q.L == L && q.H == H && q.tokens == p.tokens)
        ref = &q;
    for (uint64_t s = 0; s < p.S; ++s)
      for (uint64_t l = 0; l < L; ++l)
        for (uint64_t h = 0; h < H; ++h) {
          const float* z = p.Map(p.logits, s, l, h);
          const float* pr = p.Map(p.probs, s, l, h);
          const uint64_t base = (l * H + h) * T;
          const auto run = LogitRunningMax(z, static_cast<int>(T), static_cast<long>(T));
          std::vector<double> sum(T, 0.0), cnt(T, 0.0), sq(T, 0.0);
          AccumulateLogitsByDistance(z, static_cast<int>(T), static_cast<long>(T), sum, cnt, &sq);
          for (uint64_t n = 0; n < T; ++n) {
            by_dist[base + n] += sum[n];
            by_dist_n[base + n] += cnt[n];
            by_dist_sq[base + n] += sq[n];
          }
          const AttendedDistance ad =
              AttendedDistances(pr, static_cast<int>(T), static_cast<long>(T));
          for (uint64_t i = 0; i < T; ++i) {
            if (!std::isnan(run[i])) {
              explosion[base + i] += run[i];
              explosion_n[base + i] += 1;
            }
            const AttentionRowStats st = RowStats(z + i * T, static_cast<int>(T));
            entropy[base + i] += st.entropy / p.S;
            if (s == 0 && l == 0 && h == 0) visible[i] = st.visible;
            mean_dist[base + i] += ad.mean[i] / p.S;
            argmax_dist[base + i] += ad.argmax[i] / p.S;
            if (ref)
              js[l * H + h] += JensenShannon(pr + i * T, ref->Map(ref->probs, s, l, h) + i * T,
                                             static_cast<int>(T)) /
                               (static_cast<double>(p.S) * T);
          }
        }
    for (uint64_t i = 0; i < explosion.size(); ++i)
      explosion[i] = explosion_n[i] > 0 ? explosion[i] / explosion_n[i]
                                        : std::numeric_limits<double>::quiet_NaN();
    std::vector<double> resolution(L * H, 0.0), resolution_b(L * H, 0.0);
    for (uint64_t lh = 0; lh < L * H; ++lh) {
      std::vector<double> curve;
      for (uint64_t n = 0; n < T; ++n) {
        const double cnt = by_dist_n[lh * T + n];
        by_dist[lh * T + n] =
            cnt > 0 ? by_dist[lh * T + n] / cnt : std::numeric_limits<double>::quiet_NaN();
        const double m = by_dist[lh * T + n];
        by_dist_sq[lh * T + n] =
            cnt > 0 ? std::sqrt(std::max(0.0, by_dist_sq[lh * T + n] / cnt - m * m))
                    : std::numeric_limits<double>::quiet_NaN();
        if (!std::isnan(by_dist[lh * T + n])) curve.push_back(by_dist[lh * T + n]);
      }
      resolution[lh] = curve.empty() ? std::numeric_limits<double>::quiet_NaN()
                                     : theory::AttentionResolution(curve);
      resolution_b[lh] = curve.empty() ? std::numeric_limits<double>::quiet_NaN()
                                       : theory::AttentionResolution(
                                             curve, theory::ResolutionConvention::kDropLast);
    }
    h5::Group g = geo.CreateGroup("length_" + std::to_string(p.length));
    g.WriteDoubles("logit_mean_by_distance", by_dist, {L, H, T}, "layer,head,distance",
                   "logit: empirical attention expectation, mean over visible pairs at distance n");
    g.WriteDoubles("resolution_b", resolution_b, {L, H}, "layer,head",
                   "the same, convention B (the i = N term dropped)");
    g.WriteDoubles("logit_sd_by_distance", by_dist_sq, {L, H, T}, "layer,head,distance",
                   "logit: standard deviation over the visible pairs at distance n (spread of the "
                   "expectation)");
    g.WriteDoubles(
        "resolution", resolution, {L, H}, "layer,head",
        "attention resolution of logit_mean_by_distance (convention A, formulas.md 7.2)");
    g.SetAttr("length", p.length);
    g.SetAttr("sequence_length", static_cast<int64_t>(T));
    g.SetAttr("samples", static_cast<int64_t>(p.S));
    g.WriteDoubles("logit_running_max", explosion, {L, H, T}, "layer,head,distance",
                   "logit: max over queries at distance <= n, averaged over samples (LM-Infinite)");
    g.WriteDoubles("entropy_by_query", entropy, {L, H, T}, "layer,head,query",
                   "nats over the keys the query may see");
    g.WriteDoubles("visible_keys", visible, {T}, "query", "keys the query may see");
    g.WriteDoubles("attended_distance_mean", mean_dist, {L, H, T}, "layer,head,query",
                   "tokens: sum_j p_ij (i - j)");
    g.WriteDoubles("attended_distance_argmax", argmax_dist, {L, H, T}, "layer,head,query",
                   "tokens: distance of the most attended key");
    if (ref) {
      g.WriteDoubles("js_vs_reference", js, {L, H}, "layer,head",
                     "nats: Jensen-Shannon divergence of attention rows, mean over queries");
      g.SetAttr("reference", reference);
    }
    double top = -1e300;
    for (uint64_t l = 0; l < L; ++l)
      for (uint64_t h = 0; h < H; ++h) top = std::max(top, explosion[(l * H + h) * T + T - 1]);
    report += fmt::format(
        "probe n={}: logit running max at the longest distance (max over heads) "
        "{:.2f}; {}\n",
        p.length, top,
        ref ? "JS divergence vs reference written"
            : (reference.empty()
                   ? (encoding == "nope" ? "JS divergence: this NoPE run is the reference"
                                         : "no reference run given for the JS divergence")
                   : "reference has no matching probe (JS skipped)"));
  }
  if (entropy) report += WriteEntropyVariants(*entropy, analysis);
  if (expectation) report += WriteEmpiricalExpectation(*expectation, analysis);
  if (rotary) {
    report += WriteRotaryPairs(*rotary, analysis);
  } else if (!replay) {
    report +=
        "replay analyses (entropy variants, rotary pairs) skipped: probe.replay = 0; run "
        "lexp analyze on the file for them\n";
  } else {
    analysis.Remove("rotary");
    report += "rotary pair analysis: not applicable: '" + encoding + "' does not rotate\n";
  }
  if (finish) w.root().OpenGroup("status").SetAttr("state", "completed");
  w.Commit();
  return report;
}

}  // namespace lexp
