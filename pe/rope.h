// RoPE: rotary position embedding of queries and keys (Su et al. 2021, RoFormer, arXiv:2104.09864,
// eq. 34). The first D_rot dimensions of a head rotate (D_rot = D for rope, `fraction` of D for
// rope_partial): pair k by pos * theta_k, theta_k = base^(-2k/D_rot).
// Pairing layout (pitfall 1): "half" (default) pairs dims (k, k + D_rot/2) as GPT-NeoX,
// Hugging Face and the reference benchmark do; "interleaved" pairs (2k, 2k+1) as RoFormer/GPT-J.
// Angles are computed in double (pitfall 17); only cos/sin are cast. `scaling` applies one of the
// frequency rules of pe/rope_scaling.h (PI, NTK, YaRN, ...), during training or at evaluation;
// YaRN's temperature goes to the logit-scale site as mscale^2, once (pitfall 2), so it also holds
// when only part of the head rotates (pitfall 3). Dynamic rules recompute the frequencies from the
// current length at every forward pass; lexp recomputes every key each pass (no KV cache), so keys
// never keep an old rotation (pitfall 7). rerope / leaky_rerope (Su 2023) keep the frequencies and
// replace, for causal distances d >= w, the logit by q^T R(d') k with d' = ReropeDistance(d): the
// logit-term site recomputes those entries with a second rotary pass (queries rotated to a fixed
// offset against keys rotated back, as the reference code's second attention matrix) and routes
// their gradient through it instead of the plain product. Causal attention only, as the reference.
// Patterns that show some keys at another distance than p_i - p_j (lambda, sinks) get, for those
// keys only, the logit of the rotation at that distance (the same site, one key at a time).
// Analysis ablation (Liu et al. 2023's post-critical pairs; `lexp analyze`): `ablate_from = c` with
// `ablation = freeze` sets theta_k = 0 for pairs k >= c (they keep their content, lose position);
// `ablation = remove` zeroes those pairs of q and k after rotation (they contribute nothing).
#pragma once

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "nn/check.h"
#include "nn/precision.h"
#include "nn/position_hooks.h"
#include "pe/options.h"
#include "pe/rope_scaling.h"

namespace lexp {

// True for the encodings built by Rope (rope, rope_partial): they take its options (scaling rules,
// log_n, ablation) and have rotary pairs to analyse.
inline bool IsRopeEncoding(const std::string& name) {
  return name == "rope" || name == "rope_partial";
}

// theta_k = base^(-2k/D) for k = 0..D/2-1.
std::vector<double> RopeInverseFrequencies(int D, double base);

// One row of RotatePairs with the rotary part in bf16: pairs (a[k * stride], b[k * stride]). The
// forward (sign > 0) rounds x, the tables, each product and each sum to bf16; the backward applies
// the transposed rotation by the rounded tables to an fp32 gradient. Branch-free, so it vectorises.
template <int stride>
void RotatePairsBf16Row(float* __restrict a, float* __restrict b, int P, const float* ct,
                        const float* st, float sign) {
  if (sign > 0) {
    for (int k = 0; k < P; ++k) {
      const float cs = RoundToBf16(ct[k]), sn = RoundToBf16(st[k]);
      const float x0 = RoundToBf16(a[k * stride]), x1 = RoundToBf16(b[k * stride]);
      a[k * stride] = RoundToBf16(RoundToBf16(x0 * cs) - RoundToBf16(x1 * sn));
      b[k * stride] = RoundToBf16(RoundToBf16(x0 * sn) + RoundToBf16(x1 * cs));
    }
  } else {
    for (int k = 0; k < P; ++k) {
      const float cs = RoundToBf16(ct[k]), sn = sign * RoundToBf16(st[k]);
      const float x0 = a[k * stride], x1 = b[k * stride];
      a[k * stride] = x0 * cs - x1 * sn;
      b[k * stride] = x0 * sn + x1 * cs;
    }
  }
}

// One row of RotatePairs in the model's precision: pairs (a[k * stride], b[k * stride]), which no
// two pointers share, so the half pairing's loop vectorises (the same operations lane by lane).
template <typename S, int stride>
void RotatePairsRow(S* __restrict a, S* __restrict b, int P, const S* __restrict ct,
                    const S* __restrict st, S sign) {
  for (int k = 0; k < P; ++k) {
    const S x0 = a[k * stride], x1 = b[k * stride], sn = sign * st[k];
    a[k * stride] = x0 * ct[k] - x1 * sn;
    b[k * stride] = x0 * sn + x1 * ct[k];
  }
}

// Rotates P pairs of every row t of x ([T, >= 2P], leading dimension ld) by the tables c, s ([T,
// P]): x0' = x0 c - sign x1 s;  x1' = sign x0 s + x1 c. Pairs are (k, k+P) ("half") or (2k, 2k+1).
// sign = -1 applies the transpose (the backward of a rotation, scaled or not).
// With the active policy's `rotary` part in bf16 (nn/precision.h; fp32 models only) the forward
// rounds x, the tables, each product and each sum to bf16, as a bf16 `x * cos + rotate_half(x) *
// sin` does; the backward applies the transpose of that rotation by the bf16-rounded tables to a
// gradient kept in fp32.
template <typename S>
void RotatePairs(S* x, long ld, int T, int P, bool interleaved, const S* c, const S* s, S sign) {
  const int second = interleaved ? 1 : P;
  if constexpr (std::is_same_v<S, float>) {
    if (ActivePrecision().rotary == Precision::kBf16) {
      for (int t = 0; t < T; ++t) {
        float* r = x + static_cast<long>(t) * ld;
        const float* ct = c + static_cast<long>(t) * P;
        const float* st = s + static_cast<long>(t) * P;
        if (interleaved)
          RotatePairsBf16Row<2>(r, r + 1, P, ct, st, sign);
        else
          RotatePairsBf16Row<1>(r, r + P, P, ct, st, sign);
      }
      return;
    }
  }
  for (int t = 0; t < T; ++t) {
    S* r = x + static_cast<long>(t) * ld;
    const S* ct = c + static_cast<long>(t) * P;
    const S* st = s + static_cast<long>(t) * P;
    if (interleaved)
      RotatePairsRow<S, 2>(r, r + second, P, ct, st, sign);
    else
      RotatePairsRow<S, 1>(r, r + second, P, ct, st, sign);
  }
}

// Options of `rope` (recipe [encoding_options.rope], or lexp eval --scale RULE:key=value for the
// scaling ones; pe/options.h); `rope_partial` takes the same with fraction = 0.25.
struct RopeOptions {
  double base = 10000;
  double fraction = 1;
  std::string pairing = "half";
  std::string scaling = "none";
  double factor = 1;
  double original_length = 0;
  double beta_fast = 32;
  double beta_slow = 1;
  bool truncate = true;
  std::string ramp = "code";
  std::string blend = "linear";
  double attn_factor = 1;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  double truncate_length = 0;
  double window = 0;
  double leaky_factor = 16;
  std::string long_factors = "";
  int start_tokens = 0;
  std::string log_n = "auto";
  int ablate_from = -1;
  std::string ablation = "freeze";
  std::vector<OptionField> Fields();  // rope.cc
};

template <typename S>
class Rope final : public PositionEncoding<S> {
 public:
  using Options = RopeOptions;
  Rope(const EncodingShape& shape, const RopeOptions& opt, std::string name = "rope");
  std::string Name() const override { return name_; }
  int rotary_dims() const { return rot_; }
  unsigned Sites() const override;
  bool TablesDependOnLength() const override;
  // A rotation by the row's own position (the dynamic rules recompute every step anyway).
  bool QKTransformDependsOnOtherPositions() const override { return false; }
  void Prepare(const std::vector<double>& pos, double max_distance) override;
  void TransformQK(const AttentionContext& ctx, bool is_query, S* x, long ld) const override;
  void TransformQKBackward(const AttentionContext& ctx, bool is_query, S* d_x,
                           long ld) const override;
  S LogitScale(const AttentionContext& ctx, int i) const override;
  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* scores, long lds) const override;
  void LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const HeadQK<S>& qk, S* d_scores, long lds, const HeadQKGrad<S>& grad,
                         int task) override;
  bool interleaved() const { return interleaved_; }
  double rerope_window() const { return window_; }
  const std::vector<double>& inverse_frequencies() const { return inv_freq_; }
  double mscale() const { return mscale_; }

 private:
  std::string name_;
  int D_;
  int rot_;  // rotated dimensions (even; D for rope, a fraction of D for rope_partial)
  double base_;
  bool interleaved_;
  RopeScalingConfig scaling_;
  std::vector<double> inv_freq_;
  std::vector<double> start_freq_;  // longrope: frequencies of positions below start_tokens
  double mscale_ = 1;
  bool log_n_ = false;
  // [T, D/2] row-major, T = prepared_pos_.size(); vectors keep their capacity, so decoding that
  // extends the positions by a token appends a row without allocating.
  std::vector<S> cos_, sin_;
  double window_ = 0;  // rerope w (tokens)
  // Rotates n rows of x (stride ld; row r is token t0 + r) into out ([n, D]) by offset(t0 + r).
  template <typename Offset>
  void RotateRows(const S* x, long ld, int t0, int n, Offset offset, Mat<S>& out) const;
  void ReropeForward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                     const HeadQK<S>& qk, S* scores, long lds) const;
  void ReropeBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                      const HeadQK<S>& qk, S* d_scores, long lds, const HeadQKGrad<S>& grad) const;
  void RemapForward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* scores, long lds) const;
  void RemapBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                     const HeadQK<S>& qk, S* d_scores, long lds, const HeadQKGrad<S>& grad) const;
  double TargetDistance(double d) const;
  template <typename F>
  void ForEachRemapped(const AttentionContext& ctx, int i0, int i1, int j0, int j1, F f) const;
  // The two rerope passes for a block: q2 / k2 rotated so that q2_i.k2_j = q_i^T R(d'_ij) k_j.
  void ReropeOperands(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                      const HeadQK<S>& qk, Mat<S>& q2, Mat<S>& k2) const;
  std::vector<double> prepared_pos_;
  int ablate_from_ = -1;         // first ablated pair (-1: none)
  bool remove_ablated_ = false;  // remove (zero q, k) rather than freeze (theta = 0)
  void SetFrequencies(std::vector<double> inv_freq);
  void ZeroRemovedPairs(S* x, long ld, int T) const;
};

// Shared by the rotation, ReRoPE's second pass (rope_rerope.cc) and remapped keys (rope_remap.cc).
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

}  // namespace lexp
