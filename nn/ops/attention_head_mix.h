// Multi-head attention for an encoding whose logit of head h at (i, j) depends on every head's
// logit there (site 8, the head mix: DAPE, Zheng et al. 2024, arXiv:2405.14722). The work is split
// by sequence and block of 64 queries, all heads together: every head's logits over the block's
// keys (sites 6, 4 and 5, unmasked), the mix, then each head's mask, softmax and product with its
// values. A block holds its queries' every key, so no online softmax is needed: the streaming
// (evaluation) path keeps O(H * 64 * T) per thread and the materialised one the same [T, T]
// probabilities as the per-head path (nn/ops/attention.h), with the same caches and results.
// The backward runs one task per sequence (its keys' gradients gather over every query block) and
// recomputes the unmixed logits of each block for the mix's backward.
// Not with landmark attention, memory keys or value terms (site 7); the recipe check refuses them
// first (EncodingInfo::needs_whole_rows).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "nn/ops/attention_core.h"

namespace lexp {

namespace attention_detail {

// The context of every head of one sequence.
inline std::vector<AttentionContext> HeadContexts(const AttentionPattern& pattern_all, int layer,
                                                  const AttentionShape& sh,
                                                  const std::vector<double>& pos) {
  std::vector<AttentionContext> ctxs;
  ctxs.reserve(sh.H);
  for (int h = 0; h < sh.H; ++h) {
    const AttentionPattern& pattern = pattern_all.ForHead(h, sh.H);
    ctxs.push_back(AttentionContext{layer, h, sh.H, sh.D, sh.T, pos.data(), &pattern,
                                    pattern.PlainDistance()});
  }
  return ctxs;
}

// Keys [jb, je) visible to any query of [i0, i1) in any head.
inline void HeadsBlockKeyBounds(const std::vector<AttentionContext>& ctxs, int i0, int i1, int T,
                                int* jb, int* je) {
  *jb = T;
  *je = 0;
  for (const AttentionContext& ctx : ctxs) {
    int b, e;
    BlockKeyBounds(*ctx.pattern, i0, i1, T, &b, &e);
    *jb = std::min(*jb, b);
    *je = std::max(*je, e);
  }
  if (*je < *jb) *je = *jb;
}

// Room for H blocks of n rows of m keys in buf, each block starting on a 64-byte boundary, so the
// products' kernels see the same alignment whichever thread's buffer holds them (results are
// bit-identical at any thread count). Returns the elements between two blocks.
template <typename S>
long HeadBlocks(std::vector<S>& buf, int H, int n, int m, S** first) {
  constexpr long kAlign = 64 / sizeof(S);
  const long block = (static_cast<long>(n) * m + kAlign - 1) / kAlign * kAlign;
  const size_t need = static_cast<size_t>(H * block + kAlign);
  if (buf.size() < need) buf.resize(need);
  const auto address = reinterpret_cast<std::uintptr_t>(buf.data());
  *first = buf.data() + static_cast<long>((64 - address % 64) % 64) / static_cast<long>(sizeof(S));
  return block;
}

// Every head's logits (sites 6, 4 and 5, before the mix and the mask) of queries [i0, i1) against
// keys [jb, je): head h's [i1 - i0, je - jb] rows at heads[h], in buf (HeadBlocks).
// q, k: the sequence's first row of [T, C]; qk[h] gets head h's columns.
template <typename S>
void UnmixedLogits(const PositionEncoding<S>& enc, const std::vector<AttentionContext>& ctxs,
                   const S* q, const S* k, long C, int i0, int i1, int jb, int je,
                   std::vector<S>& buf, std::vector<S*>& heads, std::vector<HeadQK<S>>& qk) {
  const int H = static_cast<int>(ctxs.size()), D = ctxs[0].head_dim;
  S* first = nullptr;
  const long block = HeadBlocks(buf, H, i1 - i0, je - jb, &first);
  heads.resize(H);
  qk.resize(H);
  for (int h = 0; h < H; ++h) {
    const long col = static_cast<long>(h) * D;
    qk[h] = HeadQK<S>{q + col, k + col, C};
    heads[h] = first + h * block;
    ComputeLogits<S>(enc, ctxs[h], q + col, k + col, nullptr, 0, C, i0, i1, jb, je, heads[h],
                     je - jb, /*mask=*/false);
  }
}

}  // namespace attention_detail

// As AttentionForward (nn/ops/attention.h), for an encoding with site 8.
template <typename S>
void HeadMixAttentionForward(const Mat<S>& q, const Mat<S>& k, const Mat<S>& v,
                             const AttentionShape& sh, const std::vector<double>& pos,
                             const AttentionPattern& pattern_all, const PositionEncoding<S>& enc,
                             int layer, bool materialize, AttentionCache<S>& cache, Mat<S>& out) {
  using namespace attention_detail;
  const int T = sh.T, D = sh.D, H = sh.H;
  const long C = sh.C(), stride = sh.Stride();
  LEXP_CHECK(static_cast<int>(pos.size()) == T, "attention: position ids do not match T");
  LEXP_CHECK(stride >= T && sh.first_query >= 0 && sh.first_query <= T, "attention: bad rows");
  LEXP_CHECK(!materialize || (sh.first_query == 0 && stride == T),
             "attention: incremental decoding streams (no materialised maps)");
  LEXP_CHECK(pattern_all.LandmarkBlock() == 0 && !pattern_all.HasMemory() &&
                 !enc.Uses(kSiteValueTerm),
             "attention: an encoding that mixes heads runs without landmarks, memory keys or "
             "value terms");
  Resize(out, static_cast<long>(sh.B) * stride, C);
  cache.materialized = materialize;
  if (materialize) {
    Resize(cache.probs, sh.Tasks() * T, T);
    if (cache.capture_logits) Resize(cache.logits, sh.Tasks() * T, T);
  }
  if (cache.keep_lse) {
    LEXP_CHECK(sh.first_query == 0 && stride == T, "attention: no log-sum-exp while decoding");
    Resize(cache.lse, sh.Tasks() * T);
  }
  const int blocks = (T - sh.first_query + kQueryBlock - 1) / kQueryBlock;
  if (blocks <= 0) return;
  const S neg_inf = -std::numeric_limits<S>::infinity();
  ParallelFor(static_cast<long>(sh.B) * blocks, [&](long work) {
    const int b = static_cast<int>(work / blocks);
    const int i0 = sh.first_query + static_cast<int>(work % blocks) * kQueryBlock;
    const int i1 = std::min(T, i0 + kQueryBlock), n = i1 - i0;
    const std::vector<AttentionContext> ctxs = HeadContexts(pattern_all, layer, sh, pos);
    const long base = static_cast<long>(b) * stride * C;
    int jb, je;
    HeadsBlockKeyBounds(ctxs, i0, i1, T, &jb, &je);
    const int m = je - jb;
    AttentionScratch<S>& sc = cache.scratch.local();
    std::vector<S*> heads;
    std::vector<HeadQK<S>> qk;
    UnmixedLogits(enc, ctxs, q.data() + base, k.data() + base, C, i0, i1, jb, je, sc.mix, heads,
                  qk);
    enc.MixHeads(ctxs.data(), i0, i1, jb, je, qk.data(), heads.data(), m);
    for (int h = 0; h < H; ++h) {
      const AttentionPattern& pattern = *ctxs[h].pattern;
      const long task = static_cast<long>(b) * H + h;
      S* s = heads[h];
      for (int r = 0; r < n; ++r)
        SetMasked(pattern, i0 + r, T, jb, je, s + static_cast<long>(r) * m, neg_inf);
      if (materialize && cache.capture_logits) {
        auto Lg = cache.logits.block(task * T + i0, 0, n, T);
        Lg.setConstant(neg_inf);
        for (int r = 0; r < n; ++r)
          std::copy(s + static_cast<long>(r) * m, s + static_cast<long>(r + 1) * m,
                    Lg.row(r).data() + jb);
      }
      for (int r = 0; r < n; ++r)
        SoftmaxVisibleRow(pattern, i0 + r, T, jb, je, s + static_cast<long>(r) * m,
                          cache.keep_lse ? &cache.lse[task * T + i0 + r] : nullptr);
      if (materialize) {
        auto P = cache.probs.block(task * T + i0, 0, n, T);
        P.setZero();
        for (int r = 0; r < n; ++r)
          std::copy(s + static_cast<long>(r) * m, s + static_cast<long>(r + 1) * m,
                    P.row(r).data() + jb);
      }
      const long col = base + static_cast<long>(h) * D;
      Gemm<S>(false, false, n, D, m, s, m, v.data() + col + static_cast<long>(jb) * C, C, false,
              out.data() + col + static_cast<long>(i0) * C, C);
    }
  });
}

// As AttentionBackward (nn/ops/attention.h), for an encoding with site 8. Per block of queries:
// d_p = d_o v^T and d_a = p * (d_p - rowsum(d_p * p)) for every head, the mix's backward across
// heads, then each head's site 4, scale and products into d_q and d_k.
template <typename S>
void HeadMixAttentionBackward(const Mat<S>& q, const Mat<S>& k, const Mat<S>& v,
                              const AttentionShape& sh, const std::vector<double>& pos,
                              const AttentionPattern& pattern_all, PositionEncoding<S>& enc,
                              int layer, AttentionCache<S>& cache, const Mat<S>& d_out,
                              Mat<S>& d_q, Mat<S>& d_k, Mat<S>& d_v) {
  using namespace attention_detail;
  LEXP_CHECK(cache.materialized, "attention backward needs the materialised forward");
  LEXP_CHECK(pattern_all.LandmarkBlock() == 0 && !pattern_all.HasMemory(),
             "attention: an encoding that mixes heads runs without landmarks or memory keys");
  const int T = sh.T, D = sh.D, H = sh.H;
  const long C = sh.C();
  const S inv_sqrt_d = S(1) / std::sqrt(S(D));
  const bool has_term = enc.Uses(kSiteLogitTerm);
  const bool has_scale = enc.Uses(kSiteLogitScale);
  const bool has_d_lse = cache.d_lse.size() > 0;
  enc.BeginBackward(static_cast<int>(sh.Tasks()));
  ParallelFor(sh.B, [&](long b) {
    const std::vector<AttentionContext> ctxs = HeadContexts(pattern_all, layer, sh, pos);
    const long base = b * T * C;
    AttentionScratch<S>& sc = cache.scratch.local();
    std::vector<S*> heads, d_heads(H);
    std::vector<HeadQK<S>> qk;
    std::vector<HeadQKGrad<S>> grads(H);
    for (int h = 0; h < H; ++h) {
      const long col = base + static_cast<long>(h) * D;
      grads[h] = HeadQKGrad<S>{d_q.data() + col, d_k.data() + col, C};
    }
    for (int i0 = 0; i0 < T; i0 += kQueryBlock) {
      const int i1 = std::min(T, i0 + kQueryBlock), n = i1 - i0;
      int jb, je;
      HeadsBlockKeyBounds(ctxs, i0, i1, T, &jb, &je);
      const int m = je - jb;
      UnmixedLogits(enc, ctxs, q.data() + base, k.data() + base, C, i0, i1, jb, je, sc.mix,
                    heads, qk);
      S* d_first = nullptr;
      const long block = HeadBlocks(sc.d_mix, H, n, m, &d_first);
      for (int h = 0; h < H; ++h) {
        const long task = b * H + h, col = base + static_cast<long>(h) * D;
        S* dA = d_heads[h] = d_first + h * block;
        const S* P = cache.probs.data() + (task * T + i0) * T + jb;
        const S* dO = d_out.data() + col + static_cast<long>(i0) * C;
        Gemm<S>(false, true, n, m, D, dO, C, v.data() + col + static_cast<long>(jb) * C, C, false,
                dA, m);  // d_p = d_o v^T
        Gemm<S>(true, false, m, D, n, P, T, dO, C, true,
                d_v.data() + col + static_cast<long>(jb) * C, C);  // d_v += p^T d_o
        for (int r = 0; r < n; ++r) {
          Eigen::Map<RowVec<S>> d_row(dA + static_cast<long>(r) * m, m);
          Eigen::Map<const RowVec<S>> p_row(P + static_cast<long>(r) * T, m);
          S dot = d_row.dot(p_row);
          if (has_d_lse) dot -= cache.d_lse[task * T + i0 + r];
          d_row = p_row.cwiseProduct((d_row.array() - dot).matrix());
        }
      }
      enc.MixHeadsBackward(ctxs.data(), i0, i1, jb, je, qk.data(), heads.data(), d_heads.data(),
                           m, grads.data(), static_cast<int>(b));
      for (int h = 0; h < H; ++h) {
        const long col = base + static_cast<long>(h) * D;
        S* dA = d_heads[h];
        if (has_term)
          enc.LogitTermBackward(ctxs[h], i0, i1, jb, je, qk[h], dA, m, grads[h],
                                static_cast<int>(b * H + h));
        Eigen::Map<Mat<S>> dA_block(dA, n, m);
        if (has_scale) {
          for (int r = 0; r < n; ++r) dA_block.row(r) *= enc.LogitScale(ctxs[h], i0 + r);
        }
        dA_block *= inv_sqrt_d;
        Gemm<S>(false, false, n, D, m, dA, m, k.data() + col + static_cast<long>(jb) * C, C, true,
                d_q.data() + col + static_cast<long>(i0) * C, C);  // d_q += d_a k
        Gemm<S>(true, false, m, D, n, dA, m, q.data() + col + static_cast<long>(i0) * C, C, true,
                d_k.data() + col + static_cast<long>(jb) * C, C);  // d_k += d_a^T q
      }
    }
  });
  enc.EndBackward();
}

}  // namespace lexp
