// Construction, parameters and the forward pass of the whole transformer (see transformer.h; the
// backward pass is transformer_backward.cc, incremental decoding transformer_decode.cc).
#include "nn/model/transformer.h"

#include <cmath>
#include <limits>

#include "nn/check.h"

namespace lexp {
namespace {

template <typename S>
void InitLinear(LinearParams<S>& p, int in, int out, Rng& rng, double gain) {
  // PyTorch's default fan-in bound, without random biases.
  const double bound = gain / std::sqrt(static_cast<double>(in));
  p.w.resize(in, out);
  for (long i = 0; i < p.w.size(); ++i) p.w.data()[i] = static_cast<S>(rng.Uniform(-bound, bound));
  p.b.setZero(out);
}

template <typename S>
void InitNorm(LayerNormParams<S>& p, int c) {
  p.g.setOnes(c);
  p.b.setZero(c);
}

template <typename S>
void ZeroLike(LinearParams<S>& g, const LinearParams<S>& p) {
  g.w.setZero(p.w.rows(), p.w.cols());
  g.b.setZero(p.b.size());
}
template <typename S>
void ZeroLike(LayerNormParams<S>& g, const LayerNormParams<S>& p) {
  g.g.setZero(p.g.size());
  g.b.setZero(p.b.size());
}

template <typename S>
void AddRefs(std::vector<ParamRef<S>>& out, const std::string& name, LinearParams<S>& p,
             LinearParams<S>& g) {
  out.push_back({name + ".w", p.w, g.w, "in,out"});
  out.push_back({name + ".b", p.b, g.b, "out"});
}
template <typename S>
void AddRefs(std::vector<ParamRef<S>>& out, const std::string& name, LayerNormParams<S>& p,
             LayerNormParams<S>& g) {
  out.push_back({name + ".g", p.g, g.g, "channel"});
  out.push_back({name + ".b", p.b, g.b, "channel"});
}

}  // namespace

template <typename S>
Transformer<S>::Transformer(const ModelConfig& cfg, PositionEncoding<S>* enc)
    : cfg_(cfg), enc_(enc), pattern_(cfg.causal) {
  LEXP_CHECK(cfg.vocab > 0, "model: vocabulary size must be positive");
  LEXP_CHECK(cfg.d_model > 0 && cfg.n_heads > 0 && cfg.d_model % cfg.n_heads == 0,
             "model: d_model must be a positive multiple of n_heads");
  LEXP_CHECK(cfg.n_layers > 0, "model: n_layers must be positive");
  LEXP_CHECK(enc != nullptr, "model: an encoding is required (use 'nope' for none)");
  const int C = cfg.d_model, F = cfg.FF(), V = cfg.vocab;
  const int side = cfg.side.layers;
  if (cfg.side.Active()) {
    LEXP_CHECK(side <= cfg.n_layers && cfg.n_layers % side == 0,
               "model: the backbone's layers must be a multiple of the side network's");
    LEXP_CHECK(cfg.side.memory_layer >= -1 && cfg.side.memory_layer < side,
               "model: the side network's memory layer must be one of its blocks (or -1)");
    LEXP_CHECK(cfg.landmark_block == 0, "model: a side network takes no landmarks");
    LEXP_CHECK(!cfg.knn.Active() || cfg.knn.layer == cfg.n_layers + cfg.side.memory_layer,
               "model: with a side network, the memory is its memory layer's");
    // The side's memory reads the keys and values of the backbone block it copies.
    if (cfg.side.memory_layer >= 0) {
      cfg_.knn.layer = cfg.n_layers + cfg.side.memory_layer;
      cfg_.knn.source_layer = cfg.SideSource(cfg.side.memory_layer);
    }
  }
  p_.tok_emb.setZero(V, C);
  p_.blocks.resize(cfg.n_layers + side);
  for (auto& b : p_.blocks) {
    InitNorm(b.ln1, C);
    InitNorm(b.ln2, C);
    b.qkv.w.setZero(C, 3 * C);
    b.qkv.b.setZero(3 * C);
    b.proj.w.setZero(C, C);
    b.proj.b.setZero(C);
    b.fc1.w.setZero(C, F);
    b.fc1.b.setZero(F);
    b.fc2.w.setZero(F, C);
    b.fc2.b.setZero(C);
  }
  InitNorm(p_.ln_f, C);
  p_.head.w.setZero(C, V);
  p_.head.b.setZero(V);
  if (cfg.side.Active()) InitNorm(p_.side_ln_f, C);
  g_ = p_;
  ZeroGrad();
  cache_.resize(cfg.n_layers + side);
  xs_.resize(cfg.n_layers + 1);
  ys_.resize(side + 1);
  if (cfg.landmark_block > 0) {
    LEXP_CHECK(cfg.causal && cfg.landmark_top_k >= 0, "model: landmark attention is causal");
    LEXP_CHECK(!enc->Uses(kSiteEmbedding),
               "model: landmark attention takes encodings that act inside attention (the "
               "landmark rows have no position of a token to embed)");
    landmark_train_ = std::make_unique<LandmarkPattern>(cfg.landmark_block, 0, false);
    landmark_eval_ = std::make_unique<LandmarkPattern>(cfg.landmark_block, cfg.landmark_top_k,
                                                       cfg.landmark_remap);
    landmark_emb_.setZero(cfg.d_model);
    landmark_emb_grad_.setZero(cfg.d_model);
  }
  if (cfg_.knn.Active()) {
    LEXP_CHECK(cfg_.knn.layer < cfg.n_layers + side && cfg_.knn.top_k >= cfg_.knn.chunk &&
                   cfg_.knn.chunk >= 1 && cfg_.knn.memory >= 0 && cfg_.knn.crossbatch >= 1,
               "model: the memory layer must be one of the layers, with top_k >= chunk >= 1, "
               "crossbatch >= 1");
    LEXP_CHECK(cfg_.knn.source_layer < 0 || !cfg_.knn.memory_gradient,
               "model: a memory of another layer's keys and values is read-only");
    LEXP_CHECK(cfg.causal, "model: a retrieved memory holds earlier context (causal layout)");
    knn_gate_.setZero(cfg.n_heads);  // g_h = sigmoid(0) = 1/2: both branches at first
    knn_gate_grad_.setZero(cfg.n_heads);
  }
}

template <typename S>
void Transformer<S>::Init(Rng& rng) {
  const int C = cfg_.d_model, F = cfg_.FF(), V = cfg_.vocab;
  // Residual projections are scaled by 1/sqrt(2L) (GPT-2) so the stream's variance stays bounded.
  const double resid_gain = 1.0 / std::sqrt(2.0 * cfg_.n_layers);
  for (long i = 0; i < p_.tok_emb.size(); ++i) p_.tok_emb.data()[i] = static_cast<S>(rng.Normal());
  for (auto& b : p_.blocks) {
    InitNorm(b.ln1, C);
    InitNorm(b.ln2, C);
    InitLinear(b.qkv, C, 3 * C, rng, 1.0);
    InitLinear(b.proj, C, C, rng, resid_gain);
    InitLinear(b.fc1, C, F, rng, 1.0);
    InitLinear(b.fc2, F, C, rng, resid_gain);
  }
  InitNorm(p_.ln_f, C);
  InitLinear(p_.head, C, V, rng, 1.0);
  if (cfg_.side.Active()) InitNorm(p_.side_ln_f, C);
  // A landmark is one more token: its embedding is drawn as the others are.
  for (long i = 0; i < landmark_emb_.size(); ++i)
    landmark_emb_[i] = static_cast<S>(rng.Normal());
  Rng pe_rng = rng.Split("pe");
  enc_->Init(pe_rng);
}

template <typename S>
void Transformer<S>::CopyBackboneIntoSide() {
  LEXP_CHECK(cfg_.side.Active(), "model: no side network to copy the backbone into");
  for (int i = 0; i < cfg_.side.layers; ++i)
    p_.blocks[cfg_.n_layers + i] = p_.blocks[cfg_.SideSource(i)];
  p_.side_ln_f = p_.ln_f;
}

template <typename S>
void Transformer<S>::ZeroGrad() {
  g_.tok_emb.setZero(p_.tok_emb.rows(), p_.tok_emb.cols());
  g_.blocks.resize(p_.blocks.size());
  for (size_t l = 0; l < p_.blocks.size(); ++l) {
    ZeroLike(g_.blocks[l].ln1, p_.blocks[l].ln1);
    ZeroLike(g_.blocks[l].ln2, p_.blocks[l].ln2);
    ZeroLike(g_.blocks[l].qkv, p_.blocks[l].qkv);
    ZeroLike(g_.blocks[l].proj, p_.blocks[l].proj);
    ZeroLike(g_.blocks[l].fc1, p_.blocks[l].fc1);
    ZeroLike(g_.blocks[l].fc2, p_.blocks[l].fc2);
  }
  ZeroLike(g_.ln_f, p_.ln_f);
  ZeroLike(g_.head, p_.head);
  ZeroLike(g_.side_ln_f, p_.side_ln_f);
  knn_gate_grad_.setZero(knn_gate_.size());
  landmark_emb_grad_.setZero(landmark_emb_.size());
  for (auto& r : enc_->Parameters()) std::fill(r.grad, r.grad + r.size, S(0));
}

template <typename S>
std::vector<ParamRef<S>> Transformer<S>::Parameters() {
  std::vector<ParamRef<S>> out;
  // Backbone blocks are layer<l>, side blocks side<i>.
  auto block_name = [&](int l) {
    return l < cfg_.n_layers ? "layer" + std::to_string(l)
                             : "side" + std::to_string(l - cfg_.n_layers);
  };
  out.push_back({"tok_emb", p_.tok_emb, g_.tok_emb, "token,channel"});
  for (size_t l = 0; l < p_.blocks.size(); ++l) {
    const std::string n = block_name(static_cast<int>(l));
    auto& pb = p_.blocks[l];
    auto& gb = g_.blocks[l];
    AddRefs(out, n + ".ln1", pb.ln1, gb.ln1);
    AddRefs(out, n + ".attn.qkv", pb.qkv, gb.qkv);
    AddRefs(out, n + ".attn.proj", pb.proj, gb.proj);
    AddRefs(out, n + ".ln2", pb.ln2, gb.ln2);
    AddRefs(out, n + ".mlp.fc1", pb.fc1, gb.fc1);
    AddRefs(out, n + ".mlp.fc2", pb.fc2, gb.fc2);
  }
  AddRefs(out, std::string("ln_f"), p_.ln_f, g_.ln_f);
  AddRefs(out, std::string("head"), p_.head, g_.head);
  if (cfg_.side.Active()) AddRefs(out, std::string("side.ln_f"), p_.side_ln_f, g_.side_ln_f);
  if (cfg_.landmark_block > 0)
    out.push_back({"landmark_emb", landmark_emb_, landmark_emb_grad_, "channel"});
  if (cfg_.knn.Active() && !cfg_.knn.softmax_merge)
    out.push_back(
        {block_name(cfg_.knn.layer) + ".attn.knn_gate", knn_gate_, knn_gate_grad_, "head"});
  for (auto& r : enc_->Parameters()) out.push_back(r);
  return out;
}

// A fused block (BlockForward) runs groups of about kFusedBlockRows rows (whole sequences), when
// there are at least kFusedBlockMinGroups groups to share among the threads. Small groups keep the
// threads' last tasks short: with 256 rows (16 groups of a T step) a thread waited at the region's
// end for about 5% of it, with 128 rows for about 1% (measured on 2 cores).
namespace {
constexpr long kFusedBlockRows = 128;
constexpr long kFusedBlockMinGroups = 8;
long FusedGroup(int T) { return std::max(1L, kFusedBlockRows / T); }
}  // namespace

template <typename S>
bool Transformer<S>::FusesBlocks(int B, int T) {
  // A group is at most kRowGrain rows (the MLP's per-thread hidden rows are sized for that), and
  // a whole part of the op-by-op pass's chunks.
  return T <= kRowGrain && kRowGrain % T == 0 && B / FusedGroup(T) >= kFusedBlockMinGroups;
}

template <typename S>
void Transformer<S>::ApplyQKTransform(int l, std::initializer_list<QKRows> targets, int B, int T,
                                      long stride, const std::vector<double>& pos, bool backward,
                                      int first_row) {
  const long per_target = static_cast<long>(B) * cfg_.n_heads;
  const int H = cfg_.n_heads;
  ParallelFor(static_cast<long>(targets.size()) * per_target, [&](long t) {
    const QKRows& target = targets.begin()[t / per_target];
    const long task = t % per_target;
    QKTransformTask(l, target, static_cast<int>(task / H), static_cast<int>(task % H), T, stride,
                    pos, backward, first_row);
  });
}

template <typename S>
void Transformer<S>::QKTransformTask(int l, const QKRows& target, int b, int h, int T, long stride,
                                     const std::vector<double>& pos, bool backward,
                                     int first_row) {
  const int H = cfg_.n_heads, D = cfg_.HeadDim();
  const long C = cfg_.d_model;
  AttentionContext ctx{
      l, h, H, D, T, pos.data(), &ActivePattern(), ActivePattern().PlainDistance()};
  ctx.first_row = first_row;
  S* x = target.m->data() + static_cast<long>(b) * stride * C + static_cast<long>(h) * D;
  if (backward)
    enc_->TransformQKBackward(ctx, target.is_query, x, C);
  else
    enc_->TransformQK(ctx, target.is_query, x, C);
}

// The block before attention, one chunk of rows at a time in one parallel region: a_in = LN1(x)
// (pre-LN) or x, the fused projection c.qkv, and (split) its q, k and v columns copied out.
template <typename S>
void Transformer<S>::BlockQkv(int l, const Mat<S>& x_in, BlockCache<S>& c, bool split) {
  BlockQkvSetup(l, x_in, c, split);
  ParallelChunks(x_in.rows(), kRowGrain,
                 [&](long r0, long r1) { BlockQkvRows(l, x_in, c, split, r0, r1); });
}

template <typename S>
void Transformer<S>::BlockQkvSetup(int l, const Mat<S>& x_in, BlockCache<S>& c, bool split) {
  const long N = x_in.rows(), C = cfg_.d_model;
  if (cfg_.pre_ln) LayerNormResize(x_in, c.a_in, c.ln1);
  Resize(c.qkv, N, 3 * C);
  if (split) {
    Resize(c.q, N, C);
    Resize(c.k, N, C);
    Resize(c.v, N, C);
  }
  qkv_layer_.Prepare(p_.blocks[l].qkv);
}

template <typename S>
void Transformer<S>::BlockQkvRows(int l, const Mat<S>& x_in, BlockCache<S>& c, bool split, long r0,
                                  long r1) {
  const long n = r1 - r0, C = cfg_.d_model;
  const Mat<S>& a_in = cfg_.pre_ln ? c.a_in : x_in;
  if (cfg_.pre_ln) LayerNormRows(x_in, p_.blocks[l].ln1, c.a_in, c.ln1, r0, r1);
  LinearRows(a_in.data() + r0 * C, n, qkv_layer_, c.qkv.data() + r0 * 3 * C);
  if (split) {
    const auto rows = c.qkv.middleRows(r0, n);
    c.q.middleRows(r0, n) = rows.leftCols(C);
    c.k.middleRows(r0, n) = rows.middleCols(C, C);
    c.v.middleRows(r0, n) = rows.rightCols(C);
  }
}

// The block after attention, from its output c.att: projection, residual, MLP, residual (pre-LN:
// x_mid = x + proj, x_out = x_mid + MLP(LN2(x_mid)); post-LN: x_mid = LN1(x + proj),
// x_out = LN2(x_mid + MLP(x_mid))). Every step is row by row, so the whole block runs one chunk of
// rows at a time in one parallel region, each chunk's rows in cache from the projection to the
// last residual. x_out may be x_in itself.
template <typename S>
void Transformer<S>::BlockAfterAttention(int l, const Mat<S>& x_in, BlockCache<S>& c, Mat<S>& x_out,
                                         bool keep_for_backward) {
  const AfterAttention pass = BlockAfterAttentionSetup(l, x_in, c, x_out, keep_for_backward);
  ParallelChunks(x_in.rows(), kRowGrain, [&](long r0, long r1) {
    BlockAfterAttentionRows(l, x_in, c, x_out, pass, r0, r1);
  });
}

template <typename S>
typename Transformer<S>::AfterAttention Transformer<S>::BlockAfterAttentionSetup(
    int l, const Mat<S>& x_in, BlockCache<S>& c, Mat<S>& x_out, bool keep_for_backward) {
  auto& p = p_.blocks[l];
  const long N = x_in.rows(), C = cfg_.d_model, F = cfg_.FF();
  AfterAttention pass;
  pass.keep_branches = capture_sites_ && c.attn.capture_logits;
  // Without a backward pass nothing between the sums is kept: pre-LN sums straight into x_out and
  // normalises into LN1's output (free by now), and the MLP keeps no hidden rows. The sums are the
  // same.
  pass.lean = !keep_for_backward;
  pass.mid = cfg_.pre_ln && pass.lean ? &x_out : &c.x_mid;
  pass.m_in = cfg_.pre_ln && pass.lean ? &c.a_in : &c.m_in;
  Mat<S>& mid = *pass.mid;
  Mat<S>& m_in = *pass.m_in;
  Resize(c.tmp, N, C);
  Resize(mid, N, C);
  if (cfg_.pre_ln) {
    LayerNormResize(mid, m_in, c.ln2);
  } else {
    LayerNormResize(c.tmp, c.x_mid, c.ln1);
    Resize(c.m_in, N, C);
    Resize(c.a_in, N, C);
    LayerNormResize(c.a_in, x_out, c.ln2);
  }
  if (!pass.lean) {
    Resize(c.g, N, F);
    Resize(c.gelu_slope, N, F);
  }
  if (pass.keep_branches) {
    Resize(c.attn_out, N, C);
    Resize(c.mlp_out, N, C);
  }
  Resize(x_out, N, C);
  proj_layer_.Prepare(p.proj);
  fc1_layer_.Prepare(p.fc1);
  fc2_layer_.Prepare(p.fc2);
  return pass;
}

template <typename S>
void Transformer<S>::BlockAfterAttentionRows(int l, const Mat<S>& x_in, BlockCache<S>& c,
                                             Mat<S>& x_out, const AfterAttention& pass, long r0,
                                             long r1) {
  auto& p = p_.blocks[l];
  const long n = r1 - r0, C = cfg_.d_model, F = cfg_.FF();
  const bool lean = pass.lean, keep_branches = pass.keep_branches;
  Mat<S>& mid = *pass.mid;
  Mat<S>& m_in = *pass.m_in;
  auto rows = [&](Mat<S>& m) { return m.middleRows(r0, n); };
  LinearRows(c.att.data() + r0 * C, n, proj_layer_, c.tmp.data() + r0 * C);
  if (keep_branches) rows(c.attn_out) = rows(c.tmp);
  if (cfg_.pre_ln) {
    rows(mid) = x_in.middleRows(r0, n) + rows(c.tmp);
    LayerNormRows(mid, p.ln2, m_in, c.ln2, r0, r1);
  } else {
    rows(c.tmp) += x_in.middleRows(r0, n);
    LayerNormRows(c.tmp, p.ln1, c.x_mid, c.ln1, r0, r1);
    rows(c.m_in) = rows(c.x_mid);
  }
  MlpRows(m_in.data() + r0 * C, n, fc1_layer_, fc2_layer_, mlp_hidden_.local(),
          lean ? nullptr : c.g.data() + r0 * F, lean ? nullptr : c.gelu_slope.data() + r0 * F,
          c.tmp.data() + r0 * C);
  if (keep_branches) rows(c.mlp_out) = rows(c.tmp);
  if (cfg_.pre_ln) {
    rows(x_out) = rows(mid) + rows(c.tmp);
  } else {
    rows(c.tmp) += rows(c.x_mid);
    // c.a_in is free in post-LN (attention reads x_in); it holds LN2's input.
    rows(c.a_in) = rows(c.tmp);
    LayerNormRows(c.a_in, p.ln2, x_out, c.ln2, r0, r1);
  }
}

template <typename S>
BlockCache<S>& Transformer<S>::BlockForward(int l, const Mat<S>& x_in, Mat<S>& x_out,
                                            bool training) {
  // Training keeps every layer's activations for Backward, capture every layer's attention; a plain
  // evaluation needs one layer's at a time, so every layer works in the same cache.
  const bool capture = cache_[l].attn.capture_logits;
  const bool keep = training || capture;
  auto& c = keep ? cache_[l] : cache_[0];
  const int el = EncodingLayer(l);
  const AttentionShape sh{B_, T_, cfg_.n_heads, cfg_.HeadDim()};
  const bool knn = l == cfg_.knn.layer;
  c.attn.keep_lse = knn && cfg_.knn.softmax_merge;
  const bool qk_transform = enc_->Uses(kSiteQKTransform);
  const bool keep_after = training || (capture && capture_sites_);
  // Every step of a block is row by row except attention, which reads its own sequence's rows: with
  // enough sequences the whole block runs a group of sequences at a time in one parallel region,
  // the group's rows in cache from LN1 to the last residual and no hand-off between the steps. A
  // group is a whole part of a step-by-step chunk (FusesBlocks), so a product's kernel sees every
  // row in the same row block: the bits of the step-by-step regions.
  if (fuse_blocks_ && !knn && !enc_->Uses(kSiteHeadMix) && FusesBlocks(B_, T_)) {
    ++fused_passes_;
    const long group = FusedGroup(T_);
    BlockQkvSetup(l, x_in, c, /*split=*/true);
    AttentionForwardSetup(sh, pos_, ActivePattern(), keep, c.attn, c.att);
    const AfterAttention pass = BlockAfterAttentionSetup(l, x_in, c, x_out, keep_after);
    ParallelChunks(B_, group, [&](long b0, long b1) {
      BlockQkvRows(l, x_in, c, /*split=*/true, b0 * T_, b1 * T_);
      for (long t = b0 * sh.H; t < b1 * sh.H; ++t) {
        const int b = static_cast<int>(t / sh.H), h = static_cast<int>(t % sh.H);
        if (qk_transform) {
          QKTransformTask(el, {&c.q, true}, b, h, T_, T_, pos_, false, 0);
          QKTransformTask(el, {&c.k, false}, b, h, T_, T_, pos_, false, 0);
        }
        AttentionForwardTask(c.q, c.k, c.v, sh, pos_, ActivePattern(), *enc_, el, keep, c.attn,
                             c.att, static_cast<const Mat<S>*>(nullptr), t);
      }
      BlockAfterAttentionRows(l, x_in, c, x_out, pass, b0 * T_, b1 * T_);
    });
    if (keep_kv_ && !training && l < static_cast<int>(kept_k_.size())) {
      kept_k_[l] = c.k;
      kept_v_[l] = c.v;
    }
    return c;
  }
  BlockQkv(l, x_in, c, /*split=*/true);
  if (qk_transform) {
    ApplyQKTransform(el, {{&c.q, true}, {&c.k, false}}, B_, T_, T_, pos_, false);
  }
  AttentionForward(c.q, c.k, c.v, sh, pos_, ActivePattern(), *enc_, el, keep, c.attn, c.att);
  if (keep_kv_ && !training && l < static_cast<int>(kept_k_.size())) {
    kept_k_[l] = c.k;  // the keys as attention read them (after site 3), for decoding
    kept_v_[l] = c.v;
  }
  if (knn) KnnMerge(c, training);
  BlockAfterAttention(l, x_in, c, x_out, keep_after);
  return c;
}

template <typename S>
void Transformer<S>::SideForward(bool training) {
  const int L = cfg_.n_layers, r = cfg_.SideReduction();
  ys_[0] = xs_[0];
  for (int i = 0; i < cfg_.side.layers; ++i) {
    BlockForward(L + i, ys_[i], ys_[i + 1], training);
    // y_{i+1} = Side_i(y_i) + (h_{r(i+1)} - h_{ri}): what its backbone blocks added.
    ParallelChunks(ys_[i + 1].rows(), kRowGrain, [&](long r0, long r1) {
      ys_[i + 1].middleRows(r0, r1 - r0) +=
          xs_[r * (i + 1)].middleRows(r0, r1 - r0) - xs_[r * i].middleRows(r0, r1 - r0);
    });
  }
  LayerNormForward(ys_[cfg_.side.layers], p_.side_ln_f, hf_, lnf_cache_);
}

template <typename S>
void Transformer<S>::KnnMerge(BlockCache<S>& c, bool training) {
  const int H = cfg_.n_heads, D = cfg_.HeadDim(), T = T_;
  KnnMemoryForward(c.qkv, B_, T, H, ActivePattern(), cfg_.knn, knn_,
                   training ? cfg_.knn.crossbatch : 1,
                   cfg_.knn.source_layer >= 0 ? &mem_qkv_ : nullptr);
  if (training) knn_local_ = c.att;
  ParallelChunks(c.att.rows(), kRowGrain, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r)
      for (int h = 0; h < H; ++h) {
        const long idx = ((r / T) * H + h) * T + r % T;
        const S lse_mem = knn_.lse[idx];
        if (lse_mem == -std::numeric_limits<S>::infinity()) continue;  // no memory yet
        auto out = c.att.row(r).segment(h * D, D);
        const auto mem = knn_.out.row(r).segment(h * D, D);
        // gate: o = g o_mem + (1 - g) o_loc; softmax: o = w o_loc + (1 - w) o_mem.
        const S w = cfg_.knn.softmax_merge
                        ? S(1) / (S(1) + std::exp(lse_mem - c.attn.lse[idx]))
                        : S(1) - S(1) / (S(1) + std::exp(-knn_gate_[h]));
        out = w * out + (S(1) - w) * mem;
      }
  });
}

template <typename S>
void Transformer<S>::Forward(const std::vector<int>& tokens, int B, int T,
                             const std::vector<double>& pos, bool training, bool capture,
                             Mat<S>& logits) {
  const PrecisionScope precision(cfg_.precision);
  LEXP_CHECK(static_cast<long>(tokens.size()) == static_cast<long>(B) * T,
             "model: tokens size is not B*T");
  LEXP_CHECK(static_cast<int>(pos.size()) == T, "model: position ids size is not T");
  const bool landmarks = cfg_.landmark_block > 0;
  B_ = B;
  T_real_ = T;
  T_ = landmarks ? LandmarkLength(T) : T;
  for (auto& c : cache_) c.attn.capture_logits = capture;
  // Keys and values kept for DecodeStartFromForward (an evaluation pass only).
  const bool keep_kv = keep_kv_ && !training && CanDecodeFromForward();
  kept_k_.resize(keep_kv ? cfg_.n_layers : 0);
  kept_v_.resize(keep_kv ? cfg_.n_layers : 0);
  kept_B_ = keep_kv ? B : 0;
  kept_T_ = keep_kv ? T : 0;
  if (landmarks) {
    // The inner sequence: a landmark row after every landmark_block tokens. Token t keeps its
    // position and moves past the t / landmark_block landmarks before it; a landmark follows its
    // block's last token (identity positions: the inner rows 0..T_-1).
    const int Lb = cfg_.landmark_block;
    pos_.resize(T_);
    for (int t = 0; t < T; ++t) {
      pos_[LandmarkRowOf(t)] = pos[t] + t / Lb;
      if ((t + 1) % Lb == 0) pos_[LandmarkRowOf(t) + 1] = pos[t] + t / Lb + 1;
    }
    landmark_active_ = training ? landmark_train_.get() : landmark_eval_.get();
    EmbeddingForward(tokens, p_.tok_emb, land_x_);
    Resize(xs_[0], static_cast<long>(B) * T_, cfg_.d_model);
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t < T; ++t)
        xs_[0].row(static_cast<long>(b) * T_ + LandmarkRowOf(t)) =
            land_x_.row(static_cast<long>(b) * T + t);
      for (int g = 0; g < T / cfg_.landmark_block; ++g)
        xs_[0].row(static_cast<long>(b) * T_ + (g + 1) * (cfg_.landmark_block + 1) - 1) =
            landmark_emb_;
    }
  } else {
    pos_ = pos;
    EmbeddingForward(tokens, p_.tok_emb, xs_[0]);
  }
  enc_->Prepare(pos_, ActivePattern().MaxDistance(PositionSpan(pos_)));
  if (enc_->Uses(kSiteEmbedding)) enc_->AddEmbedding(pos_, tokens, B, xs_[0]);
  // Backward and the residual read-out need every stream (and so does a side network, which reads
  // the backbone's); a plain evaluation alternates two.
  const bool side = cfg_.side.Active();
  const bool all_streams = training || capture || keep_residuals_ || side;
  auto stream = [&](int l) -> Mat<S>& { return all_streams ? xs_[l] : xs_[l % 2]; };
  for (int l = 0; l < cfg_.n_layers; ++l) {
    // A side network's backbone is frozen: it keeps nothing for a backward pass.
    const BlockCache<S>& c = BlockForward(l, stream(l), stream(l + 1), training && !side);
    if (side && l == cfg_.knn.source_layer) mem_qkv_ = c.qkv;  // the side memory's bank
  }
  if (side) {
    SideForward(training);
  } else if (landmarks) {
    RealRows(stream(cfg_.n_layers), B, T, land_x_);  // the landmarks' outputs are never read
    LayerNormForward(land_x_, p_.ln_f, hf_, lnf_cache_);
    if (!training && all_streams) KeepRealTokensOnly(B, T, capture);
  } else {
    LayerNormForward(stream(cfg_.n_layers), p_.ln_f, hf_, lnf_cache_);
  }
  LinearForward(hf_, p_.head, logits);
  landmark_active_ = nullptr;
}

template <typename S>
void Transformer<S>::RealRows(const Mat<S>& inner, int B, int T, Mat<S>& out) const {
  Resize(out, static_cast<long>(B) * T, inner.cols());
  const long Ti = LandmarkLength(T);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      out.row(static_cast<long>(b) * T + t) = inner.row(b * Ti + LandmarkRowOf(t));
}

// The maps of the real queries over the real keys (a landmark's weight is 0, so a row still sums
// to 1) and the streams of the real tokens, so that every reader of a pass sees its T tokens.
template <typename S>
void Transformer<S>::KeepRealTokensOnly(int B, int T, bool capture) {
  const long Ti = LandmarkLength(T), H = cfg_.n_heads;
  Mat<S> tmp;
  for (auto& x : xs_) {
    if (x.rows() != B * Ti) continue;
    RealRows(x, B, T, tmp);
    x.swap(tmp);
  }
  if (!capture) return;
  for (auto& c : cache_)
    for (Mat<S>* m : {&c.attn.probs, &c.attn.logits}) {
      if (m->rows() != B * H * Ti) continue;
      Resize(tmp, B * H * T, T);
      for (long task = 0; task < B * H; ++task)
        for (int t = 0; t < T; ++t)
          for (int u = 0; u < T; ++u)
            tmp(task * T + t, u) = (*m)(task * Ti + LandmarkRowOf(t), LandmarkRowOf(u));
      m->swap(tmp);
    }
}

template class Transformer<float>;
template class Transformer<double>;

}  // namespace lexp
