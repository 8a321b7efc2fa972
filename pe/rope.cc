#include "pe/rope.h"

#include <algorithm>
#include <cmath>

namespace lexp {

std::vector<double> RopeInverseFrequencies(int D, double base) {
  std::vector<double> f(D / 2);
  for (int k = 0; k < D / 2; ++k) f[k] = std::pow(base, -2.0 * k / D);
  return f;
}

std::vector<OptionSpec> RopeOptionSpecs(const std::string& fraction_default) {
  return {
      {"base", "10000", "rotary base: theta_k = base^(-2k/D_rot)"},
      {"fraction", fraction_default,
       "fraction of the head dimension that rotates (D_rot = 2 floor(fraction D / 2)); the rest "
       "passes unrotated"},
      {"pairing", "half", "pair layout: half (k, k+D/2) | interleaved (2k, 2k+1)"},
      {"scaling", "none",
       "frequency rule: none | pi | ntk | dynamic_ntk | ntk_by_parts | yarn | dynamic_yarn | "
       "truncated_basis | llama3"},
      {"factor", "1", "scale s = target length / training length (dynamic rules: alpha)"},
      {"original_length", "0",
       "training length L in tokens (0 = the recipe's longest training sequence)"},
      {"beta_fast", "32", "yarn/by-parts: pairs with more rotations than this in L are kept"},
      {"beta_slow", "1", "yarn/by-parts: pairs with fewer rotations than this are interpolated"},
      {"truncate", "true", "yarn/by-parts: floor/ceil the correction range"},
      {"ramp", "code",
       "yarn/by-parts ramp: code (linear in pair index) | paper (linear in L/lambda)"},
      {"blend", "linear", "yarn/by-parts blend: linear (HF) | harmonic (PoSE 'revised')"},
      {"attn_factor", "1", "yarn: multiplies the temperature factor 0.1 ln s + 1"},
      {"low_freq_factor", "1", "llama3: wavelengths above L / low_freq_factor are divided"},
      {"high_freq_factor", "4", "llama3: wavelengths below L / high_freq_factor are kept"},
      {"truncate_length", "0", "truncated_basis: context T whose wavelength is the cut (0 = L)"},
      {"log_n", "false", "multiply the logits of the query at p by max(1, ln(p+1)/ln L)"}};
}

template <typename S>
Rope<S>::Rope(const EncodingShape& shape, const EncodingOptions& opt, std::string name)
    : name_(std::move(name)),
      D_(shape.d_model / shape.n_heads),
      rot_(2 * static_cast<int>(std::floor(opt.Double("fraction") * D_ / 2 + 1e-9))),
      base_(opt.Double("base")),
      interleaved_(opt.String("pairing", {"half", "interleaved"}) == "interleaved") {
  LEXP_INPUT_CHECK(base_ > 1, "encoding 'rope': base must be > 1");
  LEXP_INPUT_CHECK(opt.Double("fraction") > 0 && opt.Double("fraction") <= 1,
                   "encoding '" + name_ + "': fraction must be in (0, 1]");
  LEXP_INPUT_CHECK(rot_ >= 2, "encoding '" + name_ + "': fraction leaves no pair to rotate");
  scaling_.rule = opt.String("scaling", RopeScalingRules());
  scaling_.factor = opt.Double("factor");
  scaling_.original_length = opt.Double("original_length");
  if (scaling_.original_length == 0) scaling_.original_length = shape.train_length;
  scaling_.beta_fast = opt.Double("beta_fast");
  scaling_.beta_slow = opt.Double("beta_slow");
  scaling_.truncate = opt.Bool("truncate");
  scaling_.ramp = opt.String("ramp", {"code", "paper"});
  scaling_.blend = opt.String("blend", {"linear", "harmonic"});
  scaling_.attn_factor = opt.Double("attn_factor");
  scaling_.low_freq_factor = opt.Double("low_freq_factor");
  scaling_.high_freq_factor = opt.Double("high_freq_factor");
  scaling_.truncate_length = opt.Double("truncate_length");
  LEXP_INPUT_CHECK(scaling_.factor > 0, "encoding 'rope': factor must be positive");
  log_n_ = opt.Bool("log_n");
  LEXP_INPUT_CHECK(!log_n_ || scaling_.original_length > 1,
                   "encoding '" + name_ + "': log_n needs the training length (original_length)");
  const ScaledFrequencies f = ScaleRope(rot_, base_, scaling_, scaling_.original_length);
  inv_freq_ = f.inv_freq;
  mscale_ = f.mscale;
}

template <typename S>
unsigned Rope<S>::Sites() const {
  const bool tempered = scaling_.rule == "yarn" || scaling_.rule == "dynamic_yarn";
  return kSiteQKTransform | (tempered || log_n_ ? kSiteLogitScale : 0u);
}

// YaRN multiplies cos and sin by mscale, so q.k gets mscale^2: applied here once, on the logits.
template <typename S>
S Rope<S>::LogitScale(const AttentionContext& ctx, int i) const {
  const double n = log_n_ ? LogNFactor(ctx.pos[i], scaling_.original_length) : 1.0;
  return static_cast<S>(mscale_ * mscale_ * n);
}

template <typename S>
void Rope<S>::Prepare(const std::vector<double>& pos) {
  if (IsDynamicRule(scaling_.rule)) {
    // Current length as HF counts it: the largest position id + 1.
    double len = 0;
    for (double p : pos) len = std::max(len, p + 1);
    const ScaledFrequencies f = ScaleRope(rot_, base_, scaling_, len);
    if (f.inv_freq != inv_freq_) prepared_pos_.clear();
    inv_freq_ = f.inv_freq;
    mscale_ = f.mscale;
  }
  if (pos == prepared_pos_) return;
  const int T = static_cast<int>(pos.size()), P = rot_ / 2;
  cos_.resize(T, P);
  sin_.resize(T, P);
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < P; ++k) {
      const double a = pos[t] * inv_freq_[k];
      cos_(t, k) = static_cast<S>(std::cos(a));
      sin_(t, k) = static_cast<S>(std::sin(a));
    }
  prepared_pos_ = pos;
}

template <typename S>
void Rope<S>::TransformQK(const AttentionContext& ctx, bool, S* x, long ld) const {
  LEXP_DCHECK(cos_.rows() == ctx.T, "rope: Prepare() was not called for this length");
  RotatePairs(x, ld, ctx.T, rot_ / 2, interleaved_, cos_.data(), sin_.data(), S(1));
}

// Forward: y = R(pos) x.  Backward: d_x = R(pos)^T d_y = R(-pos) d_y.
template <typename S>
void Rope<S>::TransformQKBackward(const AttentionContext& ctx, bool, S* d_x, long ld) const {
  RotatePairs(d_x, ld, ctx.T, rot_ / 2, interleaved_, cos_.data(), sin_.data(), S(-1));
}

template class Rope<float>;
template class Rope<double>;

}  // namespace lexp
