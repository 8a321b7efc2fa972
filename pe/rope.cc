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
      {"pairing", "half",
       "pair layout over the D_rot rotated dims: half (k, k+D_rot/2) | interleaved (2k, 2k+1)"},
      {"scaling", "none",
       "frequency rule: none | pi | ntk | dynamic_ntk | ntk_by_parts | yarn | dynamic_yarn | "
       "truncated_basis | llama3 | rerope | leaky_rerope"},
      {"factor", "1",
       "scale s = target length / training length (dynamic_ntk: alpha; dynamic_yarn ignores it "
       "and uses s = max(1, length / L))"},
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
      {"window", "0", "rerope/leaky_rerope: distances >= w are changed (0 = L / 8, as 512 / 4096)"},
      {"leaky_factor", "16", "leaky_rerope: distances d >= w are seen as w + (d - w) / k"},
      {"log_n", "auto",
       "multiply the logits of the query at p by max(1, ln(p+1)/ln L): true | false | auto (on "
       "with rerope and leaky_rerope, whose reference always applies it; off otherwise)"},
      {"ablate_from", "-1",
       "analysis: pairs k >= this are ablated at every position (-1 = none; lexp analyze sweeps "
       "it)"},
      {"ablation", "freeze",
       "analysis: freeze (the pair stops rotating: theta_k = 0) | remove (its q and k are "
       "zeroed)"}};
}

template <typename S>
Rope<S>::Rope(const EncodingShape& shape, const EncodingOptions& opt, std::string name)
    : name_(std::move(name)),
      D_(shape.d_model / shape.n_heads),
      rot_(2 * static_cast<int>(std::floor(opt.Double("fraction") * D_ / 2 + 1e-9))),
      base_(opt.Double("base")),
      interleaved_(opt.String("pairing", {"half", "interleaved"}) == "interleaved") {
  LEXP_INPUT_CHECK(base_ > 1, "encoding '" + name_ + "': base must be > 1");
  LEXP_INPUT_CHECK(opt.Double("fraction") > 0 && opt.Double("fraction") <= 1,
                   "encoding '" + name_ + "': fraction must be in (0, 1]");
  LEXP_INPUT_CHECK(rot_ >= 2, "encoding '" + name_ + "': fraction leaves no pair to rotate");
  scaling_.rule = opt.String("scaling", RopeScalingRules());
  scaling_.factor = opt.Double("factor");
  scaling_.original_length = opt.Double("original_length");
  LEXP_INPUT_CHECK(scaling_.original_length >= 0,
                   "encoding '" + name_ + "': original_length must be >= 0 tokens (0 = the " +
                       "recipe's longest training sequence), got " + opt.Text("original_length"));
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
  LEXP_INPUT_CHECK(scaling_.factor > 0, "encoding '" + name_ + "': factor must be positive");
  scaling_.window = opt.Double("window");
  scaling_.leaky_factor = opt.Double("leaky_factor");
  auto positive = [&](const char* key, double v, bool zero_allowed) {
    LEXP_INPUT_CHECK(zero_allowed ? v >= 0 : v > 0,
                     "encoding '" + name_ + "': " + key + " must be " +
                         (zero_allowed ? ">= 0" : "> 0") + ", got " + opt.Text(key));
  };
  positive("attn_factor", scaling_.attn_factor, false);
  positive("beta_fast", scaling_.beta_fast, false);
  positive("beta_slow", scaling_.beta_slow, false);
  positive("low_freq_factor", scaling_.low_freq_factor, false);
  positive("high_freq_factor", scaling_.high_freq_factor, false);
  positive("truncate_length", scaling_.truncate_length, true);
  positive("window", scaling_.window, true);
  if (IsReropeRule(scaling_.rule)) {
    LEXP_INPUT_CHECK(shape.causal, "encoding '" + name_ + "': scaling '" + scaling_.rule +
                                       "' is defined for causal attention (decoder layout) only");
    window_ = scaling_.window > 0 ? scaling_.window
                                  : std::max(1.0, std::round(scaling_.original_length / 8));
    LEXP_INPUT_CHECK(window_ >= 1, "encoding '" + name_ +
                                       "': rerope needs window >= 1 or the "
                                       "training length (original_length)");
    LEXP_INPUT_CHECK(scaling_.leaky_factor >= 1,
                     "encoding '" + name_ + "': leaky_factor must be >= 1");
  }
  // ReRoPE's reference always scales queries by log n; auto follows it.
  const std::string log_n = opt.String("log_n", {"auto", "true", "false"});
  log_n_ = log_n == "true" || (log_n == "auto" && IsReropeRule(scaling_.rule));
  LEXP_INPUT_CHECK(!log_n_ || scaling_.original_length > 1,
                   "encoding '" + name_ + "': log_n needs the training length (original_length)");
  ablate_from_ = static_cast<int>(opt.Int("ablate_from"));
  remove_ablated_ = opt.String("ablation", {"freeze", "remove"}) == "remove";
  LEXP_INPUT_CHECK(ablate_from_ >= -1 && ablate_from_ <= rot_ / 2,
                   "encoding '" + name_ +
                       "': ablate_from must be -1 (none) or a pair index in 0.." +
                       std::to_string(rot_ / 2));
  const ScaledFrequencies f = ScaleRope(rot_, base_, scaling_, scaling_.original_length);
  SetFrequencies(f.inv_freq);
  mscale_ = f.mscale;
}

// Frozen pairs (ablate_from, freeze) get theta = 0: they keep their content and lose position.
template <typename S>
void Rope<S>::SetFrequencies(std::vector<double> inv_freq) {
  if (ablate_from_ >= 0 && !remove_ablated_)
    for (size_t k = ablate_from_; k < inv_freq.size(); ++k) inv_freq[k] = 0;
  inv_freq_ = std::move(inv_freq);
}

// Removed pairs (ablate_from, remove): their query and key components are zeroed after rotation.
template <typename S>
void Rope<S>::ZeroRemovedPairs(S* x, long ld, int T) const {
  if (ablate_from_ < 0 || !remove_ablated_) return;
  const int P = rot_ / 2, stride = interleaved_ ? 2 : 1, second = interleaved_ ? 1 : P;
  for (int t = 0; t < T; ++t)
    for (int k = ablate_from_; k < P; ++k) {
      x[t * ld + k * stride] = S(0);
      x[t * ld + k * stride + second] = S(0);
    }
}

template <typename S>
unsigned Rope<S>::Sites() const {
  const bool tempered = scaling_.rule == "yarn" || scaling_.rule == "dynamic_yarn";
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
      const double a = pos[t] * inv_freq_[k];
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

template <typename S>
template <typename Offset>
void Rope<S>::RotateRows(const S* x, long ld, int t0, int n, Offset offset, Mat<S>& out) const {
  const int P = rot_ / 2, stride = interleaved_ ? 2 : 1, second = interleaved_ ? 1 : P;
  Resize(out, n, D_);
  for (int r = 0; r < n; ++r) {
    const S* in = x + static_cast<long>(r) * ld;
    S* o = out.data() + static_cast<long>(r) * D_;
    for (int c = 0; c < D_; ++c) o[c] = in[c];
    const double a = offset(t0 + r);
    for (int k = 0; k < P; ++k) {
      const double ang = a * inv_freq_[k], cs = std::cos(ang), sn = std::sin(ang);
      const double x0 = o[k * stride], x1 = o[k * stride + second];
      o[k * stride] = static_cast<S>(x0 * cs - x1 * sn);
      o[k * stride + second] = static_cast<S>(x0 * sn + x1 * cs);
    }
  }
}

// q_i is already rotated to p_i, k_j to p_j. rerope: q2 at position w, k2 at 0 (unrotated), so
// q2.k2 sees distance w. leaky: q2 at p_i/k + w(1 - 1/k), k2 at p_j/k, distance w + (d - w)/k.
template <typename S>
void Rope<S>::ReropeOperands(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                             const HeadQK<S>& qk, Mat<S>& q2, Mat<S>& k2) const {
  const double w = window_;
  const double k = scaling_.rule == "leaky_rerope" ? scaling_.leaky_factor : 0.0;
  const double* pos = ctx.pos;
  const S* q = qk.q + static_cast<long>(i0) * qk.ld;
  const S* k_rows = qk.k + static_cast<long>(j0) * qk.ld;
  if (k > 0) {
    RotateRows(
        q, qk.ld, i0, i1 - i0, [&](int t) { return pos[t] / k + w * (1 - 1 / k) - pos[t]; }, q2);
    RotateRows(
        k_rows, qk.ld, j0, j1 - j0, [&](int t) { return pos[t] / k - pos[t]; }, k2);
  } else {
    RotateRows(
        q, qk.ld, i0, i1 - i0, [&](int t) { return w - pos[t]; }, q2);
    RotateRows(
        k_rows, qk.ld, j0, j1 - j0, [&](int t) { return -pos[t]; }, k2);
  }
}

// Far entries (d = p_i - p_j >= w) become scale_i q2_i.k2_j / sqrt(D); near ones keep the plain
// rotary logit.
template <typename S>
void Rope<S>::ReropeForward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                            const HeadQK<S>& qk, S* scores, long lds) const {
  const double* pos = ctx.pos;
  if (pos[i1 - 1] - pos[j0] < window_) return;  // no far pair in this block
  thread_local Mat<S> q2, k2, s2;
  ReropeOperands(ctx, i0, i1, j0, j1, qk, q2, k2);
  s2.noalias() = q2 * k2.transpose();
  const S inv = S(1) / std::sqrt(S(D_));
  for (int i = i0; i < i1; ++i) {
    const S scale = LogitScale(ctx, i) * inv;
    S* row = scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j)
      if (pos[i] - pos[j] >= window_) row[j - j0] = scale * s2(i - i0, j - j0);
  }
}

// Far entries: g = d_a_ij scale_i / sqrt(D) goes to d_q2_i += g k2_j and d_k2_j += g q2_i, which
// are rotated back onto the rotated q and k; d_a_ij is then zeroed so the plain product gets none
// of it.
template <typename S>
void Rope<S>::ReropeBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                             const HeadQK<S>& qk, S* d_scores, long lds,
                             const HeadQKGrad<S>& grad) const {
  const double* pos = ctx.pos;
  if (pos[i1 - 1] - pos[j0] < window_) return;
  const int n = i1 - i0, m = j1 - j0;
  thread_local Mat<S> q2, k2, g, dq2, dk2, back;
  ReropeOperands(ctx, i0, i1, j0, j1, qk, q2, k2);
  Resize(g, n, m);
  const S inv = S(1) / std::sqrt(S(D_));
  for (int i = i0; i < i1; ++i) {
    const S scale = LogitScale(ctx, i) * inv;
    S* row = d_scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j) {
      const bool far = pos[i] - pos[j] >= window_;
      g(i - i0, j - j0) = far ? row[j - j0] * scale : S(0);
      if (far) row[j - j0] = S(0);
    }
  }
  dq2.noalias() = g * k2;
  dk2.noalias() = g.transpose() * q2;
  // Rotating back is rotating by minus the offset.
  const double w = window_;
  const double k = scaling_.rule == "leaky_rerope" ? scaling_.leaky_factor : 0.0;
  auto q_off = [&](int t) { return k > 0 ? pos[t] / k + w * (1 - 1 / k) - pos[t] : w - pos[t]; };
  auto k_off = [&](int t) { return k > 0 ? pos[t] / k - pos[t] : -pos[t]; };
  RotateRows(
      dq2.data(), D_, i0, n, [&](int t) { return -q_off(t); }, back);
  for (int r = 0; r < n; ++r)
    Eigen::Map<RowVec<S>>(grad.d_q + static_cast<long>(i0 + r) * grad.ld, D_) += back.row(r);
  RotateRows(
      dk2.data(), D_, j0, m, [&](int t) { return -k_off(t); }, back);
  for (int r = 0; r < m; ++r)
    Eigen::Map<RowVec<S>>(grad.d_k + static_cast<long>(j0 + r) * grad.ld, D_) += back.row(r);
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

template <typename S>
double Rope<S>::TargetDistance(double d) const {
  if (!IsReropeRule(scaling_.rule)) return d;
  return ReropeDistance(d, window_, scaling_.rule == "leaky_rerope" ? scaling_.leaky_factor : 0.0);
}

// Calls f(i, j, delta) for every visible key whose target distance differs from p_i - p_j by delta.
template <typename S>
template <typename F>
void Rope<S>::ForEachRemapped(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                              F f) const {
  const AttentionPattern& pat = *ctx.pattern;
  for (int i = i0; i < i1; ++i) {
    int b, e;
    pat.KeyBounds(i, ctx.T, &b, &e);
    for (int j = std::max(b, j0); j < std::min(e, j1); ++j) {
      if (!pat.Contiguous() && !pat.Visible(i, j, ctx.T)) continue;
      const double plain = ctx.pos[i] - ctx.pos[j];
      const double eff = pat.EffectiveDistance(i, j, ctx.pos);
      if (eff == plain) continue;
      f(i, j, TargetDistance(eff) - plain);
    }
  }
}

// a_ij = scale_i (R(delta) q_i).k_j / sqrt(D) with the rotated q_i, k_j: the rotation at the target
// distance, one key at a time (patterns remap few keys: LM-Infinite's globals, StreamingLLM's
// sinks).
template <typename S>
void Rope<S>::RemapForward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                           const HeadQK<S>& qk, S* scores, long lds) const {
  thread_local Mat<S> qd;
  const S inv = S(1) / std::sqrt(S(D_));
  ForEachRemapped(ctx, i0, i1, j0, j1, [&](int i, int j, double delta) {
    RotateRows(
        qk.q + static_cast<long>(i) * qk.ld, qk.ld, 0, 1, [&](int) { return delta; }, qd);
    const S dot =
        Eigen::Map<const RowVec<S>>(qk.k + static_cast<long>(j) * qk.ld, D_).dot(qd.row(0));
    scores[static_cast<long>(i - i0) * lds + (j - j0)] = LogitScale(ctx, i) * inv * dot;
  });
}

// g = d_a_ij scale_i / sqrt(D):  d_q_i += R(-delta) (g k_j);  d_k_j += g R(delta) q_i;  d_a_ij = 0.
template <typename S>
void Rope<S>::RemapBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                            const HeadQK<S>& qk, S* d_scores, long lds,
                            const HeadQKGrad<S>& grad) const {
  thread_local Mat<S> qd, back;
  thread_local RowVec<S> gk;
  const S inv = S(1) / std::sqrt(S(D_));
  ForEachRemapped(ctx, i0, i1, j0, j1, [&](int i, int j, double delta) {
    S& d = d_scores[static_cast<long>(i - i0) * lds + (j - j0)];
    const S g = d * LogitScale(ctx, i) * inv;
    d = S(0);
    if (g == S(0)) return;
    RotateRows(
        qk.q + static_cast<long>(i) * qk.ld, qk.ld, 0, 1, [&](int) { return delta; }, qd);
    Eigen::Map<RowVec<S>>(grad.d_k + static_cast<long>(j) * grad.ld, D_) += g * qd.row(0);
    gk = g * Eigen::Map<const RowVec<S>>(qk.k + static_cast<long>(j) * qk.ld, D_);
    RotateRows(
        gk.data(), D_, 0, 1, [&](int) { return -delta; }, back);
    Eigen::Map<RowVec<S>>(grad.d_q + static_cast<long>(i) * grad.ld, D_) += back.row(0);
  });
}

template class Rope<float>;
template class Rope<double>;

}  // namespace lexp
