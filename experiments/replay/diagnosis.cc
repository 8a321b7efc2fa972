#include "experiments/replay/diagnosis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>

#include "experiments/replay/attention_symptoms.h"
#include "experiments/replay/model_replay.h"
#include "experiments/replay/rotary_pairs.h"
#include "pe/rope.h"
#include "nn/check.h"
#include "pe/registry.h"

namespace lexp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Below this gap (nats) a share is a ratio of small numbers; the table shows the nats closed.
constexpr double kSmallGap = 0.05;

struct Candidate {
  std::string name, factor;
  // Overrides for a length of `tokens` tokens, or empty with a reason when it does not apply.
  std::vector<std::string> (*overrides)(int tokens, int L, int boundary);
};

std::vector<std::string> Clamp(int, int L, int) {
  return {"encoding_options.rope.scaling=\"rerope\"",
          fmt::format("encoding_options.rope.window={}", std::max(1, L - 1)),
          "encoding_options.rope.log_n=\"false\""};
}
std::vector<std::string> Remap(int, int L, int) {
  return {"model.positions=\"clamp\"", fmt::format("model.positions_max={}", L)};
}
std::vector<std::string> Window(int, int L, int) {
  return {"model.pattern=\"sliding_window\"", fmt::format("model.pattern_window={}", L),
          "model.pattern_when=\"eval\""};
}
std::vector<std::string> Lambda(int, int L, int) {
  // The global keys seen at distance L - 1, the largest trained, not L (the limit's default).
  return {"model.pattern=\"lambda\"", fmt::format("model.pattern_window={}", L),
          "model.pattern_global=2", fmt::format("model.pattern_limit={}", std::max(1, L - 1)),
          "model.pattern_when=\"eval\""};
}
std::vector<std::string> LogN(int, int, int) { return {"model.log_n=1"}; }
// Liu et al. 2023 (arXiv:2310.05209): pairs from the critical one on never complete a period in
// training; they stop rotating (theta_k = 0 at every position, rotary_pairs' freeze).
std::vector<std::string> FreezeSlow(int, int, int boundary) {
  return {fmt::format("encoding_options.rope.ablate_from={}", boundary),
          "encoding_options.rope.ablation=\"freeze\""};
}
std::vector<std::string> Ntk(int tokens, int L, int) {
  return {"encoding_options.rope.scaling=\"ntk\"",
          fmt::format("encoding_options.rope.factor={}", std::max(1.0, double(tokens) / L))};
}
std::vector<std::string> Yarn(int tokens, int L, int) {
  return {"encoding_options.rope.scaling=\"yarn\"",
          fmt::format("encoding_options.rope.factor={}", std::max(1.0, double(tokens) / L)),
          fmt::format("encoding_options.rope.original_length={}", L)};
}

const std::vector<Candidate>& Candidates() {
  static const std::vector<Candidate> k = {
      {"distance_clamp", "unseen distances", Clamp},
      {"position_remap", "unseen absolute positions", Remap},
      {"window", "too many keys (and distances beyond L)", Window},
      {"lambda", "too many keys, starting tokens kept", Lambda},
      {"log_n", "too many keys, entropy held", LogN},
      {"freeze_slow", "slow rotary pairs' unseen angles", FreezeSlow},
      {"ntk", "rotary frequencies", Ntk},
      {"yarn", "rotary frequencies and temperature", Yarn},
  };
  return k;
}

}  // namespace

std::vector<std::string> DistanceClampOverrides(bool rotary, int tokens, int L) {
  if (rotary) return Clamp(tokens, L, 0);
  return {"model.pattern=\"lambda\"", fmt::format("model.pattern_window={}", L),
          fmt::format("model.pattern_global={}", tokens),
          fmt::format("model.pattern_limit={}", std::max(1, L - 1)), "model.pattern_when=\"eval\""};
}

const std::vector<std::string>& DiagnosisInterventions() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Candidate& c : Candidates()) n.push_back(c.name);
    return n;
  }();
  return names;
}

namespace {

// Why an intervention does not apply to this run ("" = it does).
// RoPE's own log-n: log_n = true, or auto under the rerope rules.
bool OwnLogN(const RecipeConfig& cfg, const std::string& encoding) {
  const auto opts = cfg.encoding_options.find(encoding);
  if (opts == cfg.encoding_options.end()) return false;
  auto value = [&](const char* key) {
    const auto it = opts->second.find(key);
    return it == opts->second.end() ? std::string() : it->second;
  };
  const std::string log_n = value("log_n"), scaling = value("scaling");
  if (log_n.find("true") != std::string::npos) return true;
  const bool rerope = scaling.find("rerope") != std::string::npos;
  return rerope && log_n.find("false") == std::string::npos;
}

std::string NotApplicable(const std::string& name, const RecipeConfig& cfg,
                          const std::string& encoding) {
  // Every intervention but log-n is sized by L, the trained distances of identity positions.
  if (name != "log_n" && cfg.positions != "identity")
    return "the run trains with position scheme '" + cfg.positions +
           "', whose distances reach beyond its L tokens";
  const std::string family = FindEncoding(encoding).family;
  // Masks, and the distance clamp of encodings other than RoPE (a pattern too).
  const bool masks = name == "window" || name == "lambda" ||
                     (name == "distance_clamp" && encoding != "rope" && family != "absolute" &&
                      family != "none");
  if (masks) {
    if (cfg.pattern != "full" && cfg.pattern_when != "train")
      return "the run evaluates under its own pattern '" + cfg.pattern + "', which this replaces";
    return "";
  }
  if (name == "log_n") {
    if (cfg.log_n == 1 || OwnLogN(cfg, encoding)) return "the run already uses log-n";
    return "";
  }
  if (name == "position_remap") {
    if (family != "absolute")
      return "'" + encoding + "' is not an absolute encoding (family: " + family + ")";
    if (cfg.positions != "identity")
      return "the run uses its own position scheme '" + cfg.positions + "'";
    return "";
  }
  if (encoding != "rope") {
    if (name == "distance_clamp" && family == "absolute")
      return "'" + encoding + "' is absolute: position_remap instead";
    if (name == "distance_clamp")
      return "'" + encoding + "' has no positional term (family: none), so no distance to clamp";
    return "a RoPE option; '" + encoding + "' has none";
  }
  const auto opts = cfg.encoding_options.find("rope");
  if (opts != cfg.encoding_options.end()) {
    const auto s = opts->second.find("scaling");
    if (s != opts->second.end() && s->second != "none" && s->second != "\"none\"")
      return "the run's RoPE already uses scaling " + s->second + ", which this replaces";
  }
  return "";
}

double Mean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return x.empty() ? kNaN : s / x.size();
}
double Cov(const std::vector<double>& a, const std::vector<double>& b) {
  const double ma = Mean(a), mb = Mean(b);
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - ma) * (b[i] - mb);
  return a.size() > 1 ? s / (a.size() - 1) : kNaN;
}
double T975(double dof) {
  return boost::math::quantile(boost::math::students_t(std::max(1.0, dof)), 0.975);
}

}  // namespace

GapShare ShareOfGap(const std::vector<double>& x, const std::vector<double>& y,
                    const std::vector<double>& in) {
  LEXP_CHECK(x.size() == y.size() && x.size() >= 2 && in.size() >= 2,
             "ShareOfGap: paired losses of equal size, at least 2 of each");
  GapShare g;
  const double m = x.size(), t = T975(std::min(x.size(), in.size()) - 1.0);
  const double var_in = Cov(in, in);
  g.gap = Mean(x) - Mean(in);
  const double se_gap = std::sqrt(Cov(x, x) / m + var_in / in.size());
  g.gap_lo = g.gap - t * se_gap;
  g.gap_hi = g.gap + t * se_gap;
  std::vector<double> diff(x.size());
  for (size_t s = 0; s < x.size(); ++s) diff[s] = x[s] - y[s];
  const double var_d = Cov(diff, diff), t_d = T975(m - 1);
  g.closed = Mean(diff);
  g.closed_lo = g.closed - t_d * std::sqrt(var_d / m);
  g.closed_hi = g.closed + t_d * std::sqrt(var_d / m);
  if (!(g.gap_lo > 0)) return g;  // no significant gap: nothing to close (share NaN)
  // Delta method for D / G: var(D)/m - 2 r cov(D, G) + r^2 var(G), cov(D, G) = cov(diff, x)/m.
  const double r = g.closed / g.gap;
  const double var_g = Cov(x, x) / m + var_in / in.size();
  const double var = var_d / m - 2 * r * Cov(diff, x) / m + r * r * var_g;
  const double half = t * std::sqrt(std::max(0.0, var)) / g.gap;
  g.share = r;
  g.share_lo = r - half;
  g.share_hi = r + half;
  return g;
}

Diagnosis DiagnoseRun(const std::string& run_file, const std::vector<int>& lengths,
                      const std::function<void(const std::string&)>& progress,
                      const std::vector<std::string>& only) {
  const std::vector<std::string>& names = DiagnosisInterventions();
  for (const auto& o : only)
    LEXP_INPUT_CHECK(std::find(names.begin(), names.end(), o) != names.end(),
                     fmt::format("intervention '{}'; allowed: {}", o, fmt::join(names, ", ")));
  const TrainedRun run = ReadTrainedRun(run_file);
  ModelReplay base(run);
  const RecipeConfig& cfg = base.config();
  Diagnosis d;
  d.encoding = run.encoding;
  d.task = cfg.task;
  d.train_length = cfg.train_max_length;
  d.train_tokens = base.SequenceLength(cfg.train_max_length);
  LEXP_INPUT_CHECK(cfg.eval_samples >= 2, "'" + run_file + "': diagnosis needs eval.samples >= 2 "
                                          "(intervals over its sequences)");
  for (int n : cfg.EvalLengths())
    if (n <= d.train_length) d.reference_length = std::max(d.reference_length, n);
  LEXP_INPUT_CHECK(d.reference_length > 0,
                   "'" + run_file + "' evaluates no length within its training lengths 1.." +
                       std::to_string(d.train_length) +
                       ": the gap beyond N is measured against one (add one to eval.lengths)");
  if (lengths.empty()) {
    for (int n : cfg.EvalLengths())
      if (n > d.train_length) d.lengths.push_back(n);
  } else {
    d.lengths = lengths;
  }
  for (int n : d.lengths)
    LEXP_INPUT_CHECK(n > d.train_length, "--lengths " + std::to_string(n) +
                                             ": diagnosis reads lengths beyond N = " +
                                             std::to_string(d.train_length));
  LEXP_INPUT_CHECK(!d.lengths.empty(), "'" + run_file + "' evaluates no length beyond N = " +
                                           std::to_string(d.train_length) + "; give --lengths");
  const std::vector<double> in = base.EvalLossBySequence(d.reference_length, &d.reference_loss);
  const AttentionSymptoms at_reference = LastQuerySymptoms(base, d.reference_length);
  d.reference_entropy = at_reference.entropy;
  d.reference_logit_max = at_reference.logit_max;
  std::vector<std::vector<double>> at_n;  // [length][sequence]
  for (int n : d.lengths) {
    double pooled = 0;
    at_n.push_back(base.EvalLossBySequence(n, &pooled));
    d.loss.push_back(pooled);
    const AttentionSymptoms sy = LastQuerySymptoms(base, n);
    d.entropy.push_back(sy.entropy);
    d.log_keys.push_back(std::log(std::max(1, sy.keys)));
    d.logit_max.push_back(sy.logit_max);
    const GapShare g = ShareOfGap(at_n.back(), at_n.back(), in);  // the gap alone
    d.gap.push_back(g.gap);
    d.gap_lo.push_back(g.gap_lo);
    d.gap_hi.push_back(g.gap_hi);
  }
  // The critical pair (rope): pairs below it complete a period within the trained distances.
  int boundary = -1, pairs = 0;
  if (const Rope<float>* r = FindRope(base.encoding())) {
    const double span = TrainedDistance(base) + 1;  // rotary_pairs' train_span (T_train)
    pairs = static_cast<int>(r->inverse_frequencies().size());
    boundary = 0;
    for (double w : r->inverse_frequencies()) boundary += 2 * M_PI / w <= span;
  }
  const bool own_log_n = OwnLogN(cfg, run.encoding);
  for (const Candidate& c : Candidates()) {
    if (!only.empty() && std::find(only.begin(), only.end(), c.name) == only.end()) continue;
    // The overrides at a length of `tokens`; the clamp keeps the run's own log-n (one factor).
    auto overrides = [&](int tokens) {
      std::vector<std::string> o =
          c.name == "distance_clamp"
              ? DistanceClampOverrides(run.encoding == "rope", tokens, d.train_tokens)
              : c.overrides(tokens, d.train_tokens, boundary);
      if (own_log_n)
        for (std::string& s : o)
          if (s.rfind("encoding_options.rope.log_n=", 0) == 0) s = "encoding_options.rope.log_n=\"true\"";
      return o;
    };
    std::string why = NotApplicable(c.name, cfg, run.encoding);
    if (why.empty() && c.name == "freeze_slow" && boundary >= pairs)
      why = "every rotary pair completes a period within the trained distances: none is slow";
    if (why.empty()) {  // the encoding's own refusal (a pattern it cannot follow, say)
      try {
        ModelReplay probe(run, overrides(base.SequenceLength(d.lengths[0])));
      } catch (const InputError& e) {
        why = e.what();
        const auto cut = why.find("': ");  // "recipe '<file>:/config/recipe': ..."
        if (why.rfind("recipe '", 0) == 0 && cut != std::string::npos) why = why.substr(cut + 3);
      }
    }
    if (!why.empty()) {
      d.not_applied.push_back(c.name + ": " + why);
      continue;
    }
    d.interventions.push_back(c.name);
    d.factors.push_back(c.factor);
    if (progress)
      progress(fmt::format("{} ({}) at {} length(s)", c.name, c.factor, d.lengths.size()));
    {  // its cost in distribution: the loss at the reference length under it
      ModelReplay at_ref(run, overrides(base.SequenceLength(d.reference_length)));
      double pooled = 0;
      at_ref.EvalLossBySequence(d.reference_length, &pooled);
      d.reference_loss_with.push_back(pooled);
    }
    for (size_t j = 0; j < d.lengths.size(); ++j) {
      const int tokens = base.SequenceLength(d.lengths[j]);
      ModelReplay with(run, overrides(tokens));
      double pooled = 0;
      const std::vector<double> y = with.EvalLossBySequence(d.lengths[j], &pooled);
      const std::vector<double>& x = at_n[j];
      const GapShare g = ShareOfGap(x, y, in);
      const AttentionSymptoms sy = LastQuerySymptoms(with, d.lengths[j]);
      d.entropy_with.push_back(sy.entropy);
      d.logit_max_with.push_back(sy.logit_max);
      d.loss_with.push_back(pooled);
      d.closed.push_back(g.closed);
      d.closed_lo.push_back(g.closed_lo);
      d.closed_hi.push_back(g.closed_hi);
      d.share.push_back(g.share);
      d.share_lo.push_back(g.share_lo);
      d.share_hi.push_back(g.share_hi);
    }
  }
  return d;
}

std::string WriteDiagnosis(const Diagnosis& d, const h5::Group& root) {
  root.Remove("diagnosis");
  const h5::Group g = root.CreateGroup("diagnosis");
  auto join = [](const std::vector<std::string>& v, const char* sep) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
  };
  g.SetAttr("interventions", join(d.interventions, ","));
  g.SetAttr("factors", join(d.factors, ","));
  g.SetAttr("not_applied", join(d.not_applied, "; "));
  g.SetAttr("train_length", static_cast<int64_t>(d.train_length));
  g.SetAttr("train_tokens", static_cast<int64_t>(d.train_tokens));
  g.SetAttr("reference_length", static_cast<int64_t>(d.reference_length));
  g.SetAttr("reference_loss", d.reference_loss);
  const uint64_t I = d.interventions.size(), L = d.lengths.size();
  g.WriteInts("length", std::vector<int64_t>(d.lengths.begin(), d.lengths.end()), {L}, "length",
              "task length");
  g.WriteDoubles("loss", d.loss, {L}, "length", "nats per graded token");
  g.WriteDoubles("gap", d.gap, {L}, "length", "nats: loss at n minus the reference's");
  g.WriteDoubles("gap_lo", d.gap_lo, {L}, "length", "nats");
  g.WriteDoubles("gap_hi", d.gap_hi, {L}, "length", "nats");
  g.SetAttr("reference_entropy", d.reference_entropy);
  g.SetAttr("reference_logit_max", d.reference_logit_max);
  g.WriteDoubles("entropy", d.entropy, {L}, "length",
                 "nats: the last query's attention entropy, mean over probe sequences, layers "
                 "and heads");
  g.WriteDoubles("log_keys", d.log_keys, {L}, "length", "nats: ln of the keys the last query sees");
  g.WriteDoubles("logit_max", d.logit_max, {L}, "length",
                 "the last query's largest attention logit, mean over probe sequences");
  if (I > 0) {
    g.WriteDoubles("entropy_with", d.entropy_with, {I, L}, "intervention,length", "nats");
    g.WriteDoubles("logit_max_with", d.logit_max_with, {I, L}, "intervention,length", "logit");
    g.WriteDoubles("loss_with", d.loss_with, {I, L}, "intervention,length",
                   "nats per graded token");
    g.WriteDoubles("reference_loss_with", d.reference_loss_with, {I}, "intervention",
                   "nats per graded token at the reference length under the intervention");
    g.WriteDoubles("closed", d.closed, {I, L}, "intervention,length",
                   "nats: mean over sequences of loss minus loss under the intervention");
    g.WriteDoubles("closed_lo", d.closed_lo, {I, L}, "intervention,length", "nats");
    g.WriteDoubles("closed_hi", d.closed_hi, {I, L}, "intervention,length", "nats");
    g.WriteDoubles("share", d.share, {I, L}, "intervention,length",
                   "closed / gap (NaN: no significant gap)");
    g.WriteDoubles("share_lo", d.share_lo, {I, L}, "intervention,length", "fraction");
    g.WriteDoubles("share_hi", d.share_hi, {I, L}, "intervention,length", "fraction");
  }
  std::string s = fmt::format(
      "diagnosis of {} on {} (N = {}, L = {} tokens): the loss gap at n against length {} (loss "
      "{:.3f} nats), and the share of it each intervention closes [95%] (1: closed, < 0: widened, "
      "> 1: below the reference, whose tokens may be harder; where the gap is under {} nats, the "
      "nats it closes instead; the row 'at {}' is each intervention's cost there)\n",
      d.encoding, d.task, d.train_length, d.train_tokens, d.reference_length, d.reference_loss,
      kSmallGap, d.reference_length);
  s += fmt::format("{:>6} {:>22}", "n", "gap (nats)");
  for (const auto& name : d.interventions) s += fmt::format(" {:>22}", name);
  s += fmt::format("\n{:>6} {:>22}", "at " + std::to_string(d.reference_length), "cost (nats)");
  for (size_t i = 0; i < I; ++i)
    s += fmt::format(" {:>22}", fmt::format("{:+.3f}", d.reference_loss_with[i] - d.reference_loss));
  for (size_t j = 0; j < L; ++j) {
    s += fmt::format("\n{:>6} {:>22}", d.lengths[j],
                     fmt::format("{:.3f} [{:.3f}, {:.3f}]", d.gap[j], d.gap_lo[j], d.gap_hi[j]));
    for (size_t i = 0; i < I; ++i) {
      const size_t k = i * L + j;
      std::string cell;
      if (std::isnan(d.share[k])) {
        cell = d.gap[j] < 0 ? "gap < 0" : "gap n.s.";
      } else if (d.gap[j] < kSmallGap) {
        cell = fmt::format("{:+.3f} nats", d.closed[k]);
      } else {
        cell = fmt::format("{:+.2f} [{:+.2f}, {:+.2f}]", d.share[k], d.share_lo[k], d.share_hi[k]);
      }
      s += fmt::format(" {:>22}", cell);
    }
  }
  // The symptoms beside: entropy / largest logit of the last query, the run's own and each
  // intervention's.
  s += fmt::format(
      "\nsymptoms: the last query's attention entropy (nats; ln of its keys) / largest logit, "
      "mean over the probe sequences, layers and heads; at {}: {:.2f} / {:.2f}",
      d.reference_length, d.reference_entropy, d.reference_logit_max);
  s += fmt::format("\n{:>6} {:>22}", "n", "model (ln keys)");
  for (const auto& name : d.interventions) s += fmt::format(" {:>22}", name);
  for (size_t j = 0; j < L; ++j) {
    s += fmt::format("\n{:>6} {:>22}", d.lengths[j],
                     fmt::format("{:.2f} ({:.2f}) / {:.1f}", d.entropy[j], d.log_keys[j],
                                 d.logit_max[j]));
    for (size_t i = 0; i < I; ++i)
      s += fmt::format(" {:>22}", fmt::format("{:.2f} / {:.1f}", d.entropy_with[i * L + j],
                                              d.logit_max_with[i * L + j]));
  }
  for (size_t i = 0; i < I; ++i)
    s += fmt::format("\n{}: removes {}", d.interventions[i], d.factors[i]);
  for (const auto& n : d.not_applied) s += "\nnot applied: " + n;
  return s + "\n";
}

}  // namespace lexp
