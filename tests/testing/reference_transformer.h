// The textbook transformer built from lexp's ops in double, block by block, for tests whose
// reference changes what one block sees: Transformer-XL segment by segment with a constant memory
// (tests/nn/segment_recurrence_test.cc), a retrieved memory held fixed
// (tests/nn/knn_memory_test.cc), LongMem's side network beside its backbone
// (tests/nn/longmem_test.cc). It reads the weights of a Transformer<double> by name at every call,
// so finite differences that perturb the model's storage perturb it too.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "nn/model/transformer.h"
#include "nn/ops/cross_entropy.h"

namespace lexp::testing {

struct ReferenceWeights {
  MatD tok_emb;
  std::vector<BlockParams<double>> blocks;
  LayerNormParams<double> ln_f;
  LinearParams<double> head;
  std::map<std::string, RowVec<double>> extra;  // any other parameter, flat (e.g. a memory gate)
  // A side network's (LongMem): its blocks side<i> and final norm side.ln_f.
  std::vector<BlockParams<double>> side_blocks;
  LayerNormParams<double> side_ln_f;
};

inline ReferenceWeights ReadWeights(Transformer<double>& model) {
  const ModelConfig& cfg = model.config();
  std::map<std::string, ParamRef<double>> by_name;
  for (const auto& p : model.Parameters()) by_name.emplace(p.name, p);
  auto mat = [&](const std::string& n, long r, long c) {
    return MatD(ConstMatMap<double>(by_name.at(n).value, r, c));
  };
  auto row = [&](const std::string& n, long c) { return RowVec<double>(mat(n, 1, c)); };
  const long C = cfg.d_model, F = cfg.FF(), V = cfg.vocab;
  auto block = [&](const std::string& name) {
    const std::string p = name + ".";
    BlockParams<double> b;
    b.ln1 = {row(p + "ln1.g", C), row(p + "ln1.b", C)};
    b.ln2 = {row(p + "ln2.g", C), row(p + "ln2.b", C)};
    b.qkv = {mat(p + "attn.qkv.w", C, 3 * C), row(p + "attn.qkv.b", 3 * C)};
    b.proj = {mat(p + "attn.proj.w", C, C), row(p + "attn.proj.b", C)};
    b.fc1 = {mat(p + "mlp.fc1.w", C, F), row(p + "mlp.fc1.b", F)};
    b.fc2 = {mat(p + "mlp.fc2.w", F, C), row(p + "mlp.fc2.b", C)};
    return b;
  };
  ReferenceWeights w;
  w.tok_emb = mat("tok_emb", V, C);
  for (int l = 0; l < cfg.n_layers; ++l) w.blocks.push_back(block("layer" + std::to_string(l)));
  w.ln_f = {row("ln_f.g", C), row("ln_f.b", C)};
  w.head = {mat("head.w", C, V), row("head.b", V)};
  for (int i = 0; i < cfg.side.layers; ++i)
    w.side_blocks.push_back(block("side" + std::to_string(i)));
  if (cfg.side.Active()) w.side_ln_f = {row("side.ln_f.g", C), row("side.ln_f.b", C)};
  for (const auto& [name, p] : by_name)
    if (name.find("knn_gate") != std::string::npos) w.extra[name] = row(name, p.size);
  return w;
}

// What a test may do to a block's attention output att [B*R, C] (before the output projection),
// given the block's projections qkv [B*R, 3C] (before the encoding's transform) and the local
// attention's log-sum-exp per (sequence, head, query) lse [B*H*R].
using AttentionOutputHook =
    std::function<void(int layer, const MatD& qkv, const Vec<double>& lse, MatD& att)>;

// One pre-LN or post-LN block over x [B*R, C] (R rows per sequence at positions pos [R]) whose
// attention follows `pattern`.
inline MatD ReferenceBlock(const BlockParams<double>& p, PositionEncoding<double>& enc, int layer,
                           bool pre_ln, int B, int R, int H, const std::vector<double>& pos,
                           const AttentionPattern& pattern, const MatD& x,
                           const AttentionOutputHook& hook = nullptr) {
  const long C = x.cols();
  const int D = static_cast<int>(C) / H;
  LayerNormCache<double> ln;
  MatD a = x, qkv, att, y, mid, h, g, z;
  if (pre_ln) LayerNormForward(x, p.ln1, a, ln);
  LinearForward(a, p.qkv, qkv);
  MatD q = qkv.leftCols(C), k = qkv.middleCols(C, C), v = qkv.rightCols(C);
  for (int b = 0; b < B; ++b)
    for (int hd = 0; hd < H; ++hd) {
      AttentionContext ctx{layer, hd, H, D, R, pos.data(), &pattern, pattern.PlainDistance()};
      const long at = static_cast<long>(b) * R * C + hd * D;
      enc.TransformQK(ctx, true, q.data() + at, C);
      enc.TransformQK(ctx, false, k.data() + at, C);
    }
  AttentionCache<double> cache;
  cache.keep_lse = true;
  AttentionForward(q, k, v, AttentionShape{B, R, H, D}, pos, pattern, enc, layer, false, cache,
                   att);
  if (hook) hook(layer, qkv, cache.lse, att);
  LinearForward(att, p.proj, y);
  if (pre_ln) {
    mid = x + y;
    LayerNormForward(mid, p.ln2, h, ln);
  } else {
    z = x + y;
    LayerNormForward(z, p.ln1, mid, ln);
    h = mid;
  }
  LinearForward(h, p.fc1, z);
  GeluForward(z, g);
  LinearForward(g, p.fc2, y);
  if (pre_ln) return mid + y;
  z = mid + y;
  LayerNormForward(z, p.ln2, y, ln);
  return y;
}

// The final LayerNorm (the side network's with `side`), head and masked cross-entropy of x [rows,
// C]: the sum of -log p over the masked rows and their count.
inline std::pair<double, long> ReferenceHeadLoss(const ReferenceWeights& w, const MatD& x,
                                                 const std::vector<int>& targets,
                                                 const std::vector<uint8_t>& mask,
                                                 bool side = false) {
  LayerNormCache<double> ln;
  MatD hf, logits;
  LayerNormForward(x, side ? w.side_ln_f : w.ln_f, hf, ln);
  LinearForward(hf, w.head, logits);
  const auto ce =
      CrossEntropyForwardBackward<double>(logits, targets, mask, nullptr, nullptr, nullptr);
  return {ce.loss_sum, ce.count};
}

}  // namespace lexp::testing
