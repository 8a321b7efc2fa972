#include "pe/t5.h"

#include <algorithm>
#include <cmath>

namespace lexp {

int T5Bucket(long rp, bool bidirectional, int num_buckets, int max_distance) {
  int offset = 0;
  long n;
  int N = num_buckets;
  if (bidirectional) {
    N /= 2;
    if (rp > 0) offset = N;
    n = std::labs(rp);
  } else {
    n = std::max(-rp, 0L);
  }
  const int exact = N / 2;
  if (n < exact) return offset + static_cast<int>(n);  // branch before the log (pitfall 12)
  const double v = std::log(static_cast<double>(n) / exact) /
                   std::log(static_cast<double>(max_distance) / exact) * (N - exact);
  return offset + std::min(N - 1, exact + static_cast<int>(v));
}

template <typename S>
T5Bias<S>::T5Bias(const EncodingShape& shape, const T5Options& opt)
    : H_(shape.n_heads),
      buckets_(opt.num_buckets),
      max_distance_(opt.max_distance),
      bidirectional_(!shape.causal),
      per_layer_(opt.per_layer) {
  LEXP_INPUT_CHECK(buckets_ >= 4 && buckets_ % 2 == 0,
                   "encoding 't5': num_buckets must be even and >= 4");
  LEXP_INPUT_CHECK(max_distance_ > buckets_ / 2,
                   "encoding 't5': max_distance must exceed num_buckets/2");
  const int layers = per_layer_ ? shape.n_layers : 1;
  table_.setZero(static_cast<long>(layers) * buckets_, H_);
  d_table_.setZero(table_.rows(), H_);
}

template <typename S>
void T5Bias<S>::Init(Rng& rng) {
  for (long i = 0; i < table_.size(); ++i) table_.data()[i] = static_cast<S>(0.1 * rng.Normal());
}

template <typename S>
void T5Bias<S>::Prepare(const std::vector<double>& /*pos*/, double max_distance) {
  const long need = static_cast<long>(std::ceil(max_distance)) + 1;
  if (need <= max_rp_) return;
  max_rp_ = need;
  bucket_of_.resize(2 * max_rp_ + 1);
  for (long rp = -max_rp_; rp <= max_rp_; ++rp)
    bucket_of_[rp + max_rp_] = T5Bucket(rp, bidirectional_, buckets_, max_distance_);
}

template <typename S>
int T5Bias<S>::BucketAt(const AttentionContext& ctx, int i, int j) const {
  const long rp = -std::lround(ctx.Distance(i, j));  // key - query
  LEXP_CHECK(std::labs(rp) <= max_rp_, "t5: distance beyond the range given to Prepare()");
  return bucket_of_[rp + max_rp_];
}

template <typename S>
void T5Bias<S>::AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                             const HeadQK<S>& /*qk*/, S* scores, long lds) const {
  const S* col = table_.data() + TableOffset(ctx.layer) + ctx.head;
  for (int i = i0; i < i1; ++i) {
    S* row = scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j) row[j - j0] += col[static_cast<long>(BucketAt(ctx, i, j)) * H_];
  }
}

template <typename S>
void T5Bias<S>::BeginBackward(int tasks) {
  slot_tasks_ = tasks;
  slots_.assign(static_cast<size_t>(tasks) * buckets_, 0.0);
}

// Forward: a_ij += table[bucket(i,j), h].  Backward: d_table[bucket(i,j), h] += d_a_ij.
template <typename S>
void T5Bias<S>::LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                                  const HeadQK<S>& /*qk*/, S* d_scores, long lds,
                                  const HeadQKGrad<S>& /*grad*/, int task) {
  slot_layer_ = ctx.layer;
  double* slot = slots_.data() + static_cast<long>(task) * buckets_;
  for (int i = i0; i < i1; ++i) {
    const S* row = d_scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j) slot[BucketAt(ctx, i, j)] += row[j - j0];
  }
}

template <typename S>
void T5Bias<S>::EndBackward() {
  S* g = d_table_.data() + TableOffset(slot_layer_);
  for (int task = 0; task < slot_tasks_; ++task) {
    const int h = task % H_;
    const double* slot = slots_.data() + static_cast<long>(task) * buckets_;
    for (int b = 0; b < buckets_; ++b) g[static_cast<long>(b) * H_ + h] += static_cast<S>(slot[b]);
  }
}

template <typename S>
std::vector<ParamRef<S>> T5Bias<S>::Parameters() {
  return {{"pe.t5.table",
           table_,
           d_table_,
           "layer,bucket,head",
           {static_cast<uint64_t>(table_.rows() / buckets_), static_cast<uint64_t>(buckets_),
            static_cast<uint64_t>(H_)}}};
}

template class T5Bias<float>;
template class T5Bias<double>;

}  // namespace lexp
