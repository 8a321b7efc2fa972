// TUPE, untied positional encoding (Ke, He & Liu 2021, arXiv:2006.15595):
//   a_ij = (x_i W^Q).(x_j W^K) / sqrt(2D) + (p_i U^Q).(p_j U^K) / sqrt(2D) [+ b_{j-i}]
// Word and absolute-position correlations use separate projections. As in the reference code
// (guolinke/TUPE) the positions p = LayerNorm(learned table[pos]) have their own LayerNorm, U^Q and
// U^K are [C, C] split by head like q and k, and the position term is computed once per forward
// pass and shared by all layers. The content scale 1/sqrt(2D) is the logit-scale site (1/sqrt(2)
// times lexp's 1/sqrt(D)). relative = true (TUPE-R, default) adds T5 relative buckets (32 buckets,
// max distance 128, one table shared by the layers). lexp's tasks have no [CLS] token, so the
// paper's [CLS] untying is not implemented. The table has max_len rows (0 = the run's bound on
// every position id a batch can carry); rows past the training length exist but were never
// trained.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "nn/ops/layernorm.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Options of `tupe` (recipe [encoding_options.tupe]; pe/options.h).
struct TupeOptions {
  int max_len = 0;
  bool relative = true;
  std::vector<OptionField> Fields() {
    return {{.name = "max_len",
             .help = "position table rows (0 = the run's bound on every position id a batch can "
                     "carry)",
             .value = &max_len, .lo = 0},
            {.name = "relative",
             .help = "TUPE-R: add T5 relative buckets (32 buckets, max distance 128)",
             .value = &relative}};
  }
};

template <typename S>
class Tupe final : public PositionEncoding<S> {
 public:
  using Options = TupeOptions;
  // relative: the T5 bias of TUPE-R, or nullptr.
  Tupe(const EncodingShape& shape, const TupeOptions& opt,
       std::unique_ptr<PositionEncoding<S>> relative);
  std::string Name() const override { return "tupe"; }
  unsigned Sites() const override { return kSiteLogitTerm | kSiteLogitScale; }
  void Init(Rng& rng) override;
  std::vector<ParamRef<S>> Parameters() override;
  void Prepare(const std::vector<double>& pos, double max_distance) override;
  S LogitScale(const AttentionContext&, int) const override { return S(1 / std::sqrt(2.0)); }

  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* scores, long lds) const override;
  void LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const HeadQK<S>& qk, S* d_scores, long lds, const HeadQKGrad<S>& grad,
                         int task) override;
  void BeginBackward(int tasks) override;
  void EndBackward() override;

 private:
  int Row(double pos) const;

  int C_, H_, D_;
  std::unique_ptr<PositionEncoding<S>> relative_;
  Mat<S> table_, d_table_;            // [max_len, C]
  LayerNormParams<S> ln_, d_ln_;      // [C]
  Mat<S> u_q_, u_k_, d_u_q_, d_u_k_;  // [C, C]
  // Per forward pass: rows of the batch's positions.
  std::vector<int> rows_;
  Mat<S> x_, p_, pq_, pk_;  // [T, C]
  LayerNormCache<S> ln_cache_;
  std::vector<double> slots_;  // per task: d pq_h [T, D], d pk_h [T, D]
  int tasks_ = 0;
};

}  // namespace lexp
