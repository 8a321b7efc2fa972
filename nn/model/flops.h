// Matrix-product FLOPs of the transformer (a multiply-add counts 2), the compute axis of the
// claims about training cost (PoSE, GrowLength). Only the products are counted, as the reference
// benchmark counts them; the attention's products cost what the pattern lets each query see, so
// a causal mask counts the T (T + 1) / 2 visible pairs, a window fewer.
//
//   forward over B sequences of T tokens:
//     2 N_mm B T                                  projections, MLP and output head,
//                                                   N_mm = L (4 C^2 + 2 C F) + C V
//     + 4 D B L sum_h pairs_h(T)                  q.k and p.v of every head h, pairs_h(T) the
//                                                   (query, key) pairs head h sees in one sequence
//   training step = 3 x forward                   the backward runs two products per forward one
//
// Not counted: the embedding look-up, LayerNorm, softmax, GELU and the encoding's own arithmetic;
// a retrieved memory's or landmark rows' extra keys; weights a fine-tuning freezes (counted as
// trained, so LoRA's saving on weight gradients does not show).
#pragma once

#include <algorithm>

#include "nn/model/transformer.h"

namespace lexp {

// (query, key) pairs that head `head` of `heads` sees in one sequence of T tokens.
inline long VisiblePairs(const AttentionPattern& pattern, int head, int heads, int T) {
  const AttentionPattern& p = pattern.ForHead(head, heads);
  long pairs = 0;
  for (int i = 0; i < T; ++i) {
    int b, e;
    p.KeyBounds(i, T, &b, &e);
    if (p.Contiguous()) {
      pairs += std::max(0, e - b);
      continue;
    }
    for (int j = b; j < e; ++j) pairs += p.Visible(i, j, T) ? 1 : 0;
  }
  return pairs;
}

// Matrix-product FLOPs of one forward pass over B sequences of T tokens (above).
inline double ForwardMatmulFlops(const ModelConfig& cfg, const AttentionPattern& pattern, int B,
                                 int T) {
  const double C = cfg.d_model, F = cfg.FF(), V = cfg.vocab, L = cfg.n_layers;
  const double n_mm = L * (4 * C * C + 2 * C * F) + C * V;
  double pairs = 0;
  for (int h = 0; h < cfg.n_heads; ++h)
    pairs += static_cast<double>(VisiblePairs(pattern, h, cfg.n_heads, T));
  return 2 * n_mm * B * T + 4.0 * cfg.HeadDim() * B * L * pairs;
}

}  // namespace lexp
