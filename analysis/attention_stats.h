// Per-query statistics of attention, computed from captured pre-softmax logits over the keys the
// query may see (masked keys carry -inf and are excluded; entropy computed before masking is a
// known mistake). Entropy H = -sum_j p_j ln p_j in nats; for n visible keys ln n - 2B <= H <= ln n
// when all logits lie in [-B, B] (LM-Infinite, Han et al. 2023, arXiv:2308.16137, Theorem 2).
#pragma once

#include <vector>

namespace lexp {

struct AttentionRowStats {
  double entropy = 0;     // nats, over visible keys
  double max_logit = 0;   // max over visible keys
  double mean_logit = 0;  // mean over visible keys
  int visible = 0;        // number of visible keys
  int nonfinite = 0;      // NaN or +inf logits: skipped like masked keys, so counted here
};

// logits: n values, -inf where the key is masked.
template <typename S>
AttentionRowStats RowStats(const S* logits, int n);

// Aggregates of one attention map ([T, T] logits of one sequence, layer and head).
struct AttentionMapStats {
  double entropy = 0, max_logit = 0, mean_logit = 0, log_visible = 0;  // means over query rows
  long nonfinite = 0;                                                  // NaN / +inf logits
  std::vector<double> entropy_by_query;                                // [T]
  std::vector<double> max_logit_by_query;                              // [T]
};

template <typename S>
AttentionMapStats MapStats(const S* logits, int T, long ld);

}  // namespace lexp
