// DA-Transformer, distance-aware attention (Wu, Wu & Huang 2021, NAACL, arXiv:2010.06925). The form
// below is the paper's section 3 as recalled (the abstract confirms its
// parts: ReLU-clipped raw scores, multiplied by a learnable sigmoid of per-head weighted
// distances):
//   R_h = w_h |i - j|,   f_h(R) = (1 + e^{v_h}) / (1 + e^{v_h - R})   (f(0) = 1, range (0, 1 +
//   e^v)) a_ij = ReLU(q_i.k_j / sqrt(D)) * f_h(w_h |i - j|)
// w_h > 0 lets a head prefer far keys, w_h < 0 near ones. w and v are learned per (layer, head);
// w starts uniform in [-init_w, init_w], v at 0. The logit-term site transforms the content score.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Options of `da` (recipe [encoding_options.da]; pe/options.h).
struct DistanceAwareOptions {
  double init_w = 0.1;
  std::vector<OptionField> Fields() {
    return {{.name = "init_w", .help = "w_h starts uniform in [-init_w, init_w]; v_h starts at 0",
             .value = &init_w, .lo = 0}};
  }
};

template <typename S>
class DistanceAware final : public PositionEncoding<S> {
 public:
  using Options = DistanceAwareOptions;
  DistanceAware(const EncodingShape& shape, const DistanceAwareOptions& opt);
  std::string Name() const override { return "da"; }
  unsigned Sites() const override { return kSiteLogitTerm; }
  void Init(Rng& rng) override;
  std::vector<ParamRef<S>> Parameters() override;

  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* scores, long lds) const override;
  void LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const HeadQK<S>& qk, S* d_scores, long lds, const HeadQKGrad<S>& grad,
                         int task) override;
  void BeginBackward(int tasks) override;
  void EndBackward() override;

  // f_h(w_h d) of (layer, head) at distance d >= 0.
  double Coefficient(int layer, int head, double d) const;
  void SetParams(int layer, int head, double w, double v);

 private:
  int H_, D_;
  double init_w_;
  Mat<S> w_, v_, d_w_, d_v_;   // [L, H]
  std::vector<double> slots_;  // per task: d w, d v
  int tasks_ = 0;
  std::atomic<int> slot_layer_{0};
};

}  // namespace lexp
