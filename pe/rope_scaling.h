// RoPE frequency-scaling rules: given the head dimension D, the base b and the training length L,
// each rule returns the per-pair inverse frequencies theta'_k (and, for YaRN, the attention
// temperature). Each rule's formula is written out below with its paper; the tests check the
// papers' and reference implementations' published vectors.
//   pi            Chen et al. 2023, arXiv:2306.15595: theta_k / s
//   ntk           bloc97 2023 (YaRN eq. 14-16): base b s^(D/(D-2))
//   dynamic_ntk   emozilla 2023 (HF rule): base b (s l/L - (s-1))^(D/(D-2)), l = max(length, L)
//   ntk_by_parts  YaRN sec. 3.2 without temperature; the reference code's ramp in pair index
//                 (ramp = "paper" ramps linearly in r = L/lambda_k instead, pitfall 4)
//   yarn          Peng et al. 2023, arXiv:2309.00071: ntk_by_parts + logits times (0.1 ln s + 1)^2
//   dynamic_yarn  yarn with s = max(1, l/L)
//   truncated_basis  Pal et al. 2023 (Giraffe), arXiv:2308.10882: keep, set to rho, or zero
//   llama3        Meta 2024 (HF `_compute_llama3_parameters`): keep / smooth / divide by wavelength
//   rerope        Su 2023 (bojone/rerope): distances d >= w are seen as w; frequencies
//                 unchanged; the rope encoding computes the far logits with a second rotary pass
//   leaky_rerope  the same with d >= w seen as w + (d - w) / k
//   longrope      Ding et al. 2024 (LongRoPE), arXiv:2402.13753: theta_k / lambda_k with the
//                 per-pair factors given (HF `_compute_longrope_parameters`, its long factors),
//                 logits times 1 + ln s / ln L (the square of HF's sqrt attention factor) for s > 1,
//                 and the first n-hat positions rotated by the unscaled theta_k (the paper)
//   resonance     Wang et al. 2024 (Resonance RoPE), arXiv:2403.00071: theta_k = 2 pi /
//                 round(2 pi / theta_k), every pair's wavelength an integer number of tokens, so
//                 its angles repeat exactly; a rule of training and evaluation alike (the paper
//                 rounds the pre-critical pairs, whose wavelengths fit in L; the authors' code
//                 rounds all, which moves the slow ones by less than half a token)
//   log_n         (rope option) logits of the query at position p times max(1, ln(p+1)/ln L), as
//                 ReRoPE's code does (Su 2023)
// Parameters are named by rotations as in the reference code (beta_fast = 32 gives the low index,
// beta_slow = 1 the high one, pitfall 5); L is the training length, kept apart from the current
// length (pitfall 6).
#pragma once

#include <string>
#include <vector>

namespace lexp {

struct RopeScalingConfig {
  std::string rule = "none";
  double factor = 1;             // s = L'/L (dynamic rules compute it from the current length)
  double original_length = 0;    // L, tokens
  double beta_fast = 32;         // rotations; pairs faster than this are kept
  double beta_slow = 1;          // rotations; pairs slower than this are interpolated
  bool truncate = true;          // floor/ceil of the YaRN correction range (HF `truncate`)
  std::string ramp = "code";     // code | paper
  std::string blend = "linear";  // linear (HF) | harmonic (PoSE "revised" YaRN)
  double attn_factor = 1;        // multiplies YaRN's mscale
  double low_freq_factor = 1;    // llama3
  double high_freq_factor = 4;   // llama3
  double truncate_length = 0;    // truncated_basis T (0 = L)
  double window = 0;             // rerope w (0 = L / 8, the reference's 512 / 4096)
  double leaky_factor = 16;      // leaky_rerope k
  std::vector<double> long_factors;  // longrope lambda_k, one per pair (each >= 1)
  int start_tokens = 0;              // longrope n-hat: positions below it keep theta_k
};

struct ScaledFrequencies {
  std::vector<double> inv_freq;  // [D/2]
  double mscale = 1;             // multiplies cos and sin, so logits get mscale^2
  double effective_base = 0;     // for the base-changing rules (ntk, dynamic_ntk), else the base
  double low = 0, high = 0;      // YaRN / by-parts correction range (pair indices)
};

// The (fractional) pair index whose wavelength fits n_rot times into L.
double YarnCorrectionDim(int D, double base, double L, double n_rot);

// LongRoPE's attention factor sqrt(1 + ln s / ln L) (1 for s <= 1), HF's `attention_factor`.
double LongropeAttentionFactor(double s, double L);

// log-n query factor max(1, ln(pos + 1) / ln L).
double LogNFactor(double pos, double L);

// Distance at which rerope (k <= 0) or leaky_rerope sees a causal distance d >= 0
// (Su 2023's reference code).
double ReropeDistance(double d, double w, double k);
bool IsReropeRule(const std::string& rule);

// What `lexp list scalings` prints for each rule.
struct RopeScalingInfo {
  std::string name, summary, options, paper;
};
const std::vector<RopeScalingInfo>& RopeScalingInfos();

// The rules that change with the current sequence length.
bool IsDynamicRule(const std::string& rule);
const std::vector<std::string>& RopeScalingRules();

// `length` is the current sequence length (used by dynamic rules only).
ScaledFrequencies ScaleRope(int D, double base, const RopeScalingConfig& c, double length);

}  // namespace lexp
