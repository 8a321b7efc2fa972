// xPos: RoPE with a per-pair exponential decay, the query at position m scaled by zeta_k^(m/B) and
// the key at n by zeta_k^(-n/B), so q.k gains zeta_k^((m-n)/B) < 1 for m > n;
// zeta_k = (2k + gamma D) / ((1 + gamma) D) (Sun et al. 2022, arXiv:2212.10554).
// As the reference code (microsoft/torchscale) does: interleaved pairs by default,
// gamma = 0.4, and positions centred before exponentiation (exponent (p - p_centre)/B, which halves
// the range); the scale is computed in double (pitfall 13). The reference B = 512 goes with the
// paper's 1024-token training (recalled): pair 0, which rotates fastest and has the smallest zeta,
// decays most, to zeta_0^2 = 0.08 across a training sequence. At lexp's 16-64 training tokens
// B = 512 would leave that pair a decay of 0.86-0.96, RoPE in all but name, so scale_base = 0 (the
// default) keeps the ratio: B = half the run's longest training sequence. Defined for causal
// attention: in the encoder layout keys ahead of the query would be amplified by
// zeta^(-(n-m)/B) > 1.
#pragma once

#include <string>
#include <vector>

#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// zeta_k for k = 0..D/2-1.
std::vector<double> XposZeta(int D, double gamma);

// Options of `xpos` (recipe [encoding_options.xpos]; pe/options.h).
struct XPosOptions {
  double base = 10000;
  double gamma = 0.4;
  double scale_base = 0;
  std::string pairing = "interleaved";
  std::vector<OptionField> Fields() {
    return {{.name = "base", .help = "rotary base", .value = &base, .lo = 1, .lo_open = true},
            {.name = "gamma", .help = "zeta_k = (2k + gamma D) / ((1 + gamma) D)", .value = &gamma,
             .lo = 0, .lo_open = true},
            {.name = "scale_base",
             .help = "B: the query at m is scaled by zeta^(m/B), the key by zeta^(-n/B); 0 = half "
                     "the longest training sequence, the reference's 512 to its 1024 training "
                     "tokens (decoder layout only)",
             .value = &scale_base, .lo = 0},
            {.name = "pairing", .help = "pair layout: interleaved (torchscale) or half",
             .value = &pairing, .allowed = {"interleaved", "half"}}};
  }
};

template <typename S>
class XPos final : public PositionEncoding<S> {
 public:
  using Options = XPosOptions;
  XPos(const EncodingShape& shape, const XPosOptions& opt);
  std::string Name() const override { return "xpos"; }
  unsigned Sites() const override { return kSiteQKTransform; }
  void Prepare(const std::vector<double>& pos, double max_distance) override;
  // scale_base B as resolved.
  std::map<std::string, std::vector<double>> Describe() const override {
    return {{"scale_base", {scale_base_}}};
  }
  void TransformQK(const AttentionContext& ctx, bool is_query, S* x, long ld) const override;
  void TransformQKBackward(const AttentionContext& ctx, bool is_query, S* d_x,
                           long ld) const override;

 private:
  int D_;
  bool interleaved_;
  double scale_base_;
  std::vector<double> inv_freq_, zeta_;
  Mat<S> cq_, sq_, ck_, sk_;  // [T, D/2] cos/sin times the query / key scale
  std::vector<double> prepared_pos_;
};

}  // namespace lexp
