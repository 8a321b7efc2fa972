// Forward and backward of the whole transformer (see transformer.h).
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

template <typename S>
void Transformer<S>::ApplyQKTransform(int l, std::initializer_list<QKRows> targets, int B, int T,
                                      long stride, const std::vector<double>& pos, bool backward,
                                      int first_row) {
  const int H = cfg_.n_heads, D = cfg_.HeadDim();
  const long C = cfg_.d_model, per_target = static_cast<long>(B) * H;
  ParallelFor(static_cast<long>(targets.size()) * per_target, [&](long t) {
    const QKRows& target = targets.begin()[t / per_target];
    Mat<S>& m = *target.m;
    const bool is_query = target.is_query;
    const long task = t % per_target;
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    AttentionContext ctx{
        l, h, H, D, T, pos.data(), &ActivePattern(), ActivePattern().PlainDistance()};
    ctx.first_row = first_row;
    S* x = m.data() + static_cast<long>(b) * stride * C + static_cast<long>(h) * D;
    if (backward)
      enc_->TransformQKBackward(ctx, is_query, x, C);
    else
      enc_->TransformQK(ctx, is_query, x, C);
  });
}

// The block before attention, one chunk of rows at a time in one parallel region: a_in = LN1(x)
// (pre-LN) or x, the fused projection c.qkv, and (split) its q, k and v columns copied out.
template <typename S>
void Transformer<S>::BlockQkv(int l, const Mat<S>& x_in, BlockCache<S>& c, bool split) {
  auto& p = p_.blocks[l];
  const long N = x_in.rows(), C = cfg_.d_model;
  const Mat<S>& a_in = cfg_.pre_ln ? c.a_in : x_in;
  if (cfg_.pre_ln) LayerNormResize(x_in, c.a_in, c.ln1);
  Resize(c.qkv, N, 3 * C);
  if (split) {
    Resize(c.q, N, C);
    Resize(c.k, N, C);
    Resize(c.v, N, C);
  }
  qkv_layer_.Prepare(p.qkv);
  ParallelChunks(N, kRowGrain, [&](long r0, long r1) {
    const long n = r1 - r0;
    if (cfg_.pre_ln) LayerNormRows(x_in, p.ln1, c.a_in, c.ln1, r0, r1);
    LinearRows(a_in.data() + r0 * C, n, qkv_layer_, c.qkv.data() + r0 * 3 * C);
    if (split) {
      const auto rows = c.qkv.middleRows(r0, n);
      c.q.middleRows(r0, n) = rows.leftCols(C);
      c.k.middleRows(r0, n) = rows.middleCols(C, C);
      c.v.middleRows(r0, n) = rows.rightCols(C);
    }
  });
}

// The block after attention, from its output c.att: projection, residual, MLP, residual (pre-LN:
// x_mid = x + proj, x_out = x_mid + MLP(LN2(x_mid)); post-LN: x_mid = LN1(x + proj),
// x_out = LN2(x_mid + MLP(x_mid))). Every step is row by row, so the whole block runs one chunk of
// rows at a time in one parallel region, each chunk's rows in cache from the projection to the
// last residual. x_out may be x_in itself.
template <typename S>
void Transformer<S>::BlockAfterAttention(int l, const Mat<S>& x_in, BlockCache<S>& c, Mat<S>& x_out,
                                         bool keep_for_backward) {
  auto& p = p_.blocks[l];
  const long N = x_in.rows(), C = cfg_.d_model, F = cfg_.FF();
  const bool keep_branches = capture_sites_ && c.attn.capture_logits;
  // Without a backward pass nothing between the sums is kept: pre-LN sums straight into x_out and
  // normalises into LN1's output (free by now), and the MLP keeps no hidden rows. The sums are the
  // same.
  const bool lean = !keep_for_backward;
  Mat<S>& mid = cfg_.pre_ln && lean ? x_out : c.x_mid;
  Mat<S>& m_in = cfg_.pre_ln && lean ? c.a_in : c.m_in;
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
  if (!lean) {
    Resize(c.g, N, F);
    Resize(c.gelu_slope, N, F);
  }
  if (keep_branches) {
    Resize(c.attn_out, N, C);
    Resize(c.mlp_out, N, C);
  }
  Resize(x_out, N, C);
  proj_layer_.Prepare(p.proj);
  fc1_layer_.Prepare(p.fc1);
  fc2_layer_.Prepare(p.fc2);
  ParallelChunks(N, kRowGrain, [&](long r0, long r1) {
    const long n = r1 - r0;
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
  });
}

template <typename S>
BlockCache<S>& Transformer<S>::BlockForward(int l, const Mat<S>& x_in, Mat<S>& x_out,
                                            bool training) {
  // Training keeps every layer's activations for Backward, capture every layer's attention; a plain
  // evaluation needs one layer's at a time, so every layer works in the same cache.
  const bool capture = cache_[l].attn.capture_logits;
  const bool keep = training || capture;
  auto& c = keep ? cache_[l] : cache_[0];
  BlockQkv(l, x_in, c, /*split=*/true);
  const int el = EncodingLayer(l);
  if (enc_->Uses(kSiteQKTransform)) {
    ApplyQKTransform(el, {{&c.q, true}, {&c.k, false}}, B_, T_, T_, pos_, false);
  }
  AttentionShape sh{B_, T_, cfg_.n_heads, cfg_.HeadDim()};
  const bool knn = l == cfg_.knn.layer;
  c.attn.keep_lse = knn && cfg_.knn.softmax_merge;
  AttentionForward(c.q, c.k, c.v, sh, pos_, ActivePattern(), *enc_, el, keep, c.attn, c.att);
  if (knn) KnnMerge(c, training);
  BlockAfterAttention(l, x_in, c, x_out, training || (capture && capture_sites_));
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

// Forward: o = w o_loc + (1 - w) o_mem, with w = 1 - sigmoid(b_h) (gate) or
//          w = sigmoid(lse_loc - lse_mem) (softmax).
// Backward: d_o_loc = w d_o;  d_o_mem = (1 - w) d_o;  gate: d_b_h += w (1 - w) (o_mem - o_loc).d_o;
//           softmax: d_lse_loc = w (1 - w) (o_loc - o_mem).d_o = -d_lse_mem.
template <typename S>
void Transformer<S>::KnnMergeBackward(BlockCache<S>& c) {
  const int H = cfg_.n_heads, D = cfg_.HeadDim(), T = T_;
  const long N = d_att_.rows();
  const bool soft = cfg_.knn.softmax_merge;
  ResizeZero(d_knn_mem_, N, d_att_.cols());
  if (soft) {
    d_knn_lse_.setZero(knn_.lse.size());
    c.attn.d_lse.setZero(knn_.lse.size());
  }
  // One task per head, its rows in order: the gate's sum is the same whatever the threads.
  ParallelFor(H, [&](long h) {
    S d_gate = 0;
    for (long r = 0; r < N; ++r) {
      const long idx = ((r / T) * H + h) * T + r % T;
      const S lse_mem = knn_.lse[idx];
      if (lse_mem == -std::numeric_limits<S>::infinity()) continue;
      auto d = d_att_.row(r).segment(h * D, D);
      const auto loc = knn_local_.row(r).segment(h * D, D);
      const auto mem = knn_.out.row(r).segment(h * D, D);
      const S w = soft ? S(1) / (S(1) + std::exp(lse_mem - c.attn.lse[idx]))
                       : S(1) - S(1) / (S(1) + std::exp(-knn_gate_[h]));
      const S diff = (loc - mem).dot(d);
      if (soft) {
        c.attn.d_lse[idx] = w * (S(1) - w) * diff;
        d_knn_lse_[idx] = -w * (S(1) - w) * diff;
      } else {
        d_gate -= w * (S(1) - w) * diff;
      }
      d_knn_mem_.row(r).segment(h * D, D) = (S(1) - w) * d;
      d *= w;
    }
    if (!soft) knn_gate_grad_[h] += d_gate;
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

template <typename S>
void Transformer<S>::BlockBackward(int l, const Mat<S>& x_in, Mat<S>& d_x) {
  // On entry d_x = dL/dx_out; on exit dL/dx_in.
  auto& p = p_.blocks[l];
  auto& g = g_.blocks[l];
  auto& c = cache_[l];
  const long N = x_in.rows(), C = cfg_.d_model;
  AttentionShape sh{B_, T_, cfg_.n_heads, cfg_.HeadDim()};
  // d_mid_: gradient w.r.t. the MLP branch's residual input.
  if (cfg_.pre_ln) {
    d_mid_.swap(d_x);  // x_out = x_mid + MLP(LN2(x_mid)); d_x's buffer is free until the end
  } else {
    ResizeZero(d_mid_, N, C);  // x_out = LN2(x_mid + MLP(x_mid))
    LayerNormBackward(p.ln2, c.ln2, d_x, d_mid_, g.ln2);
    d_x = d_mid_;  // d_x now holds d(r2) = gradient of x_mid + MLP(x_mid)
  }
  const Mat<S>& d_y2 = cfg_.pre_ln ? d_mid_ : d_x;
  // d_big = (d_y2 W2^T) * GELU's slope, each chunk of rows multiplied as soon as it is written.
  LinearBackward(c.g, p.fc2, d_y2, &d_big_, g.fc2, GradWrite::kOverwrite, &linear_scratch_,
                 [&](long r0, long r1) {
                   d_big_.middleRows(r0, r1 - r0).array() *=
                       c.gelu_slope.middleRows(r0, r1 - r0).array();
                 });
  if (cfg_.pre_ln) {
    // LN2's input gradient added to d_mid_ (no longer read as d_y2) chunk by chunk of d_h_.
    LinearBackward(c.m_in, p.fc1, d_big_, &d_h_, g.fc1, GradWrite::kOverwrite, &linear_scratch_,
                   [&](long r0, long r1) {
                     LayerNormInputGradRows(p.ln2, c.ln2, d_h_, d_mid_, r0, r1);
                   });
    LayerNormParamGrad(c.ln2, d_h_, g.ln2);
  } else {
    LinearBackward(c.m_in, p.fc1, d_big_, &d_mid_, g.fc1, GradWrite::kAdd,
                   &linear_scratch_);  // m_in = x_mid
    ResizeZero(d_h_, N, C);
    LayerNormBackward(p.ln1, c.ln1, d_mid_, d_h_, g.ln1);  // x_mid = LN1(x_in + attn)
    d_mid_ = d_h_;
  }
  // d_mid_ = gradient w.r.t. (x_in + attention branch).
  LinearBackward(c.att, p.proj, d_mid_, &d_att_, g.proj, GradWrite::kOverwrite, &linear_scratch_);
  const bool knn = l == cfg_.knn.layer;
  if (knn) KnnMergeBackward(c);  // d_att_ becomes the local attention's gradient
  // A pattern with memory keys (Transformer-XL's recurrence) sends what queries read from their
  // memory to d_k_mem_ / d_v_mem_: the weights see it, the memory's states do not.
  const bool memory = ActivePattern().HasMemory();
  std::vector<Mat<S>*> accumulated = {&d_q_, &d_k_, &d_v_};
  if (memory) accumulated.insert(accumulated.end(), {&d_k_mem_, &d_v_mem_});
  for (Mat<S>* m : accumulated) Resize(*m, N, C);
  ParallelChunks(N, kRowGrain, [&](long r0, long r1) {
    for (Mat<S>* m : accumulated) m->middleRows(r0, r1 - r0).setZero();
  });
  const int el = EncodingLayer(l);
  // The query/key transform's backward runs in each attention task, on the gradients that task
  // just wrote, where the pattern allows (ApplyQKTransform afterwards otherwise).
  const bool fuse_qk = enc_->Uses(kSiteQKTransform) && !memory && !enc_->Uses(kSiteHeadMix);
  AttentionBackward(c.q, c.k, c.v, sh, pos_, ActivePattern(), *enc_, el, c.attn, d_att_, d_q_, d_k_,
                    d_v_, memory ? &d_k_mem_ : nullptr, memory ? &d_v_mem_ : nullptr, fuse_qk);
  if (enc_->Uses(kSiteQKTransform) && !fuse_qk) {
    if (memory)
      ApplyQKTransform(el, {{&d_q_, true}, {&d_k_, false}, {&d_k_mem_, false}}, B_, T_, T_, pos_,
                       true);
    else
      ApplyQKTransform(el, {{&d_q_, true}, {&d_k_, false}}, B_, T_, T_, pos_, true);
  }
  // The memory's retrieval read q (and k, v) before the encoding's transform; a differentiable
  // memory (model.knn_memory_gradient) sends its keys and values their gradient too.
  if (knn) {
    const bool grad = cfg_.knn.memory_gradient;
    KnnMemoryBackward(c.qkv, B_, T_, cfg_.n_heads, knn_, d_knn_mem_, d_knn_lse_, d_q_,
                      grad ? &d_k_ : nullptr, grad ? &d_v_ : nullptr,
                      cfg_.knn.source_layer >= 0 ? &mem_qkv_ : nullptr);
  }
  Resize(d_qkv_, N, 3 * C);
  ParallelChunks(N, kRowGrain, [&](long r0, long r1) {
    auto rows = d_qkv_.middleRows(r0, r1 - r0);
    rows.leftCols(C) = d_q_.middleRows(r0, r1 - r0);
    rows.middleCols(C, C) = d_k_.middleRows(r0, r1 - r0);
    rows.rightCols(C) = d_v_.middleRows(r0, r1 - r0);
  });
  d_x.swap(d_mid_);  // residual path (d_mid_ is not read again)
  if (!memory) {
    if (cfg_.pre_ln) {
      // LN1's input gradient added to d_x chunk by chunk of d_h_.
      LinearBackward(c.a_in, p.qkv, d_qkv_, &d_h_, g.qkv, GradWrite::kOverwrite, &linear_scratch_,
                     [&](long r0, long r1) {
                       LayerNormInputGradRows(p.ln1, c.ln1, d_h_, d_x, r0, r1);
                     });
      LayerNormParamGrad(c.ln1, d_h_, g.ln1);
    } else {
      LinearBackward(x_in, p.qkv, d_qkv_, &d_x, g.qkv, GradWrite::kAdd, &linear_scratch_);
    }
    return;
  }
  // With memory: the parameters of the projection (and pre-LN's LN1, which normalised the memory
  // too) get every use of the keys and values; the input states only their own segment's queries'.
  Resize(d_qkv_all_, N, 3 * C);
  d_qkv_all_ = d_qkv_;
  d_qkv_all_.middleCols(C, C) += d_k_mem_;
  d_qkv_all_.rightCols(C) += d_v_mem_;
  LinearBackward(cfg_.pre_ln ? c.a_in : x_in, p.qkv, d_qkv_all_, static_cast<Mat<S>*>(nullptr),
                 g.qkv, GradWrite::kAdd, &linear_scratch_);
  if (cfg_.pre_ln) {
    LinearInputGrad(p.qkv, d_qkv_all_, d_h_, GradWrite::kOverwrite, &linear_scratch_);
    LayerNormParamGrad(c.ln1, d_h_, g.ln1);
    LinearInputGrad(p.qkv, d_qkv_, d_h_, GradWrite::kOverwrite, &linear_scratch_);
    ParallelChunks(N, kRowGrain, [&](long r0, long r1) {
      LayerNormInputGradRows(p.ln1, c.ln1, d_h_, d_x, r0, r1);
    });
  } else {
    LinearInputGrad(p.qkv, d_qkv_, d_x, GradWrite::kAdd, &linear_scratch_);
  }
}

template <typename S>
void Transformer<S>::Backward(const std::vector<int>& tokens, const Mat<S>& d_logits) {
  const PrecisionScope precision(cfg_.precision);
  const long N = static_cast<long>(B_) * T_, C = cfg_.d_model;
  const bool landmarks = cfg_.landmark_block > 0;
  if (cfg_.side.Active()) {
    // Through the side network only: the backbone (its head too) is frozen and the side reads its
    // streams as constants. InputGradient() is then the gradient with respect to the side's input.
    LinearInputGrad(p_.head, d_logits, d_h_, GradWrite::kOverwrite, &linear_scratch_);
    ResizeZero(d_x_, N, C);
    LayerNormBackward(p_.side_ln_f, lnf_cache_, d_h_, d_x_, g_.side_ln_f);
    for (int i = cfg_.side.layers - 1; i >= 0; --i)
      BlockBackward(cfg_.n_layers + i, ys_[i], d_x_);  // the added backbone deltas pass d_x_ on
    return;
  }
  LinearBackward(hf_, p_.head, d_logits, &d_h_, g_.head, GradWrite::kOverwrite, &linear_scratch_);
  if (landmarks) {
    // The real tokens' gradient into their inner rows; the landmarks' outputs had none.
    const int T = T_real_;
    ResizeZero(land_dx_, static_cast<long>(B_) * T, C);
    LayerNormBackward(p_.ln_f, lnf_cache_, d_h_, land_dx_, g_.ln_f);
    ResizeZero(d_x_, N, C);
    for (int b = 0; b < B_; ++b)
      for (int t = 0; t < T; ++t)
        d_x_.row(static_cast<long>(b) * T_ + LandmarkRowOf(t)) =
            land_dx_.row(static_cast<long>(b) * T + t);
  } else {
    ResizeZero(d_x_, N, C);
    LayerNormBackward(p_.ln_f, lnf_cache_, d_h_, d_x_, g_.ln_f);
  }
  landmark_active_ = landmarks ? landmark_train_.get() : nullptr;
  for (int l = cfg_.n_layers - 1; l >= 0; --l) BlockBackward(l, xs_[l], d_x_);
  landmark_active_ = nullptr;
  if (enc_->Uses(kSiteEmbedding)) enc_->EmbeddingBackward(pos_, tokens, B_, d_x_);
  if (landmarks) {
    for (int b = 0; b < B_; ++b)
      for (int g = 0; g < T_real_ / cfg_.landmark_block; ++g)
        landmark_emb_grad_ +=
            d_x_.row(static_cast<long>(b) * T_ + (g + 1) * (cfg_.landmark_block + 1) - 1);
    RealRows(d_x_, B_, T_real_, land_dx_);
    d_x_.swap(land_dx_);  // InputGradient(): the real tokens' rows
  }
  EmbeddingBackward(tokens, d_x_, g_.tok_emb);
}

template <typename S>
bool Transformer<S>::DecodingRecomputesPrefix() const {
  return enc_->TablesDependOnLength() || enc_->EmbeddingReadsEarlierTokens() ||
         ActivePattern().DependsOnLength() || cfg_.knn.Active() || cfg_.landmark_block > 0 ||
         cfg_.side.Active();
}

template <typename S>
void Transformer<S>::DecodeStart(int B, int capacity, const std::vector<double>& pos) {
  const PrecisionScope precision(cfg_.precision);
  LEXP_CHECK(B > 0 && capacity > 0 && static_cast<int>(pos.size()) == capacity,
             "decode: position ids must cover the capacity");
  const long C = cfg_.d_model, rows = static_cast<long>(B) * capacity;
  dec_B_ = B;
  dec_cap_ = capacity;
  dec_T_ = 0;
  dec_pos_all_ = pos;
  // A retrieved memory is searched again at every step: the whole prefix is recomputed.
  dec_recompute_ = DecodingRecomputesPrefix();
  if (dec_recompute_) {
    dec_tokens_.assign(static_cast<size_t>(B) * capacity, 0);
    return;
  }
  dec_k_.resize(cfg_.n_layers);
  dec_v_.resize(cfg_.n_layers);
  dec_keys_t_.resize(cfg_.n_layers);
  for (int l = 0; l < cfg_.n_layers; ++l) {
    ResizeZero(dec_k_[l], rows, C);
    ResizeZero(dec_v_[l], rows, C);
    ResizeZero(dec_keys_t_[l], static_cast<long>(B) * C, capacity);
  }
  ResizeZero(dec_q_, rows, C);
  if (enc_->Uses(kSiteQKTransform) && enc_->QKTransformDependsOnOtherPositions())
    ResizeZero(dec_kt_, rows, C);
  ResizeZero(dec_att_, rows, C);
}

// One block over the n new rows x [B*n, C] (positions t0..t0+n of each sequence), in place: the
// forward of BlockForward, with keys and values of rows < t0 taken from the decode cache.
template <typename S>
void Transformer<S>::DecodeBlock(int l, Mat<S>& x, int t0, int n) {
  auto& c = dec_c_;
  const int B = dec_B_, T = t0 + n, H = cfg_.n_heads, D = cfg_.HeadDim();
  const long C = cfg_.d_model, cap = dec_cap_;
  BlockQkv(l, x, c, /*split=*/false);  // [B*n, 3C]
  for (int b = 0; b < B; ++b)
    for (int r = 0; r < n; ++r) {
      const long src = static_cast<long>(b) * n + r, dst = b * cap + t0 + r;
      dec_q_.row(dst) = c.qkv.row(src).head(C);
      dec_k_[l].row(dst) = c.qkv.row(src).segment(C, C);
      dec_v_[l].row(dst) = c.qkv.row(src).tail(C);
    }
  const Mat<S>* keys = &dec_k_[l];
  const Mat<S>* keys_t = &dec_keys_t_[l];
  if (enc_->Uses(kSiteQKTransform) && !enc_->QKTransformDependsOnOtherPositions()) {
    // The cached keys stay transformed: only the new rows are (RoPE: O(n) a step, not O(T)).
    ApplyQKTransform(l, {{&dec_q_, true}, {&dec_k_[l], false}}, B, T, cap, dec_pos_, false, t0);
  } else if (enc_->Uses(kSiteQKTransform)) {
    // Every key transformed again from the raw cache, as the transform of a row may have moved.
    for (int b = 0; b < B; ++b) dec_kt_.middleRows(b * cap, T) = dec_k_[l].middleRows(b * cap, T);
    ApplyQKTransform(l, {{&dec_q_, true}, {&dec_kt_, false}}, B, T, cap, dec_pos_, false);
    keys = &dec_kt_;
    keys_t = nullptr;  // every key moved: transposed per step by the attention instead
  }
  if (keys_t != nullptr) {
    // The new keys into the transposed cache (column t of row b*C + c: key t's component c).
    Mat<S>& kt = dec_keys_t_[l];
    for (int b = 0; b < B; ++b)
      for (int r = 0; r < n; ++r) {
        const S* key = keys->data() + (b * cap + t0 + r) * C;
        for (long ch = 0; ch < C; ++ch) kt(b * C + ch, t0 + r) = key[ch];
      }
  }
  AttentionShape sh{B, T, H, D, t0, dec_cap_};
  AttentionForward(dec_q_, *keys, dec_v_[l], sh, dec_pos_, ActivePattern(), *enc_, l, false, c.attn,
                   dec_att_, keys_t);
  Resize(c.att, static_cast<long>(B) * n, C);
  for (int b = 0; b < B; ++b)
    c.att.middleRows(static_cast<long>(b) * n, n) = dec_att_.middleRows(b * cap + t0, n);
  BlockAfterAttention(l, x, c, x, false);
}

template <typename S>
void Transformer<S>::DecodeAppend(const std::vector<int>& tokens, int n, Mat<S>& logits) {
  const PrecisionScope precision(cfg_.precision);
  const int B = dec_B_, t0 = dec_T_;
  LEXP_CHECK(B > 0 && n > 0 && t0 + n <= dec_cap_, "decode: beyond the capacity of DecodeStart");
  LEXP_CHECK(static_cast<long>(tokens.size()) == static_cast<long>(B) * n,
             "decode: tokens size is not B*n");
  dec_T_ = t0 + n;
  dec_pos_.assign(dec_pos_all_.begin(), dec_pos_all_.begin() + dec_T_);
  if (dec_recompute_) {
    const int T = dec_T_, V = cfg_.vocab;
    dec_prefix_.resize(static_cast<size_t>(B) * T);
    for (int b = 0; b < B; ++b) {
      std::copy(tokens.begin() + static_cast<long>(b) * n,
                tokens.begin() + static_cast<long>(b + 1) * n,
                dec_tokens_.begin() + static_cast<long>(b) * dec_cap_ + t0);
      std::copy(dec_tokens_.begin() + static_cast<long>(b) * dec_cap_,
                dec_tokens_.begin() + static_cast<long>(b) * dec_cap_ + T,
                dec_prefix_.begin() + static_cast<long>(b) * T);
    }
    Forward(dec_prefix_, B, T, dec_pos_, false, false, dec_logits_);
    Resize(logits, static_cast<long>(B) * n, V);
    for (int b = 0; b < B; ++b)
      logits.middleRows(static_cast<long>(b) * n, n) =
          dec_logits_.middleRows(static_cast<long>(b) * T + t0, n);
    return;
  }
  enc_->Prepare(dec_pos_, ActivePattern().MaxDistance(PositionSpan(dec_pos_)));
  EmbeddingForward(tokens, p_.tok_emb, dec_x_);
  if (enc_->Uses(kSiteEmbedding)) {
    dec_pos_new_.assign(dec_pos_.begin() + t0, dec_pos_.end());
    enc_->AddEmbedding(dec_pos_new_, tokens, B, dec_x_);
  }
  for (int l = 0; l < cfg_.n_layers; ++l) DecodeBlock(l, dec_x_, t0, n);
  LayerNormForward(dec_x_, p_.ln_f, dec_y_, dec_lnf_);
  LinearForward(dec_y_, p_.head, logits);
}

template class Transformer<float>;
template class Transformer<double>;

}  // namespace lexp
