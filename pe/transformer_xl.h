// Transformer-XL relative attention (Dai et al. 2019, arXiv:1901.02860, section 3.3;
// Dai et al. 2019):
//   a_ij = [ q_i.k_j + u.k_j + (q_i + v).(W_R^T R_{i-j}) ] / sqrt(D)
// R_d is the fixed sinusoid [sin(d w_k) | cos(d w_k)], w_k = 10000^(-2k/C), of the offset d = i -
// j; W_R [C, C] is a learned projection per layer (its columns split by head like q and k); u and v
// are learned per head, shared by all layers as in the original code (share_biases = false: per
// layer, as DeepMind's port). clamp_len > 0 caps |d| at clamp_len (the original pos_seq.clamp_).
// Offsets are tabulated for every integer distance of the batch in Prepare; W_R^T R is formed there
// once per layer and forward pass. Gradients reach q, k, u, v and W_R.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Options of `transformer_xl` (recipe [encoding_options.transformer_xl]; pe/options.h).
struct TransformerXLOptions {
  int clamp_len = 0;
  bool share_biases = true;
  std::vector<OptionField> Fields() {
    return {{.name = "clamp_len", .help = "cap |i - j| of the sinusoid at this value (0 = no cap)",
             .value = &clamp_len, .lo = 0},
            {.name = "share_biases",
             .help = "u, v shared by all layers (original code); false = per layer",
             .value = &share_biases}};
  }
};

template <typename S>
class TransformerXL final : public PositionEncoding<S> {
 public:
  using Options = TransformerXLOptions;
  TransformerXL(const EncodingShape& shape, const TransformerXLOptions& opt);
  std::string Name() const override { return "transformer_xl"; }
  unsigned Sites() const override { return kSiteLogitTerm; }
  void Init(Rng& rng) override;
  std::vector<ParamRef<S>> Parameters() override;
  void Prepare(const std::vector<double>& pos, double max_distance) override;

  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* scores, long lds) const override;
  void LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const HeadQK<S>& qk, S* d_scores, long lds, const HeadQKGrad<S>& grad,
                         int task) override;
  void BeginBackward(int tasks) override;
  void EndBackward() override;

  // The sinusoid R_d (C values).
  void Sinusoid(double d, double* out) const;
  int clamp_len() const { return clamp_len_; }

 private:
  long Offset(const AttentionContext& ctx, int i, int j) const;  // row of the tables
  int BiasRow(int layer) const { return share_ ? 0 : layer; }

  int C_, H_, D_, L_, clamp_len_;
  bool share_;
  Mat<S> w_r_, d_w_r_;         // [L * C, C]
  Mat<S> u_, v_, d_u_, d_v_;   // [(L or 1) * H, D]
  long d_min_ = 0, n_d_ = 0;   // tabulated offsets d_min .. d_min + n_d - 1
  Mat<double> sinus_;          // [n_d, C]
  std::vector<Mat<S>> proj_;   // per layer [n_d, C] = sinus_ W_R
  std::vector<double> slots_;  // per task: d_u [D], d_v [D], d_proj [n_d, D]
  int tasks_ = 0;
  std::atomic<int> slot_layer_{0};
};

}  // namespace lexp
