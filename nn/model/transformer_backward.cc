// The backward pass of the whole transformer (see transformer.h): each block's gradients in
// reverse order, the kNN memory's merge included.
#include "nn/model/transformer.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "nn/check.h"

namespace lexp {

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
void Transformer<S>::AttentionGradToQkv(int l, BlockCache<S>& c, const AttentionShape& sh, bool knn,
                                        bool memory, bool fuse_qk) {
  const long N = d_att_.rows(), C = cfg_.d_model;
  std::vector<Mat<S>*> accumulated = {&d_q_, &d_k_, &d_v_};
  if (memory) accumulated.insert(accumulated.end(), {&d_k_mem_, &d_v_mem_});
  for (Mat<S>* m : accumulated) Resize(*m, N, C);
  ParallelChunks(N, kRowGrain, [&](long r0, long r1) {
    for (Mat<S>* m : accumulated) m->middleRows(r0, r1 - r0).setZero();
  });
  const int el = EncodingLayer(l);
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
  ParallelChunks(N, kRowGrain, [&](long r0, long r1) {
    auto rows = d_qkv_.middleRows(r0, r1 - r0);
    rows.leftCols(C) = d_q_.middleRows(r0, r1 - r0);
    rows.middleCols(C, C) = d_k_.middleRows(r0, r1 - r0);
    rows.rightCols(C) = d_v_.middleRows(r0, r1 - r0);
  });
}

template <typename S>
bool Transformer<S>::FusesBlockBackward(int B, int T) {
  return T <= kRowGrain && kRowGrain % T == 0 && static_cast<long>(B) * T / kRowGrain >= 8;
}

// The step-by-step BlockBackward's values, bit for bit: every input gradient is row by row (or, in
// attention, sequence by sequence) and a group is one of LinearBackward's d_x chunks and one of
// the layer norms' partial-sum chunks (kRowGrain rows); the weight gradients are LinearBackward's
// tasks. What differs is the schedule: three regions a layer (the prepared factors; the input
// gradients, with the weight gradients of each 1024-row group run by the task that completes it;
// the sums) instead of seven, and a group's rows stay in cache from the MLP's gradient to LN1's
// (and the completing task's rows to the weight gradients it starts).
template <typename S>
void Transformer<S>::FusedBlockBackward(int l, const Mat<S>& x_in, Mat<S>& d_x) {
  auto& p = p_.blocks[l];
  auto& g = g_.blocks[l];
  auto& c = cache_[l];
  const long N = x_in.rows(), C = cfg_.d_model, F = cfg_.FF();
  const AttentionShape sh{B_, T_, cfg_.n_heads, cfg_.HeadDim()};
  const int el = EncodingLayer(l);
  const bool fuse_qk = enc_->Uses(kSiteQKTransform);
  ++fused_passes_;
  d_mid_.swap(d_x);  // d_mid_ = dL/dx_out, read by fc2's input and weight gradients
  Resize(d_big_, N, F);
  Resize(d_h_, N, C);
  Resize(d_res_, N, C);
  Resize(d_att_, N, C);
  Resize(d_qkv_, N, 3 * C);
  Resize(d_x, N, C);
  LinearScratch<S>* scratch = block_scratch_;  // fc2, fc1, proj, qkv
  const LinearParams<S>* params[4] = {&p.fc2, &p.fc1, &p.proj, &p.qkv};
  // The weight gradients' factors: x (the forward's) and d_y (the row region's) of each layer.
  const WeightGradTasks<S> weights[4] = {{c.g, d_mid_, g.fc2, &scratch[0]},
                                         {c.m_in, d_big_, g.fc1, &scratch[1]},
                                         {c.att, d_res_, g.proj, &scratch[2]},
                                         {c.a_in, d_qkv_, g.qkv, &scratch[3]}};
  const long groups = weights[0].Groups();
  ParallelFor(4 * (groups + 1), [&](long t) {  // W^T for the input gradients, x_g^T for the weights
    const long i = t / (groups + 1), k = t % (groups + 1);
    if (k == groups)
      PrepareTransposedWeights(*params[i], scratch[i]);
    else
      weights[i].PrepareGroup(k);
  });
  LayerNormParamPartials<S> ln2_sums(N, C), ln1_sums(N, C);
  // A weight group (kWeightGradRowGroup rows) is whole once the row tasks of all its chunks
  // are done: the last of them runs the group's weight-gradient tasks, while its own rows of the
  // factors are still in cache (which task that is changes no value: each group's partials are
  // its own, summed in group order after the region).
  static_assert(kWeightGradRowGroup % kRowGrain == 0, "a weight group is whole row chunks");
  const long weight_tasks_per_group = weights[0].ColumnChunks() + weights[1].ColumnChunks() +
                                      weights[2].ColumnChunks() + weights[3].ColumnChunks();
  std::vector<std::atomic<int>> chunks_left(static_cast<size_t>(groups));
  for (long wg = 0; wg < groups; ++wg) {
    const auto [g0, g1] = weights[0].GroupRows(wg);
    chunks_left[wg].store(static_cast<int>((g1 - g0 + kRowGrain - 1) / kRowGrain));
  }
  AttentionBackwardSetup(sh, ActivePattern(), *enc_, c.attn,
                         QkvGradOut<S>{d_qkv_.data(), d_qkv_.data() + C, d_qkv_.data() + 2 * C,
                                       3 * C},
                         static_cast<Mat<S>*>(nullptr), static_cast<Mat<S>*>(nullptr), fuse_qk);
  const long sequences = kRowGrain / T_;
  ParallelChunks(B_, sequences, [&](long b0, long b1) {
    const long r0 = b0 * T_, r1 = b1 * T_;
    auto rows = [&](Mat<S>& m) { return m.middleRows(r0, r1 - r0); };
    // d_big = (d_y2 W2^T) * GELU's slope
    LinearInputGradRows(p.fc2, d_mid_, d_big_, false, &scratch[0].w_t, r0, r1);
    rows(d_big_).array() *= c.gelu_slope.middleRows(r0, r1 - r0).array();
    // d_res = d_y2 + LN2's input gradient of d_big W1^T
    LinearInputGradRows(p.fc1, d_big_, d_h_, false, &scratch[1].w_t, r0, r1);
    ln2_sums.AddChunkWithInputGrad(p.ln2, c.ln2, d_h_, d_mid_, d_res_, r0, r1);
    LinearInputGradRows(p.proj, d_res_, d_att_, false, &scratch[2].w_t, r0, r1);
    for (long task = b0 * sh.H; task < b1 * sh.H; ++task)
      AttentionBackwardTask(c.q, c.k, c.v, sh, pos_, ActivePattern(), *enc_, el, c.attn, d_att_,
                            QkvGradOut<S>{d_qkv_.data(), d_qkv_.data() + C,
                                          d_qkv_.data() + 2 * C, 3 * C},
                            true, static_cast<Mat<S>*>(nullptr), static_cast<Mat<S>*>(nullptr),
                            fuse_qk, task);
    // d_x = d_res + LN1's input gradient of d_qkv Wqkv^T
    LinearInputGradRows(p.qkv, d_qkv_, d_h_, false, &scratch[3].w_t, r0, r1);
    ln1_sums.AddChunkWithInputGrad(p.ln1, c.ln1, d_h_, d_res_, d_x, r0, r1);
    const long wg = r0 / kWeightGradRowGroup;
    if (chunks_left[wg].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // The group's weight tasks in a nested region: a thread out of rows steals some of them
      // instead of waiting for this one at the region's end.
      ParallelFor(weight_tasks_per_group, [&](long t) {
        int i = 0;
        while (t >= weights[i].ColumnChunks()) t -= weights[i++].ColumnChunks();
        weights[i].Task(wg * weights[i].ColumnChunks() + t);
      });
    }
  });
  AttentionBackwardFinish(*enc_);
  const long combine[4] = {weights[0].CombineTasks(), weights[1].CombineTasks(),
                           weights[2].CombineTasks(), weights[3].CombineTasks()};
  ParallelFor(combine[0] + combine[1] + combine[2] + combine[3] + 1, [&](long t) {
    int i = 0;
    while (i < 4 && t >= combine[i]) t -= combine[i++];
    if (i < 4) return weights[i].Combine(t);
    ln2_sums.Finish(g.ln2);  // the last task: the layer norms' sums
    ln1_sums.Finish(g.ln1);
  });
}

template <typename S>
void Transformer<S>::BlockBackward(int l, const Mat<S>& x_in, Mat<S>& d_x) {
  // On entry d_x = dL/dx_out; on exit dL/dx_in.
  if (fuse_blocks_ && cfg_.pre_ln && !ActivePattern().HasMemory() && l != cfg_.knn.layer &&
      !enc_->Uses(kSiteHeadMix) && FusesBlockBackward(B_, T_)) {
    FusedBlockBackward(l, x_in, d_x);
    return;
  }
  auto& p = p_.blocks[l];
  auto& g = g_.blocks[l];
  auto& c = cache_[l];
  const long N = x_in.rows(), C = cfg_.d_model;
  AttentionShape sh{B_, T_, cfg_.n_heads, cfg_.HeadDim()};
  // d_mid_: gradient w.r.t. the MLP branch's residual input.
  if (cfg_.pre_ln) {
    d_mid_.swap(d_x);  // x_out = x_mid + MLP(LN2(x_mid)); d_x's buffer is free until the end
  } else {
    // x_out = LN2(x_mid + MLP(x_mid))
    LayerNormBackward(p.ln2, c.ln2, d_x, d_mid_, g.ln2, GradWrite::kOverwrite);
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
    // LN2's input gradient added to d_mid_ (no longer read as d_y2), and its parameters' partial
    // sums, chunk by chunk of d_h_.
    LayerNormParamPartials<S> ln2_sums(N, C);
    LinearBackward(c.m_in, p.fc1, d_big_, &d_h_, g.fc1, GradWrite::kOverwrite, &linear_scratch_,
                   [&](long r0, long r1) {
                     ln2_sums.AddChunkWithInputGrad(p.ln2, c.ln2, d_h_, d_mid_, d_mid_, r0,
                                                    r1);
                   });
    ln2_sums.Finish(g.ln2);
  } else {
    LinearBackward(c.m_in, p.fc1, d_big_, &d_mid_, g.fc1, GradWrite::kAdd,
                   &linear_scratch_);  // m_in = x_mid
    // x_mid = LN1(x_in + attn)
    LayerNormBackward(p.ln1, c.ln1, d_mid_, d_h_, g.ln1, GradWrite::kOverwrite);
    d_mid_ = d_h_;
  }
  // d_mid_ = gradient w.r.t. (x_in + attention branch).
  LinearBackward(c.att, p.proj, d_mid_, &d_att_, g.proj, GradWrite::kOverwrite, &linear_scratch_);
  const bool knn = l == cfg_.knn.layer;
  if (knn) KnnMergeBackward(c);  // d_att_ becomes the local attention's gradient
  // A pattern with memory keys (Transformer-XL's recurrence) sends what queries read from their
  // memory to d_k_mem_ / d_v_mem_: the weights see it, the memory's states do not.
  const bool memory = ActivePattern().HasMemory();
  const int el = EncodingLayer(l);
  // The query/key transform's backward runs in each attention task, on the gradients that task
  // just wrote, where the pattern allows (ApplyQKTransform afterwards otherwise).
  const bool fuse_qk = enc_->Uses(kSiteQKTransform) && !memory && !enc_->Uses(kSiteHeadMix);
  Resize(d_qkv_, N, 3 * C);
  if (!memory && !knn && !enc_->Uses(kSiteHeadMix)) {
    // Each attention task zeroes and writes its head's columns of d_qkv's thirds directly.
    AttentionBackwardInto(c.q, c.k, c.v, sh, pos_, ActivePattern(), *enc_, el, c.attn, d_att_,
                          QkvGradOut<S>{d_qkv_.data(), d_qkv_.data() + C, d_qkv_.data() + 2 * C,
                                        3 * C},
                          true, static_cast<Mat<S>*>(nullptr), static_cast<Mat<S>*>(nullptr),
                          fuse_qk);
  } else {
    AttentionGradToQkv(l, c, sh, knn, memory, fuse_qk);
  }
  d_x.swap(d_mid_);  // residual path (d_mid_ is not read again)
  if (!memory) {
    if (cfg_.pre_ln) {
      // LN1's input gradient added to d_x, and its parameters' partial sums, chunk by chunk of d_h_.
      LayerNormParamPartials<S> ln1_sums(N, C);
      LinearBackward(c.a_in, p.qkv, d_qkv_, &d_h_, g.qkv, GradWrite::kOverwrite, &linear_scratch_,
                     [&](long r0, long r1) {
                       ln1_sums.AddChunkWithInputGrad(p.ln1, c.ln1, d_h_, d_x, d_x, r0, r1);
                     });
      ln1_sums.Finish(g.ln1);
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
    LayerNormBackward(p_.side_ln_f, lnf_cache_, d_h_, d_x_, g_.side_ln_f, GradWrite::kOverwrite);
    for (int i = cfg_.side.layers - 1; i >= 0; --i)
      BlockBackward(cfg_.n_layers + i, ys_[i], d_x_);  // the added backbone deltas pass d_x_ on
    return;
  }
  LinearBackward(hf_, p_.head, d_logits, &d_h_, g_.head, GradWrite::kOverwrite, &linear_scratch_);
  if (landmarks) {
    // The real tokens' gradient into their inner rows; the landmarks' outputs had none.
    const int T = T_real_;
    LayerNormBackward(p_.ln_f, lnf_cache_, d_h_, land_dx_, g_.ln_f, GradWrite::kOverwrite);
    ResizeZero(d_x_, N, C);
    for (int b = 0; b < B_; ++b)
      for (int t = 0; t < T; ++t)
        d_x_.row(static_cast<long>(b) * T_ + LandmarkRowOf(t)) =
            land_dx_.row(static_cast<long>(b) * T + t);
  } else {
    LayerNormBackward(p_.ln_f, lnf_cache_, d_h_, d_x_, g_.ln_f, GradWrite::kOverwrite);
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

template void Transformer<float>::KnnMergeBackward(BlockCache<float>& c);
template void Transformer<float>::BlockBackward(int l, const Mat<float>& x_in, Mat<float>& d_x);
template bool Transformer<float>::FusesBlockBackward(int B, int T);
template void Transformer<float>::FusedBlockBackward(int l, const Mat<float>& x_in,
                                                    Mat<float>& d_x);
template void Transformer<float>::AttentionGradToQkv(int l, BlockCache<float>& c,
                                                     const AttentionShape& sh, bool knn,
                                                     bool memory, bool fuse_qk);
template void Transformer<float>::Backward(
    const std::vector<int>& tokens, const Mat<float>& d_logits);
template void Transformer<double>::KnnMergeBackward(BlockCache<double>& c);
template void Transformer<double>::BlockBackward(int l, const Mat<double>& x_in, Mat<double>& d_x);
template bool Transformer<double>::FusesBlockBackward(int B, int T);
template void Transformer<double>::FusedBlockBackward(int l, const Mat<double>& x_in,
                                                    Mat<double>& d_x);
template void Transformer<double>::AttentionGradToQkv(int l, BlockCache<double>& c,
                                                     const AttentionShape& sh, bool knn,
                                                     bool memory, bool fuse_qk);
template void Transformer<double>::Backward(
    const std::vector<int>& tokens, const Mat<double>& d_logits);

}  // namespace lexp
