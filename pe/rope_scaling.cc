#include "pe/rope_scaling.h"

#include <algorithm>
#include <cmath>

#include "nn/check.h"

namespace lexp {
namespace {

constexpr double kTwoPi = 6.283185307179586;

std::vector<double> Theta(int D, double base) {
  std::vector<double> t(D / 2);
  for (int k = 0; k < D / 2; ++k) t[k] = std::pow(base, -2.0 * k / D);
  return t;
}

double YarnMscale(double s, double attn_factor) {
  return s > 1 ? (0.1 * std::log(s) + 1.0) * attn_factor : 1.0;
}

// NTK-by-parts: per pair, the weight w_k on the original theta (1 = extrapolate, 0 = interpolate).
void ByParts(int D, double base, const RopeScalingConfig& c, double s, ScaledFrequencies& out) {
  const double L = c.original_length;
  const std::vector<double> theta = Theta(D, base);
  const int P = D / 2;
  std::vector<double> w(P);
  if (c.ramp == "paper") {
    // gamma(r) on r = L / lambda_k with alpha = beta_slow, beta = beta_fast (paper's names).
    for (int k = 0; k < P; ++k) {
      const double r = L / (kTwoPi / theta[k]);
      w[k] = r < c.beta_slow   ? 0.0
             : r > c.beta_fast ? 1.0
                               : (r - c.beta_slow) / (c.beta_fast - c.beta_slow);
    }
    out.low = YarnCorrectionDim(D, base, L, c.beta_fast);
    out.high = YarnCorrectionDim(D, base, L, c.beta_slow);
  } else {
    double low = YarnCorrectionDim(D, base, L, c.beta_fast);
    double high = YarnCorrectionDim(D, base, L, c.beta_slow);
    if (c.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(D - 1));
    out.low = low;
    out.high = high;
    if (low == high) high += 0.001;
    for (int k = 0; k < P; ++k) w[k] = 1.0 - std::clamp((k - low) / (high - low), 0.0, 1.0);
  }
  out.inv_freq.resize(P);
  for (int k = 0; k < P; ++k) {
    if (c.blend == "harmonic")
      out.inv_freq[k] = theta[k] / ((1 - w[k]) * s + w[k]);
    else
      out.inv_freq[k] = theta[k] / s * (1 - w[k]) + theta[k] * w[k];
  }
}

}  // namespace

double YarnCorrectionDim(int D, double base, double L, double n_rot) {
  return D * std::log(L / (kTwoPi * n_rot)) / (2 * std::log(base));
}

double LongropeAttentionFactor(double s, double L) {
  return s <= 1 ? 1.0 : std::sqrt(1 + std::log(s) / std::log(L));
}

double LogNFactor(double pos, double L) { return std::max(1.0, std::log(pos + 1) / std::log(L)); }

const std::vector<std::string>& RopeScalingRules() {
  static const std::vector<std::string> k = {
      "none",         "pi",     "ntk",          "dynamic_ntk",
      "ntk_by_parts", "yarn",   "dynamic_yarn", "truncated_basis",
      "llama3",       "rerope", "leaky_rerope", "resonance",    "longrope"};
  return k;
}

const std::vector<RopeScalingInfo>& RopeScalingInfos() {
  static const std::vector<RopeScalingInfo> k = {
      {"none", "plain RoPE", "-", "Su et al. 2021, arXiv:2104.09864"},
      {"pi", "every frequency / s (positions interpolated)", "factor, original_length",
       "Chen et al. 2023, arXiv:2306.15595"},
      {"ntk", "base * s^(D/(D-2))", "factor", "bloc97 2023; YaRN eq. 14-16"},
      {"dynamic_ntk", "ntk with s from the current length", "factor, original_length",
       "emozilla 2023; YaRN sec. 3.3"},
      {"ntk_by_parts", "keep fast pairs, interpolate slow ones, ramp between",
       "factor, original_length, beta_fast, beta_slow, truncate, ramp, blend",
       "bloc97 2023; YaRN sec. 3.2"},
      {"yarn", "ntk_by_parts + logits times (0.1 ln s + 1)^2", "as ntk_by_parts + attn_factor",
       "Peng et al. 2023, arXiv:2309.00071"},
      {"dynamic_yarn", "yarn with s = max(1, length / L)", "as yarn", "Peng et al. 2023, sec. 3.3"},
      {"truncated_basis", "keep, set to rho, or zero each frequency", "truncate_length",
       "Pal et al. 2023 (Giraffe), arXiv:2308.10882"},
      {"llama3", "keep / smooth / divide by wavelength class",
       "factor, original_length, low_freq_factor, high_freq_factor", "Meta 2024 (Llama 3.1)"},
      {"rerope", "distances >= w seen as w (second rotary pass; causal only)", "window",
       "Su 2023, github.com/bojone/rerope"},
      {"leaky_rerope", "distances >= w seen as w + (d - w) / k", "window, leaky_factor",
       "Su 2023, github.com/bojone/rerope"},
      {"longrope",
       "theta_k / lambda_k, factors given or found by lexp eval (long_factors = \"search\"); "
       "first n-hat positions unscaled",
       "long_factors, start_tokens, factor, original_length",
       "Ding et al. 2024 (LongRoPE), arXiv:2402.13753"},
      {"resonance", "every wavelength 2 pi / theta_k rounded to an integer (train and test)", "-",
       "Wang et al. 2024 (Resonance RoPE), arXiv:2403.00071"},
  };
  return k;
}

double ReropeDistance(double d, double w, double k) {
  if (d < w) return d;
  return k > 0 ? w + (d - w) / k : w;
}

bool IsReropeRule(const std::string& rule) { return rule == "rerope" || rule == "leaky_rerope"; }

bool IsDynamicRule(const std::string& rule) {
  return rule == "dynamic_ntk" || rule == "dynamic_yarn";
}

ScaledFrequencies ScaleRope(int D, double base, const RopeScalingConfig& c, double length) {
  LEXP_CHECK(D >= 2 && D % 2 == 0, "rope scaling: the rotary dimension must be even");
  ScaledFrequencies out;
  out.effective_base = base;
  const std::string& r = c.rule;
  if (r == "none" || IsReropeRule(r)) {  // rerope keeps the frequencies and changes distances
    out.inv_freq = Theta(D, base);
    return out;
  }
  if (r == "resonance") {  // the authors' ResonanceRotaryEmbedding rounds every wavelength
    out.inv_freq = Theta(D, base);
    for (double& f : out.inv_freq) f = kTwoPi / std::round(kTwoPi / f);
    return out;
  }
  LEXP_INPUT_CHECK(c.original_length > 0,
                   "rope scaling '" + r + "' needs the training length (original_length)");
  LEXP_INPUT_CHECK(c.factor >= 1 || IsDynamicRule(r) || r == "truncated_basis",
                   "rope scaling '" + r + "': factor must be >= 1");
  const double L = c.original_length;
  if (r == "pi") {
    out.inv_freq = Theta(D, base);
    for (double& f : out.inv_freq) f /= c.factor;
  } else if (r == "ntk") {
    out.effective_base = base * std::pow(c.factor, D / (D - 2.0));
    out.inv_freq = Theta(D, out.effective_base);
  } else if (r == "dynamic_ntk") {
    const double l = std::max(length, L);
    out.effective_base = base * std::pow(c.factor * l / L - (c.factor - 1), D / (D - 2.0));
    out.inv_freq = Theta(D, out.effective_base);
  } else if (r == "ntk_by_parts") {
    ByParts(D, base, c, c.factor, out);
  } else if (r == "yarn" || r == "dynamic_yarn") {
    const double s = r == "yarn" ? c.factor : std::max(1.0, length / L);
    // Within the training length dynamic YaRN is plain RoPE, exactly (the blend would round).
    if (s == 1 && r == "dynamic_yarn")
      out.inv_freq = Theta(D, base);
    else
      ByParts(D, base, c, s, out);
    out.mscale = YarnMscale(s, c.attn_factor);
  } else if (r == "longrope") {
    LEXP_INPUT_CHECK(static_cast<int>(c.long_factors.size()) == D / 2,
                     "rope scaling 'longrope' needs one factor per rotary pair (long_factors: " +
                         std::to_string(D / 2) + " numbers, comma-separated), got " +
                         std::to_string(c.long_factors.size()));
    out.inv_freq = Theta(D, base);
    for (int k = 0; k < D / 2; ++k) {
      LEXP_INPUT_CHECK(c.long_factors[k] >= 1,
                       "rope scaling 'longrope': every factor must be >= 1 (a pair is "
                       "interpolated, never sped up)");
      out.inv_freq[k] /= c.long_factors[k];
    }
    out.mscale = LongropeAttentionFactor(c.factor, L);
  } else if (r == "truncated_basis") {
    const double T = c.truncate_length > 0 ? c.truncate_length : L;
    const double cut = kTwoPi / T, a = cut / 8, rho = kTwoPi / (16 * T);
    out.inv_freq = Theta(D, base);
    for (double& f : out.inv_freq) f = f >= cut ? f : (f >= a ? rho : 0.0);
  } else if (r == "llama3") {
    const double lam_low = L / c.low_freq_factor, lam_high = L / c.high_freq_factor;
    out.inv_freq = Theta(D, base);
    for (double& f : out.inv_freq) {
      const double lam = kTwoPi / f;
      if (lam < lam_high) continue;
      if (lam > lam_low) {
        f /= c.factor;
      } else {
        const double sigma =
            (L / lam - c.low_freq_factor) / (c.high_freq_factor - c.low_freq_factor);
        f = (1 - sigma) * f / c.factor + sigma * f;
      }
    }
  } else {
    std::string known;
    for (const auto& x : RopeScalingRules()) known += (known.empty() ? "" : ", ") + x;
    FailInput("unknown rope scaling '" + r + "'; rules: " + known);
  }
  return out;
}

}  // namespace lexp
