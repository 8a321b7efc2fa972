// The decoder-only (causal) or encoder (bidirectional) transformer of lexp: token embedding, L
// blocks of multi-head attention and a GELU MLP with pre-LN (default) or post-LN residuals, a final
// LayerNorm and an untied output head (Vaswani et al. 2017, arXiv:1706.03762; pre-LN as in Xiong et
// al. 2020, arXiv:2002.04745). The encoding enters only through nn/position_hooks.h.
//
// With a side network (LongMem, Wang et al. 2023, arXiv:2306.07174; ModelConfig::side), the L
// blocks are a backbone that a trainer freezes, and S = side.layers further blocks, each standing
// for r = L / S backbone blocks, make the output:
//   h_0 = embedded input, h_{l+1} = Block_l(h_l)                 the backbone (l < L)
//   y_0 = h_0,  y_{i+1} = Side_i(y_i) + (h_{r(i+1)} - h_{ri})    the side blocks (i < S): each
//                                                                 adds what its backbone blocks
//                                                                 added to the residual stream
//   logits = head(LN_side(y_S))                                   the backbone's head
// Side block i starts as a copy of backbone block r i + r - 1 (LongMem: 2i + 1) and the side's
// final norm as the backbone's (CopyBackboneIntoSide); side block side.memory_layer reads a
// retrieved memory (nn/ops/knn_memory.h) of the keys and values of the backbone block it copies,
// LongMem's cached memory bank. The backward pass runs through the side blocks only.
//
// Templated on the scalar: float is the fast path, double is the reference for gradient checks.
#pragma once

#include <initializer_list>

#include <memory>
#include <string>
#include <vector>

#include "nn/ops/attention.h"
#include "nn/ops/embedding.h"
#include "nn/ops/gelu.h"
#include "nn/ops/knn_memory.h"
#include "nn/ops/landmark.h"
#include "nn/ops/layernorm.h"
#include "nn/ops/linear.h"
#include "nn/ops/mlp.h"
#include "nn/position_hooks.h"
#include "nn/precision.h"
#include "nn/rng.h"

namespace lexp {

// LongMem's side network (see above); layers = 0: none.
struct SideNetConfig {
  int layers = 0;         // side blocks S; the backbone's L must be a multiple
  int memory_layer = -1;  // the side block with the retrieved memory (-1: none)
  bool Active() const { return layers > 0; }
};

struct ModelConfig {
  int vocab = 0;
  int d_model = 64;
  int n_heads = 4;
  int n_layers = 2;
  int d_ff = 0;  // 0 means 4 * d_model
  bool pre_ln = true;
  bool causal = true;
  // One layer with a retrieved memory (nn/ops/knn_memory.h), or none. With a side network, its
  // layer is L + side.memory_layer and its source_layer the backbone block that side block copies.
  KnnMemoryConfig knn;
  SideNetConfig side;
  // Landmark attention (nn/ops/landmark.h): a landmark row after every landmark_block tokens
  // (0: none), and each query's top landmark_top_k blocks at evaluation (0: every block).
  int landmark_block = 0;
  int landmark_top_k = 0;
  bool landmark_remap = true;  // retrieved blocks seen just before the query's (top_k > 0)
  // The precision of the matrix products, the rotary transform and the attention logits
  // (nn/precision.h); every pass of the model runs under it.
  PrecisionPolicy precision;
  int FF() const { return d_ff > 0 ? d_ff : 4 * d_model; }
  int HeadDim() const { return d_model / n_heads; }
  // With a side network: backbone blocks per side block, and the backbone block side block i
  // copies (and whose keys and values its memory reads).
  int SideReduction() const { return n_layers / side.layers; }
  int SideSource(int i) const { return SideReduction() * (i + 1) - 1; }
};

template <typename S>
struct BlockParams {
  LayerNormParams<S> ln1, ln2;
  LinearParams<S> qkv;   // [C, 3C]: q | k | v
  LinearParams<S> proj;  // [C, C]
  LinearParams<S> fc1;   // [C, F]
  LinearParams<S> fc2;   // [F, C]
};

template <typename S>
struct ModelParams {
  Mat<S> tok_emb;  // [V, C]
  std::vector<BlockParams<S>> blocks;  // the L blocks, then the side network's S
  LayerNormParams<S> ln_f;
  LinearParams<S> head;  // [C, V]
  LayerNormParams<S> side_ln_f;  // the side network's final norm (empty without one)
};

template <typename S>
struct BlockCache {
  Mat<S> a_in;  // [N, C] attention input (LN1(x) for pre-LN, x for post-LN)
  LayerNormCache<S> ln1, ln2;
  Mat<S> qkv;      // [N, 3C]
  Mat<S> q, k, v;  // [N, C] after site 3
  AttentionCache<S> attn;
  Mat<S> att;    // [N, C] attention output before the projection
  Mat<S> x_mid;  // [N, C] residual stream after attention (post-LN: after LN1)
  Mat<S> m_in;   // [N, C] MLP input
  Mat<S> g;           // [N, F] the MLP's hidden activations, after the GELU (training)
  Mat<S> gelu_slope;  // [N, F] GELU's slope at its input, which backward multiplies by
  Mat<S> tmp;    // [N, C] scratch
  // Kept by a pass that captures sites only: the attention and MLP branches' outputs [N, C]
  // before they join the residual stream.
  Mat<S> attn_out, mlp_out;
};

template <typename S>
class Transformer {
 public:
  Transformer(const ModelConfig& cfg, PositionEncoding<S>* enc);

  const ModelConfig& config() const { return cfg_; }
  PositionEncoding<S>& encoding() { return *enc_; }
  void set_pattern(const AttentionPattern* p) { pattern_override_ = p; }
  // The pattern the next pass uses: set_pattern's, or the model's own causal or bidirectional one.
  const AttentionPattern& pattern() const {
    return pattern_override_ ? *pattern_override_ : pattern_;
  }

  void Init(Rng& rng);
  // A side network's start (LongMem): side block i = backbone block SideSource(i), the side's
  // final norm = the backbone's.
  void CopyBackboneIntoSide();
  void ZeroGrad();
  // Model parameters then the encoding's ("pe.*"), in a fixed order.
  std::vector<ParamRef<S>> Parameters();

  // tokens: [B*T]; pos: [T] from the encoding's site 1. logits: [B*T, V].
  // `training` keeps what Backward needs; `capture` also keeps pre-softmax logits of every layer.
  // With neither, every layer works in one shared cache (evaluation memory: one layer's
  // activations plus the residual streams).
  void Forward(const std::vector<int>& tokens, int B, int T, const std::vector<double>& pos,
               bool training, bool capture, Mat<S>& logits);
  // d_logits: [B*T, V]. Accumulates into the gradients of Parameters().
  void Backward(const std::vector<int>& tokens, const Mat<S>& d_logits);
  // After Backward: the gradient with respect to the embedded input Residual(0), [B*T, C].
  const Mat<S>& InputGradient() const { return d_x_; }

  // After a training or capturing forward, or any forward once set_keep_residuals(true): the
  // residual stream entering block l ([B*T, C]; l = 0: the embedded input, l = n_layers: the
  // output of the last block, before the final LayerNorm). A plain evaluation otherwise keeps two.
  const Mat<S>& Residual(int l) const { return xs_[l]; }
  void set_keep_residuals(bool keep) { keep_residuals_ = keep; }
  // Whether BlockForward and BlockBackward may run a block a group of sequences at a time, in
  // fewer parallel regions (on by default; the values are the same either way: tests compare the
  // two, benchmarks time them), and how many block passes (forward or backward) ran so since
  // construction.
  void set_fuse_blocks(bool fuse) { fuse_blocks_ = fuse; }
  long fused_passes() const { return fused_passes_; }
  // True when a batch of B sequences of T rows runs its blocks fused: T divides kRowGrain (512),
  // so every group (128 rows, or one sequence of up to 512) is a whole part of the op-by-op pass's
  // 512-row chunks and each product sees its rows in the same row blocks, and there are at least 8
  // groups to share among the threads; kNN memory and head mixing run step by step.
  static bool FusesBlocks(int B, int T);
  // The same for the backward pass: a batch cut into at least 8 groups of kRowGrain rows of whole
  // sequences (the chunks of the step-by-step pass's sums); pre-LN only, without memory keys, kNN
  // memory or head mixing.
  static bool FusesBlockBackward(int B, int T);
  // After a capturing forward: [B*H*T, T] probabilities / logits of layer l.
  const Mat<S>& Probs(int l) const { return cache_[l].attn.probs; }
  const Mat<S>& Logits(int l) const { return cache_[l].attn.logits; }
  // With set_capture_sites(true), a capturing forward also keeps every layer's activations (the
  // training pass's, same bits as a plain evaluation) and both branch outputs, which
  // nn/model/capture_sites.h reads by name. Off by default: it costs a training pass's memory.
  void set_capture_sites(bool on) { capture_sites_ = on; }
  const BlockCache<S>& Cache(int l) const { return cache_[l]; }
  const Mat<S>& FinalNorm() const { return hf_; }  // [B*T, C] the final LayerNorm's output

  // Incremental decoding, for greedy generation: B sequences grow together, up to `capacity`
  // tokens, with position ids pos [capacity] fixed in advance. DecodeAppend adds n tokens to every
  // sequence (tokens [B*n], sequence-major) and writes the logits of the added positions
  // ([B*n, V]). Keys and values of earlier positions are kept per layer, so a step costs its new
  // tokens only; sites 1-3 are redone over the whole prefix at every step (Prepare and the q/k
  // transform see pos[0..T) as a forward pass of length T would), so encodings whose tables depend
  // on the length (xPos's centring) stay consistent. Where the tables of a position change with
  // the length (TablesDependOnLength: RoPE's dynamic rules; DependsOnLength: S2-Attn), every step
  // recomputes the whole prefix instead. The logits of a row equal those of a forward pass over
  // the same prefix, up to float rounding.
  void DecodeStart(int B, int capacity, const std::vector<double>& pos);
  // Whether decoding recomputes the whole prefix at every step (the length-dependent cases above,
  // embeddings that read earlier tokens, memories searched again, side networks). If not, a
  // forward pass over a whole sequence gives each row the logits decoding gives it (to rounding).
  bool DecodingRecomputesPrefix() const;
  void DecodeAppend(const std::vector<int>& tokens, int n, Mat<S>& logits);
  // Greedy decoding after a teacher-forced pass over the same sequences: with
  // set_keep_keys_for_decoding(true), every evaluation Forward keeps each layer's keys (after the
  // q/k transform) and values, and DecodeStartFromForward starts decoding the sequences `seqs` of
  // that pass with their first `prefix` positions taken from them, where the pass read the same
  // tokens at the same positions (pos[0..prefix) of this capacity's): decoding goes on at position
  // `prefix` (DecodeAppend) without running the prefix again. Only where CanDecodeFromForward: the
  // decoder keeps its keys transformed and does not recompute the prefix.
  void set_keep_keys_for_decoding(bool on) { keep_kv_ = on; }
  bool CanDecodeFromForward() const;
  // Whether the last Forward kept its keys, over B sequences of T tokens.
  bool KeptKeysOf(int B, int T) const { return kept_B_ > 0 && kept_B_ == B && kept_T_ == T; }
  void DecodeStartFromForward(const std::vector<int>& seqs, int prefix, int capacity,
                              const std::vector<double>& pos);
  // Keeps only the sequences keep[0] < keep[1] < ... of the decoding batch (their caches move
  // down, in order), so that sequences already finished cost nothing more; the others decode as
  // in the whole batch, to float rounding (a product's kernel depends on its number of rows), and
  // deterministically.
  void DecodeKeep(const std::vector<int>& keep);
  int DecodedLength() const { return dec_T_; }
  int DecodedSequences() const { return dec_B_; }

 private:
  const AttentionPattern& ActivePattern() const {
    if (landmark_active_ != nullptr) return *landmark_active_;
    return pattern_override_ ? *pattern_override_ : pattern_;
  }
  // Landmark attention: the inner row of real token t, the inner sequence's length for T tokens,
  // and the copy of the rows of real tokens out of an inner matrix ([B*T_, cols] -> [B*T, cols]).
  long LandmarkRowOf(int t) const { return t + t / cfg_.landmark_block; }
  int LandmarkLength(int T) const { return T + T / cfg_.landmark_block; }
  void RealRows(const Mat<S>& inner, int B, int T, Mat<S>& out) const;
  // After a forward pass that keeps maps or streams: those of the real tokens only.
  void KeepRealTokensOnly(int B, int T, bool capture);
  // Returns the cache the block used (a plain evaluation shares one among the layers).
  BlockCache<S>& BlockForward(int l, const Mat<S>& x_in, Mat<S>& x_out, bool training);
  // The side network over the backbone's streams xs_ (ys_), its final norm into hf_.
  void SideForward(bool training);
  // The layer an encoding sees for block l: its own, or for a side block the backbone block it
  // copies (encodings with per-layer parameters have L of them).
  int EncodingLayer(int l) const {
    return l < cfg_.n_layers ? l : cfg_.SideSource(l - cfg_.n_layers);
  }
  void BlockQkv(int l, const Mat<S>& x_in, BlockCache<S>& c, bool split);
  // BlockQkv's buffers and prepared weights, then its work on rows [r0, r1) (any rows, any thread).
  void BlockQkvSetup(int l, const Mat<S>& x_in, BlockCache<S>& c, bool split);
  void BlockQkvRows(int l, const Mat<S>& x_in, BlockCache<S>& c, bool split, long r0, long r1);
  // What BlockAfterAttention's setup decided for its rows: kept branches, where the sums go.
  struct AfterAttention {
    bool lean = false, keep_branches = false;
    Mat<S>* mid = nullptr;
    Mat<S>* m_in = nullptr;
  };
  AfterAttention BlockAfterAttentionSetup(int l, const Mat<S>& x_in, BlockCache<S>& c,
                                          Mat<S>& x_out, bool keep_for_backward);
  void BlockAfterAttentionRows(int l, const Mat<S>& x_in, BlockCache<S>& c, Mat<S>& x_out,
                               const AfterAttention& pass, long r0, long r1);
  void BlockAfterAttention(int l, const Mat<S>& x_in, BlockCache<S>& c, Mat<S>& x_out,
                           bool keep_for_backward);
  void BlockBackward(int l, const Mat<S>& x_in, Mat<S>& d_x);
  // BlockBackward fused (FusesBlockBackward): each group's rows go through every input gradient,
  // attention's included, in one parallel region, whose task that completes a weight group runs
  // that group's weight gradients (and two small regions: the prepared factors before, the sums
  // after).
  void FusedBlockBackward(int l, const Mat<S>& x_in, Mat<S>& d_x);
  // BlockBackward's attention gradient into d_qkv_ through separate d_q_, d_k_, d_v_: for memory
  // keys, a kNN memory or head mixing (otherwise attention writes d_qkv_ itself).
  void AttentionGradToQkv(int l, BlockCache<S>& c, const AttentionShape& sh, bool knn,
                          bool memory, bool fuse_qk);
  // Site 3 on rows [first_row, T) of every (sequence, head) of each matrix of queries or keys,
  // sequences `stride` rows apart, all in one parallel region.
  struct QKRows {
    Mat<S>* m;
    bool is_query;
  };
  void ApplyQKTransform(int l, std::initializer_list<QKRows> targets, int B, int T, long stride,
                        const std::vector<double>& pos, bool backward, int first_row = 0);
  // One (sequence b, head h) task of ApplyQKTransform.
  void QKTransformTask(int l, const QKRows& target, int b, int h, int T, long stride,
                       const std::vector<double>& pos, bool backward, int first_row);
  void DecodeBlock(int l, Mat<S>& x, int t0, int n);
  // The memory layer's merge of its local attention (in c.att) with the retrieved memory, and
  // its backward (d_att_ in, the local branch's gradient out; the memory's added to d_q_).
  // training: keep what the backward needs and read the crossbatch group's memories.
  void KnnMerge(BlockCache<S>& c, bool training);
  void KnnMergeBackward(BlockCache<S>& c);

  ModelConfig cfg_;
  PositionEncoding<S>* enc_;
  AttentionPattern pattern_;
  const AttentionPattern* pattern_override_ = nullptr;
  bool keep_residuals_ = false;
  bool fuse_blocks_ = true;
  long fused_passes_ = 0;
  bool capture_sites_ = false;
  ModelParams<S> p_, g_;

  // Workspace, sized once per (B, T).
  int B_ = 0, T_ = 0;
  std::vector<double> pos_;
  std::vector<Mat<S>> xs_;  // L+1 residual streams; xs_[0] is the embedded input
  std::vector<Mat<S>> ys_;  // the side network's S+1 streams (ys_[0] = xs_[0])
  Mat<S> mem_qkv_;          // the side memory's source: its backbone block's q | k | v
  std::vector<BlockCache<S>> cache_;
  Mat<S> hf_;  // [N, C] final-norm output
  LayerNormCache<S> lnf_cache_;
  Mat<S> d_x_, d_h_, d_mid_, d_big_, d_att_, d_q_, d_k_, d_v_, d_qkv_;
  Mat<S> d_k_mem_, d_v_mem_, d_qkv_all_;  // a pattern with memory keys: what the memory got
  // The layer with a retrieved memory (cfg_.knn): its gate logits b_h [H] and their gradient (the
  // gate merge), the retrieval, the local attention's output kept for the backward, and the
  // gradients of the two branches.
  RowVec<S> knn_gate_, knn_gate_grad_;
  // Landmark attention: the landmark token's embedding [C] and its gradient, the patterns of
  // training (every block) and evaluation (top-k blocks), the one in use during a pass, and the
  // number of real tokens of the pass.
  RowVec<S> landmark_emb_, landmark_emb_grad_;
  std::unique_ptr<LandmarkPattern> landmark_train_, landmark_eval_;
  const AttentionPattern* landmark_active_ = nullptr;
  int T_real_ = 0;
  Mat<S> land_x_, land_dx_;
  KnnMemoryCache<S> knn_;
  Mat<S> knn_local_, d_knn_mem_;
  Vec<S> d_knn_lse_;
  LinearScratch<S> linear_scratch_;
  LinearScratch<S> block_scratch_[4];  // FusedBlockBackward's: fc2, fc1, proj, qkv
  Mat<S> d_res_;  // FusedBlockBackward: the gradient with respect to x_mid
  // The block's layers prepared for the row chunks of one forward pass (one block at a time).
  PreparedLinear<S> qkv_layer_, proj_layer_, fc1_layer_, fc2_layer_;
  tbb::enumerable_thread_specific<Mat<S>> mlp_hidden_;  // evaluation MLP's per-thread rows

  // Incremental decoding: per layer the keys (before site 3) and values of every position so far,
  // [B*capacity, C] with sequence b at rows b*capacity...; queries, transformed keys and attention
  // outputs in the same layout; the new rows' activations compactly [B*n, C].
  int dec_B_ = 0, dec_cap_ = 0, dec_T_ = 0;
  bool keep_kv_ = false;                 // set_keep_keys_for_decoding
  std::vector<Mat<S>> kept_k_, kept_v_;  // per layer [B*T, C] of the last evaluation Forward
  int kept_B_ = 0, kept_T_ = 0;          // its sequences and tokens (0: none kept)
  bool dec_recompute_ = false;                // length-dependent tables: a forward of the prefix
  std::vector<int> dec_tokens_, dec_prefix_;  // recompute: [B*capacity] tokens, [B*T] prefix
  Mat<S> dec_logits_;                         // recompute: [B*T, V]
  std::vector<double> dec_pos_all_, dec_pos_, dec_pos_new_;
  // Per layer [B*capacity, C]; the keys after site 3 when its rows are transformed independently.
  std::vector<Mat<S>> dec_k_, dec_v_;
  std::vector<Mat<S>> dec_keys_t_;  // per layer the cached keys transposed, [B*C, capacity]
  Mat<S> dec_q_, dec_kt_, dec_att_, dec_x_, dec_y_;  // dec_kt_: keys transformed again (xPos)
  BlockCache<S> dec_c_;
  LayerNormCache<S> dec_lnf_;
};

extern template class Transformer<float>;
extern template class Transformer<double>;

}  // namespace lexp
