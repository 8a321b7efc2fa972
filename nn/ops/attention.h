// Scaled dot-product multi-head attention with the encoding's sites 3-6 plugged in
// (Vaswani et al. 2017, arXiv:1706.03762, eq. 1). Work is split into independent (sequence, head)
// tasks, and each task into blocks of queries (32 when the probabilities are kept, 64 streaming)
// that only touch the keys their pattern allows, so a causal mask costs about half of the dense
// product.
//
// Two paths with the same result:
//  * materialised: keeps the [T, T] probabilities of every task (training, and probes that capture
//    logits/probabilities);
//  * streaming: evaluation without capture; keys are visited in blocks of 256 with an online
//  softmax
//    (Milakov & Gimelshein 2018, arXiv:1805.02867), so memory is O(T), and 16k-token sequences fit.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "nn/ops/attention_core.h"
#include "nn/ops/attention_head_mix.h"

namespace lexp {

// The checks and buffers of an AttentionForward pass without head mixing, before any of its tasks.
template <typename S>
void AttentionForwardSetup(const AttentionShape& sh, const std::vector<double>& pos,
                           const AttentionPattern& pattern_all, bool materialize,
                           AttentionCache<S>& cache, Mat<S>& out) {
  const int T = sh.T;
  const long C = sh.C(), stride = sh.Stride();
  LEXP_CHECK(static_cast<int>(pos.size()) == T, "attention: position ids do not match T");
  LEXP_CHECK(stride >= T && sh.first_query >= 0 && sh.first_query <= T, "attention: bad rows");
  LEXP_CHECK(!materialize || (sh.first_query == 0 && stride == T),
             "attention: incremental decoding streams (no materialised maps)");
  Resize(out, static_cast<long>(sh.B) * stride, C);
  cache.materialized = materialize;
  const int landmark = pattern_all.LandmarkBlock();
  LEXP_CHECK(landmark == 0 || (!cache.keep_lse && sh.first_query == 0 && stride == T),
             "attention: landmark attention has no log-sum-exp and no incremental decoding");
  if (materialize) {
    Resize(cache.probs, sh.Tasks() * T, T);
    if (cache.capture_logits) Resize(cache.logits, sh.Tasks() * T, T);
    if (landmark > 0) Resize(cache.group, sh.Tasks() * T, T);
  }
  if (cache.keep_lse) {
    LEXP_CHECK(sh.first_query == 0 && stride == T, "attention: no log-sum-exp while decoding");
    Resize(cache.lse, sh.Tasks() * T);
  }
}

// Task `task` of that pass (sequence task / H, head task % H), once its setup has run: the tasks
// are independent, so a caller may run any of them on any thread (each once), or fuse them with
// the row work of the same sequences (Transformer::BlockForward).
template <typename S>
void AttentionForwardTask(const Mat<S>& q, const Mat<S>& k, const Mat<S>& v,
                          const AttentionShape& sh, const std::vector<double>& pos,
                          const AttentionPattern& pattern_all, const PositionEncoding<S>& enc,
                          int layer, bool materialize, AttentionCache<S>& cache, Mat<S>& out,
                          const Mat<S>* keys_t, long task) {
  using namespace attention_detail;
  const int T = sh.T, D = sh.D;
  const long C = sh.C(), stride = sh.Stride();
  const int landmark = pattern_all.LandmarkBlock();
  const S neg_inf = -std::numeric_limits<S>::infinity();
  const bool has_value_term = enc.Uses(kSiteValueTerm);
  const int b = static_cast<int>(task / sh.H), h = static_cast<int>(task % sh.H);
  const AttentionPattern& pattern = pattern_all.ForHead(h, sh.H);
  AttentionContext ctx{layer, h, sh.H, D, T, pos.data(), &pattern, pattern.PlainDistance()};
  const long base = static_cast<long>(b) * stride * C + static_cast<long>(h) * D;
  if (materialize && T <= kPrefetchMaxT && task + 1 < sh.Tasks()) {  // the next task's slices
    const long next = (task + 1) / sh.H * stride * C + (task + 1) % sh.H * D;
    for (const Mat<S>* x : {&q, &k, &v}) PrefetchRows(x->data() + next, C, T, D);
  }
  const S* qh = q.data() + base;
  const S* kh = k.data() + base;
  ConstRows<S> V(v.data() + base, T, D, Eigen::OuterStride<>(C));
  Rows<S> O(out.data() + base, T, D, Eigen::OuterStride<>(C));
  AttentionScratch<S>& sc = cache.scratch.local();
  // Transposing the keys costs T*D copies: worth it for a block of queries, not for the one
  // query of a decoding step (whose decoder may keep them transposed: keys_t).
  const S* kt = nullptr;
  long ldkt = 0;
  if (keys_t != nullptr && !landmark) {
    ldkt = keys_t->cols();
    kt = keys_t->data() + task * D * ldkt;
  } else if (T - sh.first_query >= kQueryBlock / 4) {
    TransposeHead(kh, C, T, D, sc.kt);
    kt = sc.kt.data();
    ldkt = sc.kt.cols();
  }
  const int query_block = materialize ? kMaterialisedQueryBlock : kQueryBlock;
  // A contiguous pattern's softmax reads each row's visible keys only and zeroes the others:
  // the materialised logits need their masked keys set (-inf) only to be captured.
  const bool mask_logits = landmark > 0 || cache.capture_logits || !pattern.Contiguous();
  for (int i0 = sh.first_query; i0 < T; i0 += query_block) {
    const int i1 = std::min(T, i0 + query_block), n = i1 - i0;
    int jb, je;
    BlockKeyBounds(pattern, i0, i1, T, &jb, &je);
    if (materialize) {
      auto P = cache.probs.block(task * T + i0, 0, n, T);
      ZeroRows(P.data(), n, jb, T);  // keys outside [jb, je): weight 0 (logits fill the rest)
      ZeroRows(P.data() + je, n, T - je, T);
      S* s = cache.probs.data() + (task * T + i0) * T + jb;
      ComputeLogits(enc, ctx, qh, kh, kt, ldkt, C, i0, i1, jb, je, s, T, mask_logits);
      if (cache.capture_logits) {
        auto Lg = cache.logits.block(task * T + i0, 0, n, T);
        Lg.setConstant(neg_inf);
        Lg.middleCols(jb, je - jb) = P.middleCols(jb, je - jb);
      }
      if (landmark > 0) {
        for (int r = 0; r < n; ++r) {  // the grouped softmax over keys [0, je)
          sc.row.assign(P.row(r).data(), P.row(r).data() + je);
          LandmarkSoftmaxRow(i0 + r, landmark, pattern.LandmarkTopK(), sc.row.data(), je,
                             P.row(r).data(), cache.group.row(task * T + i0 + r).data(),
                             sc.order);
        }
      } else {
        SoftmaxVisibleRows(pattern, i0, n, T, jb, je, s, T,
                           cache.keep_lse ? &cache.lse[task * T + i0] : nullptr);
      }
      Gemm<S>(false, false, n, D, je - jb, P.data() + jb, T, V.data() + jb * C, C, false,
              O.data() + i0 * C, C);
      if (has_value_term)
        enc.AddValueTerm(ctx, i0, i1, jb, je, P.data() + jb, T, O.data() + i0 * C, C);
    } else if (landmark > 0) {
      // The grouped softmax needs a query's whole row: logits over [0, je), weights in place.
      Resize(sc.a, kQueryBlock, T);
      ComputeLogits(enc, ctx, qh, kh, kt, ldkt, C, i0, i1, jb, je, sc.a.data(), T);
      sc.group.resize(T);
      for (int r = 0; r < n; ++r) {
        S* row = sc.a.data() + static_cast<long>(r) * T;
        sc.row.assign(row, row + je);
        LandmarkSoftmaxRow(i0 + r, landmark, pattern.LandmarkTopK(), sc.row.data(), je, row,
                           sc.group.data(), sc.order);
      }
      Gemm<S>(false, false, n, D, je, sc.a.data(), T, V.data(), C, false, O.data() + i0 * C, C);
      if (has_value_term)
        enc.AddValueTerm(ctx, i0, i1, 0, je, sc.a.data(), T, O.data() + i0 * C, C);
    } else {
      Resize(sc.a, kQueryBlock, kKeyBlock);
      Resize(sc.acc, kQueryBlock, D);
      if (sc.m.size() != kQueryBlock) sc.m.resize(kQueryBlock);
      if (sc.l.size() != kQueryBlock) sc.l.resize(kQueryBlock);
      sc.m.head(n).setConstant(neg_inf);  // the block's rows only (a decoding step has one)
      sc.l.head(n).setZero();
      sc.acc.topRows(n).setZero();
      // One query in fp32 (a decoding step): p v as a sum of value rows, not a matrix product.
      const bool one_row = n == 1 && ActivePrecision().matmul == Precision::kFp32;
      for (int j0 = jb; j0 < je; j0 += kKeyBlock) {
        const int j1 = std::min(je, j0 + kKeyBlock), m = j1 - j0;
        ComputeLogits(enc, ctx, qh, kh, kt, ldkt, C, i0, i1, j0, j1, sc.a.data(), kKeyBlock);
        for (int r = 0; r < n; ++r) {
          auto row = sc.a.row(r).head(m);
          const S bmax = row.maxCoeff();
          if (bmax == neg_inf) {
            row.setZero();
            continue;
          }
          const S m_new = std::max(sc.m[r], bmax);
          const S corr = std::exp(sc.m[r] - m_new);  // exp(-inf) = 0 on the first block
          ExpShiftedInPlace(row.data(), m, m_new);
          SetMasked(pattern, i0 + r, T, j0, j1, row.data(), S(0));
          sc.l[r] = sc.l[r] * corr + row.sum();
          sc.acc.row(r) *= corr;
          sc.m[r] = m_new;
        }
        if (one_row) {
          AddWeightedRows(sc.a.data(), V.data() + static_cast<long>(j0) * C, C, m, D,
                          sc.acc.data());
        } else {
          Gemm<S>(false, false, n, D, m, sc.a.data(), kKeyBlock, V.data() + j0 * C, C, true,
                  sc.acc.data(), D);
        }
        if (has_value_term)
          enc.AddValueTerm(ctx, i0, i1, j0, j1, sc.a.data(), kKeyBlock, sc.acc.data(), D);
      }
      for (int r = 0; r < n; ++r) {
        if (sc.l[r] == S(0)) {  // every visible logit -inf: overflow, reported as NaN
          LEXP_CHECK(SeesAKey(pattern, i0 + r, T), "attention: a query sees no key");
          O.row(i0 + r).setConstant(std::numeric_limits<S>::quiet_NaN());
          if (cache.keep_lse) cache.lse[task * T + i0 + r] = std::numeric_limits<S>::quiet_NaN();
          continue;
        }
        O.row(i0 + r) = sc.acc.row(r) / sc.l[r];
        if (cache.keep_lse) cache.lse[task * T + i0 + r] = sc.m[r] + std::log(sc.l[r]);
      }
    }
  }
}

// q, k, v: [B*T, C] (head h in columns [h*D, (h+1)*D)); pos: [T]. out: [B*T, C].
// keys_t (optional, incremental decoding): the same keys transposed, [B*H*D, >= T], row
// (b*H + h)*D + d holding dimension d of head h's keys of sequence b, kept by the decoder as keys
// arrive, so that a step does not transpose them again.
template <typename S>
void AttentionForward(const Mat<S>& q, const Mat<S>& k, const Mat<S>& v, const AttentionShape& sh,
                      const std::vector<double>& pos, const AttentionPattern& pattern_all,
                      const PositionEncoding<S>& enc, int layer, bool materialize,
                      AttentionCache<S>& cache, Mat<S>& out, const Mat<S>* keys_t = nullptr) {
  using namespace attention_detail;
  if (enc.Uses(kSiteHeadMix)) {
    HeadMixAttentionForward(q, k, v, sh, pos, pattern_all, enc, layer, materialize, cache, out);
    return;
  }
  AttentionForwardSetup(sh, pos, pattern_all, materialize, cache, out);
  ParallelFor(sh.Tasks(), [&](long task) {
    AttentionForwardTask(q, k, v, sh, pos, pattern_all, enc, layer, materialize, cache, out, keys_t,
                         task);
  });
}

// Forward (per task, visible keys only): a = scale_i q.k/sqrt(D) + b(i,j); p = softmax(a);
// o = p v (+ sum_j p_ij r(i,j), site 7).
// Backward: d_p = d_o v^T (+ d_o . r(i,j));  d_v += p^T d_o;  d_a = p * (d_p - rowsum(d_p * p));
//           site 4 maps d_a back through its term;  d_q += scale_i d_a k / sqrt(D);
//           d_k += (scale d_a)^T q / sqrt(D).
// Needs the materialised forward. d_q, d_k, d_v: [B*T, C], accumulated.
// A pattern with memory keys (AttentionPattern::HasMemory) splits the key and value gradients:
// what query i sends to its memory keys j < MemoryEnd(i) goes to d_k_mem and d_v_mem ([B*T, C],
// accumulated; required then), the rest to d_k and d_v; d_k + d_k_mem is the gradient of the keys
// as parameters see it, d_k alone what flows back into the keys' states.
// qk_transform_backward: each task also maps its head's d_q and d_k back through the encoding's
// query/key transform (TransformQKBackward) as soon as they are whole, while they are in the
// cache of the thread that wrote them; the same bits as applying it to d_q and d_k afterwards (no
// memory keys, no head mixing).
// AttentionBackwardInto writes d_q, d_k, d_v where `out` says (the thirds of a [B*T, 3C] d_qkv:
// ld 3C), each task zeroing its own rows and columns first when zero_first (no head mixing).
template <typename S>
struct QkvGradOut {
  S* q;
  S* k;
  S* v;
  long ld;  // between rows of each of q, k, v
};

// Whether the encoding keeps per-task state through a backward pass (BeginBackward/EndBackward):
// a logit term that depends on q or k, or a value term.
template <typename S>
bool AttentionBackwardHasTaskState(const PositionEncoding<S>& enc) {
  return (enc.Uses(kSiteLogitTerm) && !enc.LogitTermIsConstant()) || enc.Uses(kSiteValueTerm);
}

// The checks of an AttentionBackwardInto pass and the encoding's backward set-up, before any of
// its tasks; AttentionBackwardFinish after the last.
template <typename S>
void AttentionBackwardSetup(const AttentionShape& sh, const AttentionPattern& pattern_all,
                            PositionEncoding<S>& enc, const AttentionCache<S>& cache,
                            const QkvGradOut<S>& out, Mat<S>* d_k_mem, Mat<S>* d_v_mem,
                            bool qk_transform_backward) {
  LEXP_CHECK(!qk_transform_backward || (!enc.Uses(kSiteHeadMix) && !pattern_all.HasMemory()),
             "attention backward: the query/key transform is fused only without memory keys or "
             "head mixing");
  LEXP_CHECK(!enc.Uses(kSiteHeadMix), "attention backward: head mixing writes separate matrices");
  LEXP_CHECK(cache.materialized, "attention backward needs the materialised forward");
  LEXP_CHECK(!pattern_all.HasMemory() ||
                 (d_k_mem != nullptr && d_v_mem != nullptr && out.ld == sh.C()),
             "attention backward: a pattern with memory keys needs the memory gradients, and "
             "d_q, d_k, d_v as separate matrices");
  if (AttentionBackwardHasTaskState(enc)) enc.BeginBackward(static_cast<int>(sh.Tasks()));
}

template <typename S>
void AttentionBackwardFinish(PositionEncoding<S>& enc) {
  if (AttentionBackwardHasTaskState(enc)) enc.EndBackward();
}

// Task `task` of that pass (sequence task / H, head task % H): independent of the others, so a
// caller may run any of them on any thread (each once), or fuse them with the row work of the same
// sequences (Transformer::FusedBlockBackward).
template <typename S>
void AttentionBackwardTask(const Mat<S>& q, const Mat<S>& k, const Mat<S>& v,
                           const AttentionShape& sh, const std::vector<double>& pos,
                           const AttentionPattern& pattern_all, PositionEncoding<S>& enc,
                           int layer, AttentionCache<S>& cache, const Mat<S>& d_out,
                           const QkvGradOut<S>& out, bool zero_first, Mat<S>* d_k_mem,
                           Mat<S>* d_v_mem, bool qk_transform_backward, long task) {
  using namespace attention_detail;
  const int T = sh.T, D = sh.D;
  const long C = sh.C();
  const S inv_sqrt_d = S(1) / std::sqrt(S(D));
  // A constant additive term (ALiBi) has no backward: d_a passes it unchanged.
  const bool has_term = enc.Uses(kSiteLogitTerm) && !enc.LogitTermIsConstant();
  const bool has_value_term = enc.Uses(kSiteValueTerm);
  const bool has_scale = enc.Uses(kSiteLogitScale);
  const bool split = pattern_all.HasMemory();
  const bool has_d_lse = cache.d_lse.size() > 0;
  const int landmark = pattern_all.LandmarkBlock();
  const int b = static_cast<int>(task / sh.H), h = static_cast<int>(task % sh.H);
  const AttentionPattern& pattern = pattern_all.ForHead(h, sh.H);
  AttentionContext ctx{layer, h, sh.H, D, T, pos.data(), &pattern, pattern.PlainDistance()};
  const long base = static_cast<long>(b) * T * C + static_cast<long>(h) * D;
  if (T <= kPrefetchMaxT && task + 1 < sh.Tasks()) {  // the next task's slices and probabilities
    const long next = (task + 1) / sh.H * T * C + (task + 1) % sh.H * D;
    for (const Mat<S>* x : {&q, &k, &v, &d_out}) PrefetchRows(x->data() + next, C, T, D);
    PrefetchRows(cache.probs.data() + (task + 1) * T * T, T, T, T);
  }
  const long ldo = out.ld, out_base = static_cast<long>(b) * T * ldo + static_cast<long>(h) * D;
  ConstRows<S> Q(q.data() + base, T, D, Eigen::OuterStride<>(C));
  ConstRows<S> K(k.data() + base, T, D, Eigen::OuterStride<>(C));
  ConstRows<S> dO(d_out.data() + base, T, D, Eigen::OuterStride<>(C));
  S* dQ = out.q + out_base;
  S* dK = out.k + out_base;
  S* dV = out.v + out_base;
  if (zero_first) {
    for (S* d : {dQ, dK, dV}) ZeroRows(d, T, D, ldo);
  }
  S* dK_mem = split ? d_k_mem->data() + base : nullptr;
  S* dV_mem = split ? d_v_mem->data() + base : nullptr;
  AttentionScratch<S>& sc = cache.scratch.local();
  Resize(sc.a, kQueryBlock, T);
  if (split) Resize(sc.mem, kQueryBlock, T);
  TransposeHead(v.data() + base, C, T, D, sc.kt);  // values, transposed
  for (int i0 = 0; i0 < T; i0 += kMaterialisedQueryBlock) {
    const int i1 = std::min(T, i0 + kMaterialisedQueryBlock), n = i1 - i0;
    int jb, je;
    BlockKeyBounds(pattern, i0, i1, T, &jb, &je);
    const int m = je - jb;
    // Memory keys of the block lie in [jb, mem_end): rows of d_a (and p) split at MemoryEnd(i).
    const int mem_end = split ? std::clamp(pattern.MemoryEnd(i1 - 1), jb, je) : jb;
    const int mm = mem_end - jb;
    auto P = cache.probs.block(task * T + i0, jb, n, m);
    auto dA = sc.a.topLeftCorner(n, m);
    // Writes the memory part of `from` (each row's keys j < MemoryEnd(i)) into sc.mem, and
    // zeroes it in `from` when `take` (then from + sc.mem is what `from` held).
    auto split_memory = [&](auto& from, bool take) {
      for (int r = 0; r < n; ++r) {
        const int e = std::clamp(pattern.MemoryEnd(i0 + r), jb, mem_end) - jb;
        sc.mem.row(r).head(e) = from.row(r).head(e);
        sc.mem.row(r).segment(e, mm - e).setZero();
        if (take) from.row(r).head(e).setZero();
      }
    };
    Gemm<S>(false, false, n, m, D, dO.data() + i0 * C, C, sc.kt.data() + jb, T, false,
            sc.a.data(), T);  // d_p = d_o v^T
    if (mm > 0) {
      // d_v_mem += p_mem^T d_o, d_v += (p - p_mem)^T d_o
      split_memory(P, false);
      Gemm<S>(true, false, mm, D, n, sc.mem.data(), T, dO.data() + i0 * C, C, true,
              dV_mem + jb * C, C);
      for (int r = 0; r < n; ++r) sc.mem.row(r).head(mm) = P.row(r).head(mm) - sc.mem.row(r).head(mm);
      Gemm<S>(true, false, mm, D, n, sc.mem.data(), T, dO.data() + i0 * C, C, true,
              dV + jb * ldo, ldo);
      if (mm < m)
        Gemm<S>(true, false, m - mm, D, n, P.data() + mm, T, dO.data() + i0 * C, C, true,
                dV + mem_end * ldo, ldo);
    } else {
      Gemm<S>(true, false, m, D, n, P.data(), T, dO.data() + i0 * C, C, true, dV + jb * ldo,
              ldo);  // d_v += p^T d_o
    }
    if (has_value_term) {
      enc.ValueTermBackward(ctx, i0, i1, jb, je, P.data(), T, dO.data() + i0 * C, C, sc.a.data(),
                            T, static_cast<int>(task));
    }
    // Without site 4's term, a scale or memory keys, d_a's 1/sqrt(D) is applied in the same pass
    // (the same two roundings an element as in two passes).
    const bool scale_now = !has_term && !has_scale && mm == 0 && landmark == 0;
    bool rows_done = false;
    if constexpr (kMaskedPackets<S>) {
      if (landmark == 0) {  // packet passes over each row, the last packet under a mask
        rows_done = true;
        const PacketSpan<S> span(m);
        // Every row's dot product first, then every row's gradient: the rows' chains are
        // independent, so the core overlaps them (one row's pass waits on its reduction).
        S dots[kMaterialisedQueryBlock];
        for (int r = 0; r < n; ++r) {
          dots[r] = SpanDot(sc.a.data() + static_cast<long>(r) * T,
                            P.data() + static_cast<long>(r) * T, span);
          if (has_d_lse) dots[r] -= cache.d_lse[task * T + i0 + r];
        }
        for (int r = 0; r < n; ++r)
          SpanSoftmaxGrad(sc.a.data() + static_cast<long>(r) * T,
                          P.data() + static_cast<long>(r) * T, span, dots[r],
                          scale_now ? inv_sqrt_d : S(1));
      }
    }
    for (int r = 0; r < n && !rows_done; ++r) {
      if (landmark > 0) {
        LandmarkSoftmaxBackwardRow(i0 + r, landmark, cache.group.row(task * T + i0 + r).data(),
                                   je, sc.a.data() + static_cast<long>(r) * T);
        continue;
      }
      S dot = dA.row(r).dot(P.row(r));
      if (has_d_lse) dot -= cache.d_lse[task * T + i0 + r];
      if (scale_now)
        dA.row(r).array() = (P.row(r).array() * (dA.row(r).array() - dot)) * inv_sqrt_d;
      else
        dA.row(r) = P.row(r).cwiseProduct((dA.row(r).array() - dot).matrix());
    }
    // d_a's memory part, kept apart from here on (site 4's backward is linear in d_a).
    if (mm > 0) split_memory(dA, true);
    if (has_term) {
      const HeadQK<S> qk{q.data() + base, k.data() + base, C};
      enc.LogitTermBackward(ctx, i0, i1, jb, je, qk, sc.a.data(), T,
                            HeadQKGrad<S>{dQ, dK, ldo}, static_cast<int>(task));
      if (mm > 0)
        enc.LogitTermBackward(ctx, i0, i1, jb, mem_end, qk, sc.mem.data(), T,
                              HeadQKGrad<S>{dQ, dK_mem, C},  // split: ldo = C
                              static_cast<int>(task));
    }
    if (has_scale) {
      for (int r = 0; r < n; ++r) {
        const S scale = enc.LogitScale(ctx, i0 + r);
        dA.row(r) *= scale;
        if (mm > 0) sc.mem.row(r).head(mm) *= scale;
      }
    }
    if (!scale_now) dA *= inv_sqrt_d;
    Gemm<S>(false, false, n, D, m, sc.a.data(), T, K.data() + jb * C, C, true, dQ + i0 * ldo,
            ldo);  // d_q += d_a k
    Gemm<S>(true, false, m, D, n, sc.a.data(), T, Q.data() + i0 * C, C, true, dK + jb * ldo,
            ldo);  // d_k += d_a^T q
    if (mm > 0) {
      sc.mem.topLeftCorner(n, mm) *= inv_sqrt_d;
      Gemm<S>(false, false, n, D, mm, sc.mem.data(), T, K.data() + jb * C, C, true,
              dQ + i0 * ldo, ldo);  // d_q += d_a_mem k_mem
      Gemm<S>(true, false, mm, D, n, sc.mem.data(), T, Q.data() + i0 * C, C, true,
              dK_mem + jb * C, C);  // d_k_mem += d_a_mem^T q
    }
  }
  if (qk_transform_backward) {  // this head's d_q and d_k are whole: only this task wrote them
    AttentionContext whole{layer, h, sh.H, D, T, pos.data(), &pattern_all,
                           pattern_all.PlainDistance()};
    enc.TransformQKBackward(whole, true, dQ, ldo);
    enc.TransformQKBackward(whole, false, dK, ldo);
  }
}

template <typename S>
void AttentionBackwardInto(const Mat<S>& q, const Mat<S>& k, const Mat<S>& v,
                           const AttentionShape& sh, const std::vector<double>& pos,
                           const AttentionPattern& pattern_all, PositionEncoding<S>& enc,
                           int layer, AttentionCache<S>& cache, const Mat<S>& d_out,
                           const QkvGradOut<S>& out, bool zero_first, Mat<S>* d_k_mem,
                           Mat<S>* d_v_mem, bool qk_transform_backward) {
  AttentionBackwardSetup(sh, pattern_all, enc, cache, out, d_k_mem, d_v_mem,
                         qk_transform_backward);
  ParallelFor(sh.Tasks(), [&](long task) {
    AttentionBackwardTask(q, k, v, sh, pos, pattern_all, enc, layer, cache, d_out, out, zero_first,
                          d_k_mem, d_v_mem, qk_transform_backward, task);
  });
  AttentionBackwardFinish(enc);
}

// d_q, d_k, d_v: [B*T, C] each, accumulated.
template <typename S>
void AttentionBackward(const Mat<S>& q, const Mat<S>& k, const Mat<S>& v, const AttentionShape& sh,
                       const std::vector<double>& pos, const AttentionPattern& pattern_all,
                       PositionEncoding<S>& enc, int layer, AttentionCache<S>& cache,
                       const Mat<S>& d_out, Mat<S>& d_q, Mat<S>& d_k, Mat<S>& d_v,
                       Mat<S>* d_k_mem = nullptr, Mat<S>* d_v_mem = nullptr,
                       bool qk_transform_backward = false) {
  if (enc.Uses(kSiteHeadMix)) {
    LEXP_CHECK(!qk_transform_backward,
               "attention backward: the query/key transform is fused only without head mixing");
    HeadMixAttentionBackward(q, k, v, sh, pos, pattern_all, enc, layer, cache, d_out, d_q, d_k,
                             d_v);
    return;
  }
  AttentionBackwardInto(q, k, v, sh, pos, pattern_all, enc, layer, cache, d_out,
                        QkvGradOut<S>{d_q.data(), d_k.data(), d_v.data(), sh.C()}, false, d_k_mem,
                        d_v_mem, qk_transform_backward);
}

}  // namespace lexp
