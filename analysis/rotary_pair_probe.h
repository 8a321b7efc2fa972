// Observes a rotary encoding's logits pair by pair (the per-dimension view of Liu et al. 2023,
// arXiv:2310.05209): for every visible (query i, key j) of a forward pass, the contribution of
// rotary pair k, c_k = scale (q_i,a k_j,a + q_i,b k_j,b) with q and k after rotation, and the
// supremum of that logit over distances, scale (sum_k |q_i,k| |k_j,k| + q_u . k_u) where u are the
// dimensions left unrotated (rope_partial: they add the same q.k at every distance).
// Per (layer, head, pair): the mean |c_k| over visible pairs nearer than `split` tokens and over
// those at `split` or more; per (layer, head): the largest supremum and the largest observed logit
// of a sequence, averaged over sequences. Every hook is forwarded unchanged to the observed
// encoding. Each (layer, head) has one slot, so forward one sequence per pass (the tasks of a layer
// are then its heads, each on one thread) and call EndSequence() after each: the statistics then do
// not depend on the thread count.
#pragma once

#include <memory>
#include <vector>

#include "pe/forwarding_encoding.h"

namespace lexp {

struct RotaryPairStats {
  int layers = 0, heads = 0, pairs = 0;
  std::vector<double> near_abs, far_abs;      // [L, H, P] mean |c_k|
  std::vector<double> near_count, far_count;  // [L, H] visible (i, j) counted
  std::vector<double> supremum, observed;     // [L, H] per-sequence max, mean over sequences
  int sequences = 0;
};

template <typename S>
class RotaryPairProbe final : public ForwardingEncoding<S> {
 public:
  // pairs: rotary pairs of a head; interleaved: pair layout (2k, 2k+1) instead of (k, k+P).
  RotaryPairProbe(std::unique_ptr<PositionEncoding<S>> inner, int layers, int heads, int pairs,
                  bool interleaved, double split);
  unsigned Sites() const override { return this->inner().Sites() | kSiteLogitTerm; }
  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* scores, long lds) const override;
  void EndSequence();
  // Means of what was observed so far.
  RotaryPairStats Stats() const;

 private:
  int L_, H_, P_;
  bool interleaved_;
  double split_;
  mutable std::vector<double> near_sum_, far_sum_, near_n_, far_n_, seq_sup_, seq_obs_;
  std::vector<double> sup_total_, obs_total_;
  int sequences_ = 0;
};

}  // namespace lexp
