#include "pe/rope.h"

#include <algorithm>
#include <cmath>

namespace lexp {

std::vector<double> RopeInverseFrequencies(int D, double base) {
  std::vector<double> f(D / 2);
  for (int k = 0; k < D / 2; ++k) f[k] = std::pow(base, -2.0 * k / D);
  return f;
}

std::vector<OptionField> RopeOptions::Fields() {
  return {
      {.name = "base", .help = "rotary base: theta_k = base^(-2k/D_rot)", .value = &base, .lo = 1,
       .lo_open = true},
      {.name = "fraction",
       .help = "fraction of the head dimension that rotates (D_rot = 2 floor(fraction D / 2)); "
               "the rest passes unrotated",
       .value = &fraction, .lo = 0, .lo_open = true, .hi = 1},
      {.name = "pairing",
       .help = "pair layout over the D_rot rotated dims: half (k, k+D_rot/2) or interleaved (2k, "
               "2k+1)",
       .value = &pairing, .allowed = {"half", "interleaved"}},
      {.name = "scaling", .help = "frequency rule (lexp list scalings)", .value = &scaling,
       .allowed = RopeScalingRules()},
      {.name = "factor",
       .help = "scale s = target length / training length (dynamic_ntk: alpha; dynamic_yarn "
               "ignores it and uses s = max(1, length / L))",
       .value = &factor, .lo = 0, .lo_open = true},
      {.name = "original_length",
       .help = "training length L in tokens (0 = the recipe's longest training sequence)",
       .value = &original_length, .lo = 0},
      {.name = "beta_fast", .help = "yarn/by-parts: pairs with more rotations than this in L are kept",
       .value = &beta_fast, .lo = 0, .lo_open = true},
      {.name = "beta_slow",
       .help = "yarn/by-parts: pairs with fewer rotations than this are interpolated",
       .value = &beta_slow, .lo = 0, .lo_open = true},
      {.name = "truncate", .help = "yarn/by-parts: floor/ceil the correction range",
       .value = &truncate},
      {.name = "ramp",
       .help = "yarn/by-parts ramp: code (linear in pair index) or paper (linear in L/lambda)",
       .value = &ramp, .allowed = {"code", "paper"}},
      {.name = "blend", .help = "yarn/by-parts blend: linear (HF) or harmonic (PoSE 'revised')",
       .value = &blend, .allowed = {"linear", "harmonic"}},
      {.name = "attn_factor", .help = "yarn: multiplies the temperature factor 0.1 ln s + 1",
       .value = &attn_factor, .lo = 0, .lo_open = true},
      {.name = "low_freq_factor", .help = "llama3: wavelengths above L / low_freq_factor are divided",
       .value = &low_freq_factor, .lo = 0, .lo_open = true},
      {.name = "high_freq_factor", .help = "llama3: wavelengths below L / high_freq_factor are kept",
       .value = &high_freq_factor, .lo = 0, .lo_open = true},
      {.name = "truncate_length",
       .help = "truncated_basis: context T whose wavelength is the cut (0 = L)",
       .value = &truncate_length, .lo = 0},
      {.name = "window",
       .help = "rerope/leaky_rerope: distances >= w are changed (0 = L / 8, as 512 / 4096)",
       .value = &window, .lo = 0},
      {.name = "leaky_factor", .help = "leaky_rerope: distances d >= w are seen as w + (d - w) / k",
       .value = &leaky_factor, .lo = 1},
      {.name = "long_factors",
       .help = "longrope: lambda_k, one per rotary pair, comma-separated, each >= 1 (the searched "
               "or published factors); \"search[:length=L,samples=S,iterations=I,population=P]\" "
               "in lexp eval: LongRoPE's evolution finds them (and start_tokens) on the trained run",
       .value = &long_factors},
      {.name = "start_tokens",
       .help = "longrope: n-hat, positions below it keep the unscaled theta_k",
       .value = &start_tokens, .lo = 0},
      {.name = "log_n",
       .help = "multiply the logits of the query at p by max(1, ln(p+1)/ln L): true, false or auto "
               "(on with rerope and leaky_rerope, whose reference always applies it; off otherwise)",
       .value = &log_n, .allowed = {"true", "false", "auto"}},
      {.name = "ablate_from",
       .help = "analysis: pairs k >= this are ablated at every position (-1 = none; lexp analyze "
               "sweeps it)",
       .value = &ablate_from, .lo = -1},
      {.name = "ablation",
       .help = "analysis: freeze (the pair stops rotating: theta_k = 0) or remove (its q and k are "
               "zeroed)",
       .value = &ablation, .allowed = {"freeze", "remove"}}};
}

template <typename S>
Rope<S>::Rope(const EncodingShape& shape, const RopeOptions& opt, std::string name)
    : name_(std::move(name)),
      D_(shape.d_model / shape.n_heads),
      rot_(2 * static_cast<int>(std::floor(opt.fraction * D_ / 2 + 1e-9))),
      base_(opt.base),
      interleaved_(opt.pairing == "interleaved") {
  LEXP_INPUT_CHECK(rot_ >= 2, "encoding '" + name_ + "': fraction leaves no pair to rotate");
  scaling_.rule = opt.scaling;
  scaling_.factor = opt.factor;
  scaling_.original_length = opt.original_length;
  if (scaling_.original_length == 0) scaling_.original_length = shape.train_length;
  scaling_.beta_fast = opt.beta_fast;
  scaling_.beta_slow = opt.beta_slow;
  scaling_.truncate = opt.truncate;
  scaling_.ramp = opt.ramp;
  scaling_.blend = opt.blend;
  scaling_.attn_factor = opt.attn_factor;
  scaling_.low_freq_factor = opt.low_freq_factor;
  scaling_.high_freq_factor = opt.high_freq_factor;
  scaling_.truncate_length = opt.truncate_length;
  scaling_.window = opt.window;
  scaling_.leaky_factor = opt.leaky_factor;
  scaling_.start_tokens = opt.start_tokens;
  std::vector<std::string> factor_texts;
  for (std::string rest = opt.long_factors; !rest.empty();) {
    const size_t comma = rest.find(',');
    std::string f = rest.substr(0, comma);
    f.erase(0, f.find_first_not_of(' '));
    f.erase(f.find_last_not_of(' ') + 1);
    factor_texts.push_back(f);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  LEXP_INPUT_CHECK(factor_texts.empty() || factor_texts[0].rfind("search", 0) != 0,
                   "encoding '" + name_ + "': long_factors = \"" + opt.long_factors +
                       "\" is LongRoPE's search on a trained run, which lexp eval (or a claim's "
                       "evaluation stage) resolves; a model is built with the factors themselves");
  for (const std::string& f : factor_texts) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(f, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    LEXP_INPUT_CHECK(used == f.size() && used > 0,
                     "encoding '" + name_ + "': long_factors must be numbers separated by "
                     "commas, got '" + f + "'");
    scaling_.long_factors.push_back(v);
  }
  LEXP_INPUT_CHECK(scaling_.rule == "longrope" ||
                       (scaling_.long_factors.empty() && scaling_.start_tokens == 0),
                   "encoding '" + name_ + "': long_factors and start_tokens belong to scaling " +
                       "'longrope', not '" + scaling_.rule + "'");
  if (IsReropeRule(scaling_.rule)) {
    LEXP_INPUT_CHECK(shape.causal, "encoding '" + name_ + "': scaling '" + scaling_.rule +
                                       "' is defined for causal attention (decoder layout) only");
    window_ = scaling_.window > 0 ? scaling_.window
                                  : std::max(1.0, std::round(scaling_.original_length / 8));
    LEXP_INPUT_CHECK(window_ >= 1, "encoding '" + name_ +
                                       "': rerope needs window >= 1 or the "
                                       "training length (original_length)");
  }
  // ReRoPE's reference always scales queries by log n; auto follows it.
  log_n_ = opt.log_n == "true" || (opt.log_n == "auto" && IsReropeRule(scaling_.rule));
  LEXP_INPUT_CHECK(!log_n_ || scaling_.original_length > 1,
                   "encoding '" + name_ + "': log_n needs the training length (original_length)");
  ablate_from_ = opt.ablate_from;
  remove_ablated_ = opt.ablation == "remove";
  LEXP_INPUT_CHECK(ablate_from_ >= -1 && ablate_from_ <= rot_ / 2,
                   "encoding '" + name_ +
                       "': ablate_from must be -1 (none) or a pair index in 0.." +
                       std::to_string(rot_ / 2));
  const ScaledFrequencies f = ScaleRope(rot_, base_, scaling_, scaling_.original_length);
  SetFrequencies(f.inv_freq);
  mscale_ = f.mscale;
  if (scaling_.start_tokens > 0) {  // LongRoPE's first positions keep the unscaled frequencies
    RopeScalingConfig plain;
    start_freq_ = ScaleRope(rot_, base_, plain, 0).inv_freq;
    if (ablate_from_ >= 0 && !remove_ablated_)
      for (size_t k = ablate_from_; k < start_freq_.size(); ++k) start_freq_[k] = 0;
  }
}

template <typename S>
unsigned Rope<S>::Sites() const {
  const bool tempered =
      scaling_.rule == "yarn" || scaling_.rule == "dynamic_yarn" || scaling_.rule == "longrope";
  // The logit term is idle unless the rule is rerope or the pattern remaps distances.
  return kSiteQKTransform | kSiteLogitTerm | (tempered || log_n_ ? kSiteLogitScale : 0u);
}

// YaRN multiplies cos and sin by mscale, so q.k gets mscale^2: applied here once, on the logits.
template <typename S>
S Rope<S>::LogitScale(const AttentionContext& ctx, int i) const {
  const double n = log_n_ ? LogNFactor(ctx.pos[i], scaling_.original_length) : 1.0;
  return static_cast<S>(mscale_ * mscale_ * n);
}

template <typename S>
bool Rope<S>::TablesDependOnLength() const {
  return IsDynamicRule(scaling_.rule);
}

template <typename S>
void Rope<S>::Prepare(const std::vector<double>& pos, double /*max_distance*/) {
  if (IsDynamicRule(scaling_.rule)) {
    // Current length as HF counts it: the largest position id + 1.
    double len = 0;
    for (double p : pos) len = std::max(len, p + 1);
    const ScaledFrequencies f = ScaleRope(rot_, base_, scaling_, len);
    const std::vector<double> before = inv_freq_;
    SetFrequencies(f.inv_freq);
    if (inv_freq_ != before) prepared_pos_.clear();
    mscale_ = f.mscale;
  }
  if (pos == prepared_pos_) return;
  const int T = static_cast<int>(pos.size()), P = rot_ / 2;
  // Positions that extend the prepared ones (a decoding step) keep the rows already computed.
  const bool extends = prepared_pos_.size() <= pos.size() &&
                       std::equal(prepared_pos_.begin(), prepared_pos_.end(), pos.begin());
  const int t_begin = extends ? static_cast<int>(prepared_pos_.size()) : 0;
  cos_.resize(static_cast<size_t>(T) * P);
  sin_.resize(static_cast<size_t>(T) * P);
  for (int t = t_begin; t < T; ++t)
    for (int k = 0; k < P; ++k) {
      const bool start = pos[t] < scaling_.start_tokens;  // LongRoPE's n-hat (0: none)
      const double a = pos[t] * (start ? start_freq_[k] : inv_freq_[k]);
      cos_[static_cast<size_t>(t) * P + k] = static_cast<S>(std::cos(a));
      sin_[static_cast<size_t>(t) * P + k] = static_cast<S>(std::sin(a));
    }
  prepared_pos_ = pos;
}

template <typename S>
void Rope<S>::TransformQK(const AttentionContext& ctx, bool, S* x, long ld) const {
  LEXP_CHECK(static_cast<int>(prepared_pos_.size()) == ctx.T,
             "rope: Prepare() was not called for this length");
  const int P = rot_ / 2, r0 = ctx.first_row;
  S* x0 = x + static_cast<long>(r0) * ld;
  RotatePairs(x0, ld, ctx.T - r0, P, interleaved_, cos_.data() + static_cast<long>(r0) * P,
              sin_.data() + static_cast<long>(r0) * P, S(1));
  ZeroRemovedPairs(x0, ld, ctx.T - r0);
}

// Forward: y = R(pos) x.  Backward: d_x = R(pos)^T d_y = R(-pos) d_y.
template <typename S>
void Rope<S>::TransformQKBackward(const AttentionContext& ctx, bool, S* d_x, long ld) const {
  ZeroRemovedPairs(d_x, ld, ctx.T);
  RotatePairs(d_x, ld, ctx.T, rot_ / 2, interleaved_, cos_.data(), sin_.data(), S(-1));
}

// Site 4: rerope's far entries, then the keys a pattern shows at another distance than p_i - p_j.
template <typename S>
void Rope<S>::AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                           const HeadQK<S>& qk, S* scores, long lds) const {
  if (IsReropeRule(scaling_.rule)) ReropeForward(ctx, i0, i1, j0, j1, qk, scores, lds);
  if (!ctx.plain_distance) RemapForward(ctx, i0, i1, j0, j1, qk, scores, lds);
}

template <typename S>
void Rope<S>::LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                                const HeadQK<S>& qk, S* d_scores, long lds,
                                const HeadQKGrad<S>& grad, int) {
  if (!ctx.plain_distance) RemapBackward(ctx, i0, i1, j0, j1, qk, d_scores, lds, grad);
  if (IsReropeRule(scaling_.rule)) ReropeBackward(ctx, i0, i1, j0, j1, qk, d_scores, lds, grad);
}

template class Rope<float>;
template class Rope<double>;

}  // namespace lexp
