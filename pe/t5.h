// T5 relative position bias: one learned scalar per (bucket, head) added to the logits; buckets are
// exact for small distances and logarithmic up to max_distance, saturating beyond (Raffel et al.
// 2020, arXiv:1910.10683; bucket rule of the reference code).
// Causal attention uses causal buckets, bidirectional attention bidirectional ones. As in T5 the
// table is shared by all layers (per_layer = true gives each layer its own). lexp keeps the
// 1/sqrt(D) on q.k for every encoding, so T5's "no scaling" is not reproduced.
#pragma once

#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Bucket of relative position rp = key - query (HF convention).
int T5Bucket(long rp, bool bidirectional, int num_buckets, int max_distance);

// Options of `t5` (recipe [encoding_options.t5]; pe/options.h).
struct T5Options {
  int num_buckets = 32;
  int max_distance = 128;
  bool per_layer = false;
  std::vector<OptionField> Fields() {
    return {{.name = "num_buckets",
             .help = "number of buckets, even (per direction halves when bidirectional)",
             .value = &num_buckets, .lo = 4},
            {.name = "max_distance",
             .help = "distance at which the log buckets end (> num_buckets / 2)",
             .value = &max_distance, .lo = 1},
            {.name = "per_layer", .help = "own table per layer (T5 shares one across layers)",
             .value = &per_layer}};
  }
};

template <typename S>
class T5Bias final : public PositionEncoding<S> {
 public:
  using Options = T5Options;
  T5Bias(const EncodingShape& shape, const T5Options& opt);
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
