#include "experiments/training/theory_command.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <numeric>

#include "analysis/expectation_monte_carlo.h"
#include "analysis/rope_theory.h"
#include "experiments/core/provenance.h"
#include "experiments/training/eval_command.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/parallel.h"
#include "pe/rope.h"
#include "pe/rope_scaling.h"
#include "pe/xpos.h"

namespace lexp {

std::string WriteTheory(const TheoryOptions& o, std::string* report) {
  using namespace theory;
  LEXP_INPUT_CHECK(o.head_dim >= 4 && o.head_dim % 2 == 0, "theory: --head-dim must be even, >= 4");
  LEXP_INPUT_CHECK(o.max_distance >= 1, "theory: --max-distance must be positive");
  // Each curve holds a value per distance: 1e8 of them is already 0.8 GB per curve.
  LEXP_INPUT_CHECK(o.max_distance <= 100'000'000, "theory: --max-distance " +
                                                      std::to_string(o.max_distance) +
                                                      " would not fit in memory; allowed: up "
                                                      "to 100000000");
  LEXP_INPUT_CHECK(o.mc_distribution == "gaussian" || o.mc_distribution == "uniform",
                   "theory: --mc-distribution '" + o.mc_distribution +
                       "' is not known; use gaussian or uniform");
  LEXP_INPUT_CHECK(o.mc_samples >= 2, "theory: --mc-samples must be >= 2");
  LEXP_INPUT_CHECK(o.mc_max_distance >= 1,
                   "theory: --mc-max-distance must be >= 1 (the expectation over distances "
                   "0..N is drawn on a log axis), got " +
                       std::to_string(o.mc_max_distance));
  LEXP_INPUT_CHECK(o.mc_sd >= 0, "theory: --mc-sd must be >= 0");
  const int d = o.head_dim;
  h5::Writer w(o.out_file);
  WriteProvenance(w.root(), ThreadLimit::Active());
  w.root().SetAttr("head_dim", d);
  w.root().SetAttr("base", o.base);
  w.root().SetAttr("train_length", o.train_length);
  std::string r;

  // Critical dimension and pair periods.
  const CriticalDimension c = CriticalDim(d, o.train_length, o.base);
  h5::Group crit = w.root().CreateGroup("critical");
  crit.SetAttr("ratio", c.ratio);
  crit.SetAttr("d_extra", c.d_extra);
  const uint64_t P = d / 2;
  std::vector<double> period(P);
  for (uint64_t k = 0; k < P; ++k) period[k] = PairPeriod(d, o.base, static_cast<int>(k));
  crit.WriteDoubles("pair_period", period, {P}, "pair", "tokens per rotation 2 pi b^(2k/d)");
  const std::vector<int> ds = {32, 64, 128, 256};
  const std::vector<double> Ts = {512, 1024, 2048, 4096, 8192, 16384, 32768};
  std::vector<int64_t> table;
  for (int dd : ds)
    for (double T : Ts) table.push_back(CriticalDim(dd, T, o.base).d_extra);
  crit.WriteInts("d_extra_table", table, {ds.size(), Ts.size()}, "head_dim,train_length",
                 "critical dimension at this base (head dims 32, 64, 128, 256; training lengths "
                 "512..32768 tokens, doubling)");
  r += fmt::format(
      "critical dimension (d {}, T_train {:g}, base {:g}): (d/2) log_b(T/2pi) = {:.4f}, "
      "d_extra = {}; pair {} period {:.2f}, pair {} period {:.2f} tokens\n",
      d, o.train_length, o.base, c.ratio, c.d_extra, c.d_extra / 2 - 1,
      PairPeriod(d, o.base, c.d_extra / 2 - 1), c.d_extra / 2,
      PairPeriod(d, o.base, c.d_extra / 2));

  // Base-scaling law, with d_extra of the pre-training base 10^4 (the law's setting).
  const int d_extra_1e4 = CriticalDim(d, o.train_length, 1e4).d_extra;
  h5::Group law = w.root().CreateGroup("base_law");
  std::vector<double> bases, t_extra;
  for (double b = 1e4; b <= 1e9 * 1.0001; b *= std::sqrt(10.0)) {
    bases.push_back(b);
    t_extra.push_back(ExtrapolationLimit(b, d_extra_1e4, d));
  }
  law.SetAttr("d_extra", d_extra_1e4);
  law.WriteDoubles("base", bases, {bases.size()}, "base", "RoPE base");
  law.WriteDoubles("t_extra", t_extra, {bases.size()}, "base",
                   "tokens: 2 pi b^(d_extra/d), d_extra of base 10^4 at this training length");
  std::vector<double> targets, base_for;
  for (double T = 2 * o.train_length; T <= 1024 * o.train_length; T *= 2) {
    targets.push_back(T);
    base_for.push_back(BaseForLength(T, o.train_length));
  }
  law.WriteDoubles("target_length", targets, {targets.size()}, "target", "tokens");
  law.WriteDoubles("base_for_target", base_for, {targets.size()}, "target",
                   "smallest base reaching the target: 10^4^(log_{T/2pi}(target/2pi))");
  const SmallBaseCriticals s = SmallBaseCriticalValues(o.train_length);
  law.SetAttr("small_base_quarter_period", s.quarter);
  law.SetAttr("small_base_half_period", s.half);
  law.SetAttr("small_base_full_period", s.full);
  law.SetAttr("full_period_base_exact", FullPeriodBase(o.train_length, d));
  r += fmt::format(
      "base law (d_extra {}): T_extra(1e4) = {:.2f}, T_extra(5e5) = {:.2f}, "
      "T_extra(1e6) = {:.2f} tokens; small-base critical values {:.2f} / {:.2f} / "
      "{:.2f}, exact full-period base {:.2f}\n",
      d_extra_1e4, ExtrapolationLimit(1e4, d_extra_1e4, d), ExtrapolationLimit(5e5, d_extra_1e4, d),
      ExtrapolationLimit(1e6, d_extra_1e4, d), s.quarter, s.half, s.full,
      FullPeriodBase(o.train_length, d));

  // Decay bound on a log grid of distances.
  std::vector<double> r_grid = {0};
  for (double x = 1; x <= static_cast<double>(o.max_distance); x *= 1.05)
    if (std::floor(x) != r_grid.back()) r_grid.push_back(std::floor(x));
  h5::Group decay = w.root().CreateGroup("decay");
  decay.WriteDoubles("distance", r_grid, {r_grid.size()}, "distance", "tokens");
  const auto D = DecayBound(d, o.base, r_grid);
  decay.WriteDoubles("bound", D, {D.size()}, "distance",
                     "RoFormer relative upper bound (2/d) sum_j |S_j| (dimensionless)");

  // Expectation proxies and resolution.
  const auto t0 = std::chrono::steady_clock::now();
  const auto rope = ExpectationProxy(d, o.base, o.max_distance);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto xpos = ExpectationProxy(d, o.base, o.max_distance, o.xpos_scale_base, o.xpos_gamma);
  h5::Group ex = w.root().CreateGroup("expectation");
  const uint64_t M = rope.size();
  ex.SetAttr("proxy",
             "q = k = all ones; s(n) = 2 sum_k [zeta_k^(n/B)] cos(n theta_k) (logit units "
             "before 1/sqrt(d))");
  ex.WriteDoubles("rope", rope, {M}, "distance", "logit (q.k) at distance n = 0..max");
  ex.WriteDoubles("xpos", xpos, {M}, "distance",
                  "logit at distance n, xPos gamma/scale_base attrs");
  ex.SetAttr("xpos_gamma", o.xpos_gamma);
  ex.SetAttr("xpos_scale_base", o.xpos_scale_base);
  std::vector<double> scaled_theta;  // the rule's frequencies (empty without --scale)
  double scaled_temperature = 1;     // its factor on the logits (YaRN mscale^2)
  if (!o.scale.empty()) {
    const ScaleSpec spec = ParseScaleSpec(o.scale);
    RopeScalingConfig cfg;
    cfg.rule = spec.rule;
    cfg.original_length = o.train_length;
    for (const auto& [k, v] : spec.options) {
      if (k == "factor")
        cfg.factor = std::stod(v);
      else if (k == "original_length")
        cfg.original_length = std::stod(v);
      else
        FailInput("theory --scale: only factor and original_length are read here, got '" + k + "'");
    }
    const ScaledFrequencies f = ScaleRope(d, o.base, cfg, static_cast<double>(o.max_distance));
    auto scaled = ExpectationProxyFor(f.inv_freq, {}, 0, o.max_distance);
    for (double& x : scaled) x *= f.mscale * f.mscale;
    scaled_theta = f.inv_freq;
    scaled_temperature = f.mscale * f.mscale;
    ex.WriteDoubles("rope_scaled", scaled, {M}, "distance", "logit with the rule of attr `scale`");
    ex.SetAttr("scale", o.scale);
  }
  std::vector<double> Ns, res_rope, res_xpos, res_rope_b, res_xpos_b;
  for (double N = 64; N <= static_cast<double>(o.max_distance); N *= 2) {
    auto a = std::vector<double>(rope.begin(), rope.begin() + static_cast<long>(N) + 1);
    auto b = std::vector<double>(xpos.begin(), xpos.begin() + static_cast<long>(N) + 1);
    for (double& x : a) x /= std::sqrt(static_cast<double>(d));
    for (double& x : b) x /= std::sqrt(static_cast<double>(d));
    Ns.push_back(N);
    res_rope.push_back(AttentionResolution(a));
    res_xpos.push_back(AttentionResolution(b));
    res_rope_b.push_back(AttentionResolution(a, ResolutionConvention::kDropLast));
    res_xpos_b.push_back(AttentionResolution(b, ResolutionConvention::kDropLast));
  }
  ex.WriteDoubles("resolution_length", Ns, {Ns.size()}, "length", "tokens N (distances 0..N)");
  ex.WriteDoubles("resolution_rope", res_rope, {Ns.size()}, "length",
                  "attention resolution of s/sqrt(d), convention A (sequence ends)");
  ex.WriteDoubles("resolution_xpos", res_xpos, {Ns.size()}, "length", "as resolution_rope, xPos");
  ex.WriteDoubles("resolution_rope_b", res_rope_b, {Ns.size()}, "length",
                  "as resolution_rope, convention B (the i = N term dropped)");
  ex.WriteDoubles("resolution_xpos_b", res_xpos_b, {Ns.size()}, "length",
                  "as resolution_xpos, convention B");
  r += fmt::format(
      "expectation proxy: {} distances in {:.3f} s; resolution at N = 1024: RoPE "
      "{:.6f}, xPos {:.6f}\n",
      M, secs, Ns.size() > 4 ? res_rope[4] : res_rope.back(),
      Ns.size() > 4 ? res_xpos[4] : res_xpos.back());
  // Monte-Carlo expectation for RoPE and xPos with standard errors, next to the closed form.
  {
    ContentDistribution content;
    content.family = o.mc_distribution;
    content.mean = o.mc_mean;
    content.sd = o.mc_sd;
    content.same_content = !o.mc_independent;
    std::vector<long> dist(o.mc_max_distance + 1);
    std::iota(dist.begin(), dist.end(), 0L);
    h5::Group mc = ex.CreateGroup("monte_carlo");
    mc.SetAttr("distribution", content.family);
    mc.SetAttr("mean", content.mean);
    mc.SetAttr("sd", content.sd);
    mc.SetAttr("content", content.same_content ? "q = k = x" : "q, k independent");
    mc.SetAttr("samples", static_cast<int64_t>(o.mc_samples));
    // The base seed: curve c of the list below (rope 0, xpos 1, rope_scaled 2) draws with seed + c.
    mc.SetAttr("seed", static_cast<int64_t>(o.mc_seed));
    const uint64_t N = dist.size();
    std::vector<double> dd(dist.begin(), dist.end());
    mc.WriteDoubles("distance", dd, {N}, "distance", "tokens");
    const auto theta = RopeInverseFrequencies(d, o.base);
    const auto zeta = XposZeta(d, o.xpos_gamma);
    // RoPE, xPos, and with --scale the rule's frequencies (its temperature multiplies the mean,
    // the error and the closed form).
    struct Curve {
      std::string tag;
      std::vector<double> theta, zeta;
      double scale_base, temperature;
    };
    std::vector<Curve> curves = {{"rope", theta, {}, 0, 1.0},
                                 {"xpos", theta, zeta, o.xpos_scale_base, 1.0}};
    if (!scaled_theta.empty())
      curves.push_back({"rope_scaled", scaled_theta, {}, 0, scaled_temperature});
    for (size_t which = 0; which < curves.size(); ++which) {
      const Curve& cv = curves[which];
      const auto t1 = std::chrono::steady_clock::now();
      MonteCarloCurve curve = ExpectationMonteCarlo(cv.theta, cv.zeta, cv.scale_base, dist, content,
                                                    o.mc_samples, o.mc_seed + which);
      const double s1 =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      auto closed = ExpectationClosedForm(cv.theta, cv.zeta, cv.scale_base, dist, content);
      for (uint64_t n = 0; n < N; ++n) {
        curve.mean[n] *= cv.temperature;
        curve.standard_error[n] *= cv.temperature;
        closed[n] *= cv.temperature;
      }
      mc.WriteDoubles(cv.tag + "_mean", curve.mean, {N}, "distance",
                      "logit q^T R(n) k (before 1/sqrt(d)), Monte-Carlo mean");
      mc.WriteDoubles(cv.tag + "_standard_error", curve.standard_error, {N}, "distance",
                      "logit: standard error of the mean");
      mc.WriteDoubles(cv.tag + "_closed_form", closed, {N}, "distance",
                      "logit: (mu^2 + sigma^2) x proxy (q = k) or mu^2 x proxy (independent)");
      // A zero standard error (deterministic content, --mc-sd 0; the sum-of-squares variance leaves
      // ~1e-8 relative from rounding, so below 1e-6 relative counts as zero) has no
      // standard score: the mean must then equal the closed form up to rounding, and a
      // difference counts as beyond.
      double zmax = 0;
      long beyond = 0, exact = 0, exact_differ = 0;
      for (uint64_t n = 0; n < N; ++n) {
        const double diff = std::abs(curve.mean[n] - closed[n]);
        if (!(curve.standard_error[n] > 1e-6 * std::max(1.0, std::abs(closed[n])))) {
          ++exact;
          const bool differ = !(diff <= 1e-9 * std::max(1.0, std::abs(closed[n])));
          exact_differ += differ;
          beyond += differ;
          continue;
        }
        const double zs = diff / curve.standard_error[n];
        zmax = std::max(zmax, zs);
        beyond += zs > 2;
      }
      r += fmt::format(
          "Monte-Carlo expectation ({}, {} samples, {} distances, {:.2f} s): largest |mean - "
          "closed form| = {:.2f} standard errors, {:.1f}% of distances beyond 2 (distances share "
          "the samples, so their errors are correlated){}\n",
          cv.tag, o.mc_samples, N, s1, zmax, 100.0 * beyond / N,
          exact ? fmt::format("; {} distances with zero standard error, {} of them differing "
                              "from the closed form beyond rounding",
                              exact, exact_differ)
                : std::string());
    }
  }
  w.Commit();
  if (report) *report = r;
  return o.out_file;
}

}  // namespace lexp
