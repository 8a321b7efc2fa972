// Named capture sites: every intermediate tensor of a forward pass a researcher may want to read,
// under a stable name (the naming of TransformerLens's hook points, in lexp's words). Per sequence:
//
// clang-format off
//   layer{l}.resid_pre          [T, C]     residual stream entering block l
//   layer{l}.attn.q, .k, .v     [T, H, D]  the projections, before the encoding's q/k transform
//   layer{l}.attn.q_pe, .k_pe   [T, H, D]  q and k after it (what the logits use; = q, k without)
//   layer{l}.attn.logits        [H, T, T]  pre-softmax logits, -inf where masked
//   layer{l}.attn.pattern       [H, T, T]  attention probabilities
//   layer{l}.attn.z             [T, H, D]  the heads' outputs sum_j p_ij v_j (+ value term),
//                                          before the output projection
//   layer{l}.attn.out           [T, C]     the attention branch's output (after the projection)
//   layer{l}.mlp.hidden         [T, F]     the MLP's hidden activations, after the GELU
//   layer{l}.mlp.out            [T, C]     the MLP branch's output
//   layer{l}.resid_post         [T, C]     residual stream leaving block l (post-LN: after LN2)
//   final.ln                    [T, C]     the final LayerNorm's output, the head's input
// clang-format on
//
// The values are those of a forward pass with capture on and
// Transformer::set_capture_sites(true); reading them changes nothing the model computes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/model/transformer.h"

namespace lexp {

struct CaptureSite {
  std::string name;            // "layer0.attn.q"
  std::vector<uint64_t> dims;  // per sequence
  std::string axes;            // one name per dimension, e.g. "query,head,channel"
  std::string what;            // one line for lexp list sites
};

// Every site of a model of this shape, for sequences of T tokens, in forward order.
std::vector<CaptureSite> CaptureSites(const ModelConfig& cfg, int T);

// The names of the sites that match any glob (fnmatch: * ? [..]), in forward order. A glob that
// matches no site is an input error naming it and the available names.
std::vector<std::string> MatchCaptureSites(const ModelConfig& cfg,
                                           const std::vector<std::string>& globs,
                                           const std::string& key);

// The values of site `name` for sequence b of the last capturing forward (B sequences of T tokens),
// row-major in the site's dims, as float.
template <typename S>
std::vector<float> ReadCaptureSite(const Transformer<S>& model, const std::string& name, int b,
                                   int T);

}  // namespace lexp
