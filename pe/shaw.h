// Shaw, Uszkoreit & Vaswani 2018 (arXiv:1803.02155), relative position representations:
// learned vectors w^K_r, w^V_r of head width D for the clipped offset r = clip(j - i, -k, k)
// (tensor2tensor index r + k), one pair of tables per layer shared by its heads:
//   a_ij += q_i . w^K_r / sqrt(D)     (site 4)        o_i += sum_j p_ij w^V_r     (site 7)
// Everything farther than k looks like distance k, so the encoding saturates by construction.
// values = false keeps the key term only (the paper's ablation). Tables start N(0, 1/D).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Options of `shaw` (recipe [encoding_options.shaw]; pe/options.h).
struct ShawOptions {
  int clip = 16;
  bool values = true;
  std::vector<OptionField> Fields() {
    return {{.name = "clip",
             .help = "k: offsets j - i are clipped to [-k, k] (2k+1 learned vectors per table)",
             .value = &clip, .lo = 1},
            {.name = "values",
             .help = "also add relative value vectors to the output (false: keys only)",
             .value = &values}};
  }
};

template <typename S>
class Shaw final : public PositionEncoding<S> {
 public:
  using Options = ShawOptions;
  Shaw(const EncodingShape& shape, const ShawOptions& opt);
  std::string Name() const override { return "shaw"; }
  unsigned Sites() const override { return kSiteLogitTerm | (values_ ? kSiteValueTerm : 0u); }
  void Init(Rng& rng) override;
  std::vector<ParamRef<S>> Parameters() override;

  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* scores, long lds) const override;
  void LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const HeadQK<S>& qk, S* d_scores, long lds, const HeadQKGrad<S>& grad,
                         int task) override;
  void AddValueTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1, const S* p,
                    long ldp, S* out, long ldo) const override;
  void ValueTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1, const S* p,
                         long ldp, const S* d_out, long ldo, S* d_p, long ldd, int task) override;
  void BeginBackward(int tasks) override;
  void EndBackward() override;

  // Table row (0..2k) of the offset seen by query i at key j.
  int Index(const AttentionContext& ctx, int i, int j) const;
  int clip() const { return k_; }

 private:
  int Rows() const { return 2 * k_ + 1; }
  const S* KeyTable(int layer) const { return wk_.data() + static_cast<long>(layer) * Rows() * D_; }
  const S* ValueTable(int layer) const {
    return wv_.data() + static_cast<long>(layer) * Rows() * D_;
  }

  int k_, D_, L_;
  bool values_;
  Mat<S> wk_, wv_, d_wk_, d_wv_;  // [L * (2k+1), D]
  std::vector<double> slots_;     // per task: [2, 2k+1, D]
  int tasks_ = 0;
  std::atomic<int> slot_layer_{0};
};

}  // namespace lexp
