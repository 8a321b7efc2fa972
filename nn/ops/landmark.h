// Landmark attention (Mohtashami & Jaggi 2023, arXiv:2305.16300): the sequence is cut into blocks
// of L tokens, each followed by a landmark token (rows r with (r + 1) mod (L + 1) = 0 of the
// model's inner sequence; the model inserts them, nn/model/transformer.cc), and attention is a
// grouped softmax. For query i in block b (its own landmark, if i is not it, lies ahead):
//   the last group  = the tokens of block b up to i, and the landmarks L_g of the blocks g < b;
//   group g < b     = the L tokens of block g;
//   p = softmax of the logits over the last group, s_g = softmax over group g;
//   weight of a token j of block b:  p_j;   of a token j of block g:  p_{L_g} s_g(j);
//   weight of a landmark:            0 (it gates its block, its value is never read).
// The weights sum to 1. With top_k > 0 (evaluation), each query keeps only the top_k blocks g < b
// whose landmark has the largest logit (ties: the earlier block), as the paper retrieves blocks at
// inference, and the others leave both softmaxes. With remap, retrieved blocks are then seen just
// before the query's block (their tokens keeping their offsets), so that no distance exceeds those
// of training, as the paper places them; the paper gives the k retrieved blocks k consecutive
// slots, here they share the one slot (a query's distances depend on (i, j) only, as a pattern's
// must), which is the paper's placement for k = 1. Without remap they keep their true distances.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "nn/position_hooks.h"

namespace lexp {

// The causal mask of a landmark sequence: a query sees every earlier row but its own block's
// landmark. The grouped softmax itself runs in the attention op (LandmarkSoftmaxRow).
class LandmarkPattern final : public AttentionPattern {
 public:
  LandmarkPattern(int block, int top_k, bool remap)
      : AttentionPattern(true), L_(block), top_k_(top_k), remap_(top_k > 0 && remap) {}
  std::string Name() const override { return "landmark"; }
  bool Contiguous() const override { return false; }
  bool Visible(int i, int j, int) const override {
    return j <= i && !(IsLandmark(j) && j / (L_ + 1) == i / (L_ + 1));
  }
  int LandmarkBlock() const override { return L_; }
  int LandmarkTopK() const override { return top_k_; }
  // Remapped (top_k > 0): every earlier block is seen where a retrieved block sits, just before
  // the query's block, its tokens keeping their offsets (distances stay within 2 (L + 1)).
  bool PlainDistance() const override { return !remap_; }
  double EffectiveDistance(int i, int j, const double* pos) const override {
    const int bi = i / (L_ + 1), bj = j / (L_ + 1);
    const double plain = pos[i] - pos[j];
    return !remap_ || bj >= bi ? plain : plain - (bi - bj - 1) * (L_ + 1);
  }
  bool IsLandmark(int r) const { return (r + 1) % (L_ + 1) == 0; }

 private:
  int L_, top_k_;
  bool remap_;
};

namespace landmark_detail {
inline int LandmarkRow(int g, int L) { return (g + 1) * (L + 1) - 1; }
}  // namespace landmark_detail

// Row i's grouped softmax. a: its logits over keys [0, n) (masked keys -inf; n > i); writes the
// value weights w and the group-normalised probabilities g (p over the last group, s_g over block
// g; 0 for keys outside every group kept). order: scratch.
template <typename S>
void LandmarkSoftmaxRow(int i, int L, int top_k, const S* a, int n, S* w, S* g,
                        std::vector<int>& order) {
  using landmark_detail::LandmarkRow;
  const int period = L + 1, b = i / period;
  std::fill(w, w + n, S(0));
  std::fill(g, g + n, S(0));
  order.resize(b);
  for (int k = 0; k < b; ++k) order[k] = k;
  int kept = b;
  if (top_k > 0 && b > top_k) {
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int x, int y) {
      const S ax = a[LandmarkRow(x, L)], ay = a[LandmarkRow(y, L)];
      return ax > ay || (ax == ay && x < y);
    });
    kept = top_k;
  }
  // The last group: block b's visible tokens and the kept landmarks.
  const int own0 = b * period, own1 = std::min(i + 1, own0 + L);  // own landmark excluded
  S mx = -std::numeric_limits<S>::infinity();
  for (int j = own0; j < own1; ++j) mx = std::max(mx, a[j]);
  for (int k = 0; k < kept; ++k) mx = std::max(mx, a[LandmarkRow(order[k], L)]);
  S sum = 0;
  for (int j = own0; j < own1; ++j) sum += (g[j] = std::exp(a[j] - mx));
  for (int k = 0; k < kept; ++k) {
    const int r = LandmarkRow(order[k], L);
    sum += (g[r] = std::exp(a[r] - mx));
  }
  for (int j = own0; j < own1; ++j) w[j] = (g[j] /= sum);
  for (int k = 0; k < kept; ++k) g[LandmarkRow(order[k], L)] /= sum;
  // Each kept block: its own softmax, gated by its landmark's probability.
  for (int k = 0; k < kept; ++k) {
    const int j0 = order[k] * period, j1 = j0 + L;
    const S gate = g[j1];
    S m2 = -std::numeric_limits<S>::infinity(), s2 = 0;
    for (int j = j0; j < j1; ++j) m2 = std::max(m2, a[j]);
    for (int j = j0; j < j1; ++j) s2 += (g[j] = std::exp(a[j] - m2));
    for (int j = j0; j < j1; ++j) w[j] = gate * (g[j] /= s2);
  }
}

// Forward: w_j = p_j (own tokens), w_j = p_{L_g} s_g(j) (block g), w_{L_g} = 0.
// Backward, from d_w (in d, over keys [0, n); replaced by d_a):
//   c_g = sum_{j in g} s_g(j) d_w_j  (the gradient of p_{L_g});
//   block g:     d_a_j = p_{L_g} s_g(j) (d_w_j - c_g);
//   last group:  with d_p = d_w (own tokens) or c_g (landmarks), d_a_j = p_j (d_p_j - sum p d_p).
// Every other key gets 0. g: LandmarkSoftmaxRow's (blocks left out have g = 0, so they give 0).
template <typename S>
void LandmarkSoftmaxBackwardRow(int i, int L, const S* g, int n, S* d) {
  using landmark_detail::LandmarkRow;
  const int period = L + 1, b = i / period;
  const int own0 = b * period, own1 = std::min(i + 1, own0 + L);
  S c = 0;
  for (int j = own0; j < own1; ++j) c += g[j] * d[j];
  for (int k = 0; k < b; ++k) {
    const int j0 = k * period, j1 = j0 + L;  // j1: the landmark
    const S gate = g[j1];
    S cg = 0;
    for (int j = j0; j < j1; ++j) cg += g[j] * d[j];
    for (int j = j0; j < j1; ++j) d[j] = gate * g[j] * (d[j] - cg);
    d[j1] = cg;  // d_p of the landmark, for the last group below
    c += gate * cg;
  }
  for (int j = own0; j < own1; ++j) d[j] = g[j] * (d[j] - c);
  for (int k = 0; k < b; ++k) {
    const int r = LandmarkRow(k, L);
    d[r] = g[r] * (d[r] - c);
  }
  for (int j = own1; j < n; ++j) d[j] = 0;
}

}  // namespace lexp
