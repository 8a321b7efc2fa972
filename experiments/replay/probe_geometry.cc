#include "experiments/replay/probe_geometry.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/assignment.h"
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

// Outside [lo, hi] by more than float rounding (1e-5 of the range's magnitude): a logit that
// depends on the distance alone is recomputed at other absolute positions at a longer length and
// differs from its trained value in the last bits.
bool Outside(double v, double lo, double hi) {
  const double tol = 1e-5 * std::max({1.0, std::abs(lo), std::abs(hi)});
  return v < lo - tol || v > hi + tol;
}

// The class of a head from its sink mass, local mass and positional share (in that order).
HeadClass ClassOf(double sink, double local, double share) {
  if (sink >= 0.5) return HeadClass::kSink;
  if (local >= 0.5) return HeadClass::kLocal;
  if (share < 0.5) return HeadClass::kContent;
  return HeadClass::kGlobal;
}

// Share of the logit variance the mean logit at each distance explains, from per-distance sums,
// sums of squares and counts (NaN: no pair, or no variance).
double PositionalShare(const std::vector<double>& sum, const std::vector<double>& sq,
                       const std::vector<double>& cnt) {
  double total = 0, zsum = 0, zsq = 0;
  for (size_t d = 0; d < sum.size(); ++d) {
    total += cnt[d];
    zsum += sum[d];
    zsq += sq[d];
  }
  if (!(total > 0)) return kNaN;
  const double mean = zsum / total, var = zsq / total - mean * mean;
  double between = 0;
  for (size_t d = 0; d < sum.size(); ++d)
    if (cnt[d] > 0) between += cnt[d] * std::pow(sum[d] / cnt[d] - mean, 2);
  return var > 0 ? between / total / var : kNaN;
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
  // Per sequence: each head's statistics (for their spread and class agreement) and JS.
  SpreadAccumulator head_sink(LH), head_local(LH), head_share(LH), js_acc(LH * H),
      js_beyond_acc(LH * H);
  std::vector<std::vector<HeadClass>> seq_class(static_cast<size_t>(S), std::vector<HeadClass>(LH));
  std::vector<int> row_visible(uT);
  const uint64_t first_local = std::min<uint64_t>(static_cast<uint64_t>(g.local_window), uT - 1);
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
        double seq_sink = 0, seq_local = 0, n_sink = 0, n_local = 0;
        for (uint64_t i = 0; i < uT; ++i) {
          explosion.Add(at + i, bound[i]);
          running_all.Add(at + i, all[i]);
          by_sum[at + i] += sum[i];
          by_sq[at + i] += sq[i];
          by_n[at + i] += cnt[i];
          const AttentionRowStats st = RowStats(z + i * uT, T);
          row_visible[i] = static_cast<int>(st.visible);
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
          // The head's means over this sequence's queries, as the pooled ones below.
          if (i >= std::min<uint64_t>(1, uT - 1)) {
            seq_sink += row[0];
            n_sink += 1;
          }
          if (i >= first_local) {
            seq_local += near;
            n_local += 1;
          }
        }
        const double share_s = PositionalShare(sum, sq, cnt);
        head_sink.Add(lh, seq_sink / n_sink);
        head_local.Add(lh, seq_local / n_local);
        head_share.Add(lh, share_s);
        seq_class[s][lh] = ClassOf(seq_sink / n_sink, seq_local / n_local, share_s);
        if (with_ref) {
          // Over the queries that see two keys or more (one key: JS 0 whatever the heads), and over
          // those beyond the training length.
          const MatF& Q = ref->model().Probs(static_cast<int>(l));
          for (uint64_t b = 0; b < H; ++b) {
            const float* q = Q.data() + b * uT * uT;
            double d = 0, nq = 0, db = 0, nb = 0;
            for (uint64_t i = 0; i < uT; ++i) {
              if (row_visible[i] < 2) continue;
              const double js_i = JensenShannon(p + i * uT, q + i * uT, T);
              d += js_i;
              nq += 1;
              if (i >= static_cast<uint64_t>(train_tokens)) {
                db += js_i;
                nb += 1;
              }
            }
            js_acc.Add(lh * H + b, nq > 0 ? d / nq : kNaN);
            js_beyond_acc.Add(lh * H + b, nb > 0 ? db / nb : kNaN);
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
    for (uint64_t d = 0; d < uT; ++d) {
      const double k = by_n[lh * uT + d];
      if (k <= 0) continue;
      const double m = by_sum[lh * uT + d] / k;
      g.logit_mean_by_distance[lh * uT + d] = m;
      g.logit_sd_by_distance[lh * uT + d] =
          std::sqrt(std::max(0.0, by_sq[lh * uT + d] / k - m * m));
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
    auto slice = [&](const std::vector<double>& v) {
      return std::vector<double>(v.begin() + lh * uT, v.begin() + (lh + 1) * uT);
    };
    g.positional_share[lh] = PositionalShare(slice(by_sum), slice(by_sq), slice(by_n));
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
              out_z[lh] += Outside(v, trained->logit_lo[lh], trained->logit_hi[lh]);
              out_p[lh] += Outside(pos, trained->pos_lo[lh], trained->pos_hi[lh]);
              out_c[lh] += Outside(c, trained->content_lo[lh], trained->content_hi[lh]);
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
    const HeadClass c =
        ClassOf(g.head_sink_mass[lh], g.head_local_mass[lh], g.positional_share[lh]);
    g.head_class[lh] = static_cast<int64_t>(c);
    double agree = 0;
    for (int q = 0; q < S; ++q) agree += seq_class[q][lh] == c;
    g.head_class_agreement.push_back(S > 0 ? agree / S : kNaN);
  }
  g.head_sink_mass_sd = head_sink.Finish().sd;
  g.head_local_mass_sd = head_local.Finish().sd;
  g.positional_share_sd = head_share.Finish().sd;
  g.has_reference = with_ref;
  if (with_ref) {
    const SequenceSpread js = js_acc.Finish(), beyond = js_beyond_acc.Finish();
    g.js = js.mean;
    g.js_sd = js.sd;
    g.js_beyond = beyond.mean;
    g.js_best.assign(LH, kInf);
    g.js_mean.assign(LH, 0.0);
    for (uint64_t lh = 0; lh < LH; ++lh)
      for (uint64_t b = 0; b < H; ++b) {
        g.js_best[lh] = std::min(g.js_best[lh], g.js[lh * H + b]);
        g.js_mean[lh] += g.js[lh * H + b] / H;
      }
    // One to one: each layer's heads assigned to reference heads with the least total JS.
    for (uint64_t l = 0; l < L; ++l) {
      const std::vector<double> cost(g.js.begin() + l * H * H, g.js.begin() + (l + 1) * H * H);
      const std::vector<int> match = MinCostAssignment(cost, static_cast<int>(H));
      for (uint64_t h = 0; h < H; ++h) {
        const uint64_t k = (l * H + h) * H + static_cast<uint64_t>(match[h]);
        g.js_matched_head.push_back(match[h]);
        g.js_matched.push_back(g.js[k]);
        g.js_matched_sd.push_back(g.js_sd[k]);
        g.js_matched_beyond.push_back(g.js_beyond[k]);
      }
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
    p.WriteDoubles("head_sink_mass_sd", g.head_sink_mass_sd, lh, "layer,head",
                   "standard deviation over probe sequences of each sequence's head_sink_mass");
    p.WriteDoubles("head_local_mass_sd", g.head_local_mass_sd, lh, "layer,head",
                   "the same for head_local_mass");
    p.WriteDoubles(
        "positional_share_sd", g.positional_share_sd, lh, "layer,head",
        "the same for the positional share, each sequence's from its own distance means");
    p.WriteInts("head_class", g.head_class, lh, "layer,head",
                "0 sink (head_sink_mass >= 0.5), 1 local (head_local_mass >= 0.5), 2 content "
                "(positional_share < 0.5), 3 global (otherwise), tested in that order");
    p.WriteDoubles("head_class_agreement", g.head_class_agreement, lh, "layer,head",
                   "fraction of probe sequences whose own statistics give head_class (1: every "
                   "sequence agrees; lower: the head sits near a 0.5 threshold)");
    p.WriteInts("nonfinite_logits", g.nonfinite, lh, "layer,head",
                "logits that are NaN or +inf (every statistic here skips them)");
    if (g.has_reference) {
      p.WriteDoubles("js_vs_reference", g.js, {L, H, H}, "layer,head,reference_head",
                     "nats: Jensen-Shannon divergence of attention rows, mean over the queries "
                     "seeing two keys or more and over probe sequences, of every head against "
                     "every reference head of the layer");
      p.WriteDoubles("js_vs_reference_sd", g.js_sd, {L, H, H}, "layer,head,reference_head",
                     "nats: standard deviation over probe sequences of each one's mean");
      p.WriteDoubles("js_vs_reference_beyond", g.js_beyond, {L, H, H}, "layer,head,reference_head",
                     "nats: the same over the queries at positions >= train_tokens only (NaN: "
                     "none at this length)");
      p.WriteDoubles("js_best", g.js_best, lh, "layer,head",
                     "nats: js_vs_reference minimised over reference heads (several heads may "
                     "claim one reference head)");
      p.WriteInts("js_matched_head", g.js_matched_head, lh, "layer,head",
                  "the reference head each head is matched to in the one-to-one assignment of "
                  "the layer's heads with the least total js_vs_reference (Hungarian method)");
      p.WriteDoubles("js_matched", g.js_matched, lh, "layer,head",
                     "nats: js_vs_reference of each head and its matched reference head");
      p.WriteDoubles("js_matched_sd", g.js_matched_sd, lh, "layer,head",
                     "nats: its standard deviation over probe sequences");
      p.WriteDoubles("js_matched_beyond", g.js_matched_beyond, lh, "layer,head",
                     "nats: js_vs_reference_beyond of the same pairs (NaN: no query beyond)");
      p.WriteDoubles("js_mean", g.js_mean, lh, "layer,head",
                     "nats: js_vs_reference averaged over reference heads");
    }
    // Report: one line per length.
    const uint64_t LH = L * H;
    double bound = -kInf, bound_sd = kNaN, res = 0, oz = 0, op = 0, oc = 0, jb = 0, jm = 0, jmb = 0,
           agree = 0;
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
      if (g.has_reference) {
        jb += g.js_best[k] / LH;
        jm += g.js_matched[k] / LH;
        jmb += g.js_matched_beyond[k] / LH;
      }
      agree += g.head_class_agreement[k] / LH;
      bad += g.nonfinite[k];
      ++classes[g.head_class[k]];
    }
    report += fmt::format(
        "geometry n={} ({} sequences): last-query logit bound at the longest distance {:.2f} "
        "(sd {:.2f}, max over heads); heads sink/local/content/global {}/{}/{}/{} (a head's "
        "class holds in {:.0f}% of the sequences, mean over heads); resolution over the training "
        "window {:.3f} (flat curve {:.3f})",
        g.length, g.samples, bound, bound_sd, classes[0], classes[1], classes[2], classes[3],
        100 * agree, res, g.resolution_flat_window);
    if (g.length > a.train_length)
      report += fmt::format(
          "; outside the trained range: logits {:.1f}%, positional parts {:.1f}%, content parts "
          "{:.1f}%",
          100 * oz, 100 * op, 100 * oc);
    if (g.has_reference) {
      report += fmt::format(
          "; JS vs reference, heads matched one to one {:.3f} (each head's closest {:.3f})", jm,
          jb);
      if (g.length > a.train_length)
        report += fmt::format(", over the queries beyond training {:.3f}", jmb);
    }
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
