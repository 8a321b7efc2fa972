#include "experiments/replay/probe_geometry.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/attention_geometry.h"
#include "analysis/attention_stats.h"
#include "analysis/rope_theory.h"
#include "nn/check.h"

namespace lexp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Per element: the sum, sum of squares and count of per-sequence values (NaN values skipped).
struct SpreadAccumulator {
  std::vector<double> sum, sq, n;
  explicit SpreadAccumulator(size_t k) : sum(k, 0.0), sq(k, 0.0), n(k, 0.0) {}
  void Add(size_t i, double v) {
    if (std::isnan(v)) return;
    sum[i] += v;
    sq[i] += v * v;
    n[i] += 1;
  }
  SequenceSpread Finish() const {
    SequenceSpread s;
    s.mean.assign(sum.size(), kNaN);
    s.sd.assign(sum.size(), kNaN);
    for (size_t i = 0; i < sum.size(); ++i) {
      if (n[i] > 0) s.mean[i] = sum[i] / n[i];
      if (n[i] > 1)
        s.sd[i] = std::sqrt(std::max(0.0, (sq[i] - n[i] * s.mean[i] * s.mean[i]) / (n[i] - 1)));
    }
    return s;
  }
};

// The local window of a head class: a scale-aware eighth of the training sequence, at least 2.
int LocalWindow(int train_tokens) { return std::max(2, train_tokens / 8); }

double MeanOver(const std::vector<double>& v, size_t from, size_t to) {
  double s = 0;
  int k = 0;
  for (size_t i = from; i < to; ++i)
    if (!std::isnan(v[i])) {
      s += v[i];
      ++k;
    }
  return k ? s / k : kNaN;
}

ProbeGeometry MeasureAtLength(ModelReplay& run, ModelReplay* ref, int n, int train_tokens,
                              const TrainedLogitRange* trained, std::string* ref_note) {
  ProbeGeometry g;
  const RecipeConfig& cfg = run.config();
  g.length = n;
  g.layers = static_cast<uint64_t>(cfg.model.n_layers);
  g.heads = static_cast<uint64_t>(cfg.model.n_heads);
  g.train_tokens = train_tokens;
  g.local_window = LocalWindow(train_tokens);
  const uint64_t L = g.layers, H = g.heads, LH = L * H;
  const int S = run.ProbeSequences(n);
  const int T = run.SequenceLength(n);
  const uint64_t uT = static_cast<uint64_t>(T);
  g.samples = S;
  g.sequence_length = T;
  g.input_tokens = run.InputTokens(n);
  bool with_ref = ref != nullptr;
  if (with_ref && ref->ProbeSequences(n) != S) {
    with_ref = false;
    *ref_note = "the reference has another probe batch";
  }
  SpreadAccumulator explosion(LH * uT), running_all(LH * uT), entropy(LH * uT), row_max(LH * uT),
      att_mean(LH * uT), att_argmax(LH * uT), sink(LH * uT), local(LH * uT);
  std::vector<double> by_sum(LH * uT, 0.0), by_sq(LH * uT, 0.0), by_n(LH * uT, 0.0);
  std::vector<double> js(LH * H, 0.0);
  g.visible.assign(uT, 0.0);
  g.nonfinite.assign(LH, 0);
  std::vector<double> sum(uT), sq(uT), cnt(uT);
  // Pass 1: everything but the content part, which needs the positional part first.
  for (int s = 0; s < S; ++s) {
    const std::vector<int>& tokens = run.ForwardProbeSequence(s);
    if (with_ref && ref->ForwardProbeSequence(s) != tokens) {
      with_ref = false;
      *ref_note = "the reference's probe sequences differ (another task, seed or vocabulary)";
    }
    for (uint64_t l = 0; l < L; ++l) {
      const MatF& Z = run.model().Logits(static_cast<int>(l));  // [H*T, T]
      const MatF& P = run.model().Probs(static_cast<int>(l));
      for (uint64_t h = 0; h < H; ++h) {
        const float* z = Z.data() + h * uT * uT;
        const float* p = P.data() + h * uT * uT;
        const uint64_t lh = l * H + h, at = lh * uT;
        g.nonfinite[lh] += NonFiniteLogits(z, T, T);
        const auto bound = LastQueryLogitBound(z, T, T);
        const auto all = AllQueriesLogitRunningMax(z, T, T);
        std::fill(sum.begin(), sum.end(), 0.0);
        std::fill(sq.begin(), sq.end(), 0.0);
        std::fill(cnt.begin(), cnt.end(), 0.0);
        AccumulateLogitsByDistance(z, T, T, sum, cnt, &sq);
        const AttendedDistance ad = AttendedDistances(p, T, T);
        for (uint64_t i = 0; i < uT; ++i) {
          explosion.Add(at + i, bound[i]);
          running_all.Add(at + i, all[i]);
          by_sum[at + i] += sum[i];
          by_sq[at + i] += sq[i];
          by_n[at + i] += cnt[i];
          const AttentionRowStats st = RowStats(z + i * uT, T);
          if (s == 0 && lh == 0) g.visible[i] = st.visible;
          entropy.Add(at + i, st.visible ? st.entropy : kNaN);
          row_max.Add(at + i, st.visible ? st.max_logit : kNaN);
          att_mean.Add(at + i, ad.mean[i]);
          att_argmax.Add(at + i, ad.argmax[i]);
          const float* row = p + i * uT;
          sink.Add(at + i, row[0]);
          double near = 0;
          for (uint64_t j = 0; j < uT; ++j)
            if (std::abs(static_cast<long>(i) - static_cast<long>(j)) < g.local_window)
              near += row[j];
          local.Add(at + i, near);
        }
        if (with_ref) {
          const MatF& Q = ref->model().Probs(static_cast<int>(l));
          for (uint64_t b = 0; b < H; ++b) {
            const float* q = Q.data() + b * uT * uT;
            double d = 0;
            for (uint64_t i = 0; i < uT; ++i) d += JensenShannon(p + i * uT, q + i * uT, T);
            js[lh * H + b] += d / (static_cast<double>(S) * T);
          }
        }
      }
    }
  }
  g.explosion = explosion.Finish();
  g.running_max_all = running_all.Finish();
  g.entropy = entropy.Finish();
  g.max_logit = row_max.Finish();
  g.attended_mean = att_mean.Finish();
  g.attended_argmax = att_argmax.Finish();
  g.sink_mass = sink.Finish();
  g.local_mass = local.Finish();
  // The positional part: the mean logit at each distance; gaps (no pair) stay NaN.
  g.logit_mean_by_distance.assign(LH * uT, kNaN);
  g.logit_sd_by_distance.assign(LH * uT, kNaN);
  g.resolution.assign(LH, kNaN);
  g.resolution_b.assign(LH, kNaN);
  g.resolution_window.assign(LH, kNaN);
  g.positional_share.assign(LH, kNaN);
  for (uint64_t lh = 0; lh < LH; ++lh) {
    double total = 0, zsum = 0, zsq = 0;
    for (uint64_t d = 0; d < uT; ++d) {
      const double k = by_n[lh * uT + d];
      if (k <= 0) continue;
      const double m = by_sum[lh * uT + d] / k;
      g.logit_mean_by_distance[lh * uT + d] = m;
      g.logit_sd_by_distance[lh * uT + d] =
          std::sqrt(std::max(0.0, by_sq[lh * uT + d] / k - m * m));
      total += k;
      zsum += by_sum[lh * uT + d];
      zsq += by_sq[lh * uT + d];
    }
    const theory::CurveResolutions res =
        theory::ResolutionsOf(std::vector<double>(g.logit_mean_by_distance.begin() + lh * uT,
                                                  g.logit_mean_by_distance.begin() + (lh + 1) * uT),
                              static_cast<size_t>(train_tokens));
    g.resolution[lh] = res.a;
    g.resolution_b[lh] = res.b;
    g.resolution_window[lh] = res.window;
    if (lh == 0) {  // the gaps are the visibility's, the same for every head
      g.resolution_flat = res.flat;
      g.resolution_flat_window = res.flat_window;
    }
    // Share of the logit variance the positional part explains: Var(mean at distance) / Var.
    if (total > 0) {
      const double mean = zsum / total, var = zsq / total - mean * mean;
      double between = 0;
      for (uint64_t d = 0; d < uT; ++d) {
        const double k = by_n[lh * uT + d];
        if (k > 0) between += k * std::pow(g.logit_mean_by_distance[lh * uT + d] - mean, 2);
      }
      g.positional_share[lh] = var > 0 ? between / total / var : kNaN;
    }
  }
  // Pass 2: the content part (logit minus its positional part) of every visible pair with the key
  // at or before the query, its range, and the pairs outside the trained ranges.
  TrainedLogitRange& r = g.range;
  for (auto* v : {&r.logit_lo, &r.pos_lo, &r.content_lo}) v->assign(LH, kInf);
  for (auto* v : {&r.logit_hi, &r.pos_hi, &r.content_hi}) v->assign(LH, -kInf);
  std::vector<double> out_z(LH, 0.0), out_p(LH, 0.0), out_c(LH, 0.0), pairs(LH, 0.0);
  for (int s = 0; s < S; ++s) {
    run.ForwardProbeSequence(s);
    for (uint64_t l = 0; l < L; ++l) {
      const MatF& Z = run.model().Logits(static_cast<int>(l));
      for (uint64_t h = 0; h < H; ++h) {
        const float* z = Z.data() + h * uT * uT;
        const uint64_t lh = l * H + h;
        for (uint64_t i = 0; i < uT; ++i)
          for (uint64_t j = 0; j <= i; ++j) {
            const double v = z[i * uT + j];
            if (!std::isfinite(v)) continue;
            const double pos = g.logit_mean_by_distance[lh * uT + (i - j)];
            const double c = v - pos;
            r.logit_lo[lh] = std::min(r.logit_lo[lh], v);
            r.logit_hi[lh] = std::max(r.logit_hi[lh], v);
            r.pos_lo[lh] = std::min(r.pos_lo[lh], pos);
            r.pos_hi[lh] = std::max(r.pos_hi[lh], pos);
            r.content_lo[lh] = std::min(r.content_lo[lh], c);
            r.content_hi[lh] = std::max(r.content_hi[lh], c);
            pairs[lh] += 1;
            if (trained) {
              out_z[lh] += v < trained->logit_lo[lh] || v > trained->logit_hi[lh];
              out_p[lh] += pos < trained->pos_lo[lh] || pos > trained->pos_hi[lh];
              out_c[lh] += c < trained->content_lo[lh] || c > trained->content_hi[lh];
            }
          }
      }
    }
  }
  g.out_of_range_logit.assign(LH, trained ? kNaN : 0.0);
  g.out_of_range_positional = g.out_of_range_content = g.out_of_range_logit;
  if (trained)
    for (uint64_t lh = 0; lh < LH; ++lh)
      if (pairs[lh] > 0) {
        g.out_of_range_logit[lh] = out_z[lh] / pairs[lh];
        g.out_of_range_positional[lh] = out_p[lh] / pairs[lh];
        g.out_of_range_content[lh] = out_c[lh] / pairs[lh];
      }
  // Head classes from the per-head means over queries: sink mass over queries 1.. (query 0 sees
  // only the first token), local mass over queries local_window.. (earlier ones see only near
  // keys).
  g.head_sink_mass.assign(LH, kNaN);
  g.head_local_mass.assign(LH, kNaN);
  g.head_class.assign(LH, 0);
  for (uint64_t lh = 0; lh < LH; ++lh) {
    const size_t at = lh * uT;
    g.head_sink_mass[lh] = MeanOver(g.sink_mass.mean, at + std::min<uint64_t>(1, uT - 1), at + uT);
    g.head_local_mass[lh] =
        MeanOver(g.local_mass.mean,
                 at + std::min<uint64_t>(static_cast<uint64_t>(g.local_window), uT - 1), at + uT);
    HeadClass c = HeadClass::kGlobal;
    if (g.head_sink_mass[lh] >= 0.5)
      c = HeadClass::kSink;
    else if (g.head_local_mass[lh] >= 0.5)
      c = HeadClass::kLocal;
    else if (g.positional_share[lh] < 0.5)
      c = HeadClass::kContent;
    g.head_class[lh] = static_cast<int64_t>(c);
  }
  g.has_reference = with_ref;
  if (with_ref) {
    g.js = js;
    g.js_best.assign(LH, kInf);
    g.js_mean.assign(LH, 0.0);
    for (uint64_t lh = 0; lh < LH; ++lh)
      for (uint64_t b = 0; b < H; ++b) {
        g.js_best[lh] = std::min(g.js_best[lh], js[lh * H + b]);
        g.js_mean[lh] += js[lh * H + b] / H;
      }
  }
  return g;
}

}  // namespace

const char* HeadClassName(HeadClass c) {
  switch (c) {
    case HeadClass::kSink:
      return "sink";
    case HeadClass::kLocal:
      return "local";
    case HeadClass::kContent:
      return "content";
    case HeadClass::kGlobal:
      return "global";
  }
  return "?";
}

GeometryAnalysis MeasureGeometry(const std::string& run_file, const std::string& reference) {
  GeometryAnalysis a;
  ModelReplay run(run_file);
  std::unique_ptr<ModelReplay> ref;
  if (!reference.empty()) {
    ref = std::make_unique<ModelReplay>(reference);
    a.reference = reference;
    if (ref->config().model.n_layers != run.config().model.n_layers ||
        ref->config().model.n_heads != run.config().model.n_heads) {
      a.reference_note = "the reference has another number of layers or heads";
      ref.reset();
    }
  }
  const RecipeConfig& cfg = run.config();
  a.train_length = cfg.train_max_length;
  const int train_tokens = run.SequenceLength(cfg.train_max_length);
  std::vector<int> lengths = {cfg.train_max_length};
  for (int n : cfg.ProbeLengths())
    if (n != cfg.train_max_length) lengths.push_back(n);
  std::sort(lengths.begin() + 1, lengths.end());
  for (size_t k = 0; k < lengths.size(); ++k) {
    std::string note;
    a.lengths.push_back(MeasureAtLength(run, ref.get(), lengths[k], train_tokens,
                                        k == 0 ? nullptr : &a.lengths[0].range, &note));
    if (!note.empty() && a.reference_note.empty()) a.reference_note = note;
  }
  return a;
}

std::string WriteGeometry(const GeometryAnalysis& a, const h5::Group& analysis) {
  analysis.Remove("geometry");
  h5::Group geo = analysis.CreateGroup("geometry");
  geo.SetAttr("source",
              "replay of the probe stream: every probe sequence (probe.samples) at the training "
              "length and at every probe length (experiments/replay/probe_geometry.h)");
  std::string report;
  if (a.lengths.empty()) return report;
  const ProbeGeometry& first = a.lengths.front();
  geo.SetAttr("train_length", a.train_length);
  geo.SetAttr("train_tokens", first.train_tokens);
  geo.SetAttr("local_window", first.local_window);
  geo.SetAttr("head_classes", "0 sink, 1 local, 2 content, 3 global");
  if (!a.reference.empty()) geo.SetAttr("reference", a.reference);
  if (!a.reference_note.empty()) geo.SetAttr("reference_not_used", a.reference_note);
  for (const ProbeGeometry& g : a.lengths) {
    const uint64_t L = g.layers, H = g.heads, T = static_cast<uint64_t>(g.sequence_length);
    h5::Group p = geo.CreateGroup("length_" + std::to_string(g.length));
    p.SetAttr("length", g.length);
    p.SetAttr("sequence_length", static_cast<int64_t>(T));
    p.SetAttr("input_tokens", g.input_tokens);
    p.SetAttr("samples", static_cast<int64_t>(g.samples));
    p.SetAttr("within_training", static_cast<int64_t>(g.length <= a.train_length));
    const std::vector<uint64_t> lht = {L, H, T}, lh = {L, H};
    auto spread = [&](const std::string& name, const SequenceSpread& v, const char* axes,
                      const std::string& what) {
      p.WriteDoubles(name, v.mean, lht, axes, what + ", mean over probe sequences");
      p.WriteDoubles(name + "_sd", v.sd, lht, axes,
                     "standard deviation over probe sequences of " + name);
    };
    spread("logit_bound_last_query", g.explosion, "layer,head,distance",
           "logit: LM-Infinite's explosion curve, the running max over distance of the last "
           "query's logits");
    spread("logit_max_all_queries", g.running_max_all, "layer,head,distance",
           "logit: max over every query of the logit at distance <= n (grows with the number of "
           "queries; not LM-Infinite's statistic)");
    spread("entropy_by_query", g.entropy, "layer,head,query", "nats over the keys the query sees");
    spread("max_logit_by_query", g.max_logit, "layer,head,query",
           "logit: the row maximum over the keys the query sees");
    spread("attended_distance_mean", g.attended_mean, "layer,head,query",
           "tokens: sum_j p_ij (i - j)");
    spread("attended_distance_argmax", g.attended_argmax, "layer,head,query",
           "tokens: distance of the most attended key");
    spread("sink_mass_by_query", g.sink_mass, "layer,head,query", "attention on the first token");
    spread("local_mass_by_query", g.local_mass, "layer,head,query",
           "attention on keys with |i - j| < local_window");
    p.WriteDoubles("visible_keys", g.visible, {T}, "query", "keys the query may see");
    p.WriteDoubles("logit_mean_by_distance", g.logit_mean_by_distance, lht, "layer,head,distance",
                   "logit: mean over every visible pair at distance n of every probe sequence "
                   "(the empirical attention expectation; the positional part; NaN: no pair)");
    p.WriteDoubles("logit_sd_by_distance", g.logit_sd_by_distance, lht, "layer,head,distance",
                   "logit: standard deviation over those pairs");
    p.WriteDoubles("resolution", g.resolution, lh, "layer,head",
                   "attention resolution of logit_mean_by_distance, convention A, gaps not joined");
    p.WriteDoubles("resolution_b", g.resolution_b, lh, "layer,head",
                   "the same, convention B (the last term dropped)");
    p.WriteDoubles("resolution_train_window", g.resolution_window, lh, "layer,head",
                   "resolution over distances 0 .. train_tokens - 1 only: the same N at every "
                   "length");
    p.SetAttr("resolution_flat", g.resolution_flat);
    p.SetAttr("resolution_flat_train_window", g.resolution_flat_window);
    p.WriteDoubles("positional_share", g.positional_share, lh, "layer,head",
                   "share of the logit variance explained by the mean logit at each distance");
    p.WriteDoubles("out_of_range_logit", g.out_of_range_logit, lh, "layer,head",
                   "fraction of visible logits (key at or before the query) outside the range of "
                   "the head's logits at the training length");
    p.WriteDoubles("out_of_range_positional", g.out_of_range_positional, lh, "layer,head",
                   "the same for the positional part (mean logit at the pair's distance)");
    p.WriteDoubles("out_of_range_content", g.out_of_range_content, lh, "layer,head",
                   "the same for the content part (logit minus its positional part)");
    std::vector<double> range;
    for (uint64_t k = 0; k < L * H; ++k)
      for (double v : {g.range.logit_lo[k], g.range.logit_hi[k], g.range.pos_lo[k],
                       g.range.pos_hi[k], g.range.content_lo[k], g.range.content_hi[k]})
        range.push_back(v);
    p.WriteDoubles("logit_ranges", range, {L, H, 6}, "layer,head,bound",
                   "logit: min and max of the logit, of its positional part and of its content "
                   "part over the visible pairs at this length");
    p.WriteDoubles("head_sink_mass", g.head_sink_mass, lh, "layer,head",
                   "sink_mass_by_query averaged over queries 1..");
    p.WriteDoubles("head_local_mass", g.head_local_mass, lh, "layer,head",
                   "local_mass_by_query averaged over queries local_window..");
    p.WriteInts("head_class", g.head_class, lh, "layer,head",
                "0 sink (head_sink_mass >= 0.5), 1 local (head_local_mass >= 0.5), 2 content "
                "(positional_share < 0.5), 3 global (otherwise), tested in that order");
    p.WriteInts("nonfinite_logits", g.nonfinite, lh, "layer,head",
                "logits that are NaN or +inf (every statistic here skips them)");
    if (g.has_reference) {
      p.WriteDoubles("js_vs_reference", g.js, {L, H, H}, "layer,head,reference_head",
                     "nats: Jensen-Shannon divergence of attention rows, mean over queries and "
                     "probe sequences, of every head against every reference head of the layer");
      p.WriteDoubles("js_best", g.js_best, lh, "layer,head",
                     "nats: js_vs_reference minimised over reference heads (best match)");
      p.WriteDoubles("js_mean", g.js_mean, lh, "layer,head",
                     "nats: js_vs_reference averaged over reference heads");
    }
    // Report: one line per length.
    const uint64_t LH = L * H;
    double bound = -kInf, bound_sd = kNaN, res = 0, oz = 0, op = 0, oc = 0, jb = 0;
    int64_t bad = 0;
    int classes[4] = {0, 0, 0, 0};
    for (uint64_t k = 0; k < LH; ++k) {
      const double b = g.explosion.mean[k * T + T - 1];
      if (b > bound) {
        bound = b;
        bound_sd = g.explosion.sd[k * T + T - 1];
      }
      res += g.resolution_window[k] / LH;
      oz += g.out_of_range_logit[k] / LH;
      op += g.out_of_range_positional[k] / LH;
      oc += g.out_of_range_content[k] / LH;
      if (g.has_reference) jb += g.js_best[k] / LH;
      bad += g.nonfinite[k];
      ++classes[g.head_class[k]];
    }
    report += fmt::format(
        "geometry n={} ({} sequences): last-query logit bound at the longest distance {:.2f} "
        "(sd {:.2f}, max over heads); heads sink/local/content/global {}/{}/{}/{}; resolution "
        "over the training window {:.3f} (flat curve {:.3f})",
        g.length, g.samples, bound, bound_sd, classes[0], classes[1], classes[2], classes[3], res,
        g.resolution_flat_window);
    if (g.length > a.train_length)
      report += fmt::format(
          "; outside the trained range: logits {:.1f}%, positional parts {:.1f}%, content parts "
          "{:.1f}%",
          100 * oz, 100 * op, 100 * oc);
    if (g.has_reference) report += fmt::format("; JS vs reference, best head match {:.3f}", jb);
    if (bad) report += fmt::format("; {} NaN/+inf logits skipped", bad);
    report += "\n";
  }
  if (a.reference.empty())
    report += "JS divergence: no reference run\n";
  else if (!a.reference_note.empty())
    report += "JS divergence skipped: " + a.reference_note + "\n";
  return report;
}

}  // namespace lexp
