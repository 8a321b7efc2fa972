// T5 relative position bias: one learned scalar per (bucket, head) added to the logits; buckets are
// exact for small distances and logarithmic up to max_distance, saturating beyond (Raffel et al.
// 2020, arXiv:1910.10683; bucket rule of the reference code).
// Causal attention uses causal buckets, bidirectional attention bidirectional ones. As in T5 the
// table is shared by all layers (per_layer = true gives each layer its own). lexp keeps the
// 1/sqrt(D) on q.k for every encoding, so T5's "no scaling" is not reproduced.
#pragma once

#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Bucket of relative position rp = key - query (HF convention).
int T5Bucket(long rp, bool bidirectional, int num_buckets, int max_distance);

template <typename S>
class T5Bias final : public PositionEncoding<S> {
 public:
  T5Bias(const EncodingShape& shape, const EncodingOptions& opt);
  std::string Name() const override { return "t5"; }
  unsigned Sites() const override { return kSiteLogitTerm; }
  void Init(Rng& rng) override;
  void Prepare(const std::vector<double>& pos, double max_distance) override;
  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* scores, long lds) const override;
  void LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const HeadQK<S>& qk, S* d_scores, long lds, const HeadQKGrad<S>& grad,
                         int task) override;
  void BeginBackward(int tasks) override;
  void EndBackward() override;
  std::vector<ParamRef<S>> Parameters() override;

 private:
  int BucketAt(const AttentionContext& ctx, int i, int j) const;
  long TableOffset(int layer) const {
    return per_layer_ ? static_cast<long>(layer) * buckets_ * H_ : 0;
  }
  int H_, buckets_, max_distance_;
  bool bidirectional_, per_layer_;
  Mat<S> table_, d_table_;      // [(L or 1) * buckets, H]
  std::vector<int> bucket_of_;  // bucket of rp, indexed rp + max_rp_
  long max_rp_ = -1;
  std::vector<double> slots_;  // [tasks, buckets] per-task gradient slots
  int slot_layer_ = 0, slot_tasks_ = 0;
};

}  // namespace lexp
