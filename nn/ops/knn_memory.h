// Attention over a retrieved memory, one layer's: the Memorizing Transformer (Wu et al. 2022,
// arXiv:2203.08913), the Focused Transformer (Tworkowski et al. 2023, arXiv:2307.03170) and
// LongMem's memory-augmented side layer (Wang et al. 2023, arXiv:2306.07174).
//
// The memory of query i holds the keys and values that its local attention no longer sees: the
// `memory` rows j before the first key of its pattern's bounds (KeyBounds begin b_i:
// j in [b_i - memory, b_i), or [0, b_i) for memory = 0), as a kNN memory of earlier context would.
// They are the layer's own keys and values, or (LongMem) those of another model's layer given as
// `memory` (a frozen backbone's: its cached memory bank), at the same rows.
// Retrieval is exact: the top_k keys by q_i . k_j (ties by the lower row), scored without the
// encoding (the papers store keys without positions). With chunk = s > 1 (LongMem), the memory is
// cut into chunks of s consecutive rows (rows c s .. c s + s - 1, whole chunks inside the memory
// only), each scored by q_i . (the mean of its keys), and the top floor(top_k / s) chunks are
// retrieved whole. In training, the Focused Transformer's
// crossbatch (its section 3.2) puts the memories of d documents in one: the sequences of a batch
// form groups of d (the last group may be smaller), and query i of each retrieves from the same
// rows [b_i - memory, b_i) of every sequence of its group, its own document's memory (positives)
// and the d - 1 others' (negatives); evaluation reads its own memory only (d = 1). Query i then
// attends over them,
//   a_ij = q_i . k_j / sqrt(D),  p = softmax over the retrieved j,  o_mem_i = sum_j p_ij v_j,
// and its log-sum-exp lse_i = log sum_j exp(a_ij) is kept for the Focused Transformer's merge.
// By default the memory is read-only, as a stored memory is: no gradient reaches its keys and
// values, only the querying q_i (and the merge). FoT trains its memory layer differentiably (its
// code backpropagates into the other contexts' keys and values, with no kNN: all of them, which
// top_k >= d * memory gives): with memory_gradient, training sends d_k_j and d_v_j to the memory
// rows too. Queries without memory have lse = -inf and o_mem = 0.
//
// Merges with the local attention's output o_loc (and its log-sum-exp, AttentionCache::lse):
//   gate (Memorizing Transformer, LongMem): o = g_h o_mem + (1 - g_h) o_loc, g_h = sigmoid(b_h)
//     learned per head (queries without memory: o = o_loc);
//   softmax (Focused Transformer): one softmax over local and retrieved keys together,
//     o = w o_loc + (1 - w) o_mem with w = sigmoid(lse_loc - lse_mem).
#pragma once

#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "nn/check.h"
#include "nn/parallel.h"
#include "nn/position_hooks.h"
#include "nn/tensor.h"

namespace lexp {

struct KnnMemoryConfig {
  int layer = -1;      // the layer with a memory (-1: none)
  int top_k = 32;      // keys retrieved per query and head
  int memory = 0;      // rows before the local bounds held in memory (0: every earlier row)
  bool softmax_merge = false;  // false: the gate; true: one softmax with the local keys
  int crossbatch = 1;  // documents whose memories a training query retrieves from (1: its own)
  bool memory_gradient = false;  // training: the memory's keys and values get their gradient
  // The model layer whose keys and values fill the memory (-1: the memory layer's own); LongMem's
  // side layer reads its frozen backbone's.
  int source_layer = -1;
  int chunk = 1;  // rows retrieved together, scored by their mean key (LongMem: 4)
  bool Active() const { return layer >= 0; }
};

template <typename S>
struct KnnMemoryCache {
  int k = 0;              // top_k
  int group = 1;          // sequences whose memories a query read (the forward's group)
  std::vector<int> idx;   // [B*H*T, k] retrieved key rows of qkv (any sequence of the group), -1 past the end
  Mat<S> p;               // [B*H*T, k] their softmax weights (0 past the end)
  Vec<S> lse;             // [B*H*T] log-sum-exp of the retrieved logits, -inf without memory
  Mat<S> out;             // [B*T, C] o_mem, heads in columns as q
  struct Scratch {
    std::vector<S> score, logit;
    std::vector<int> order, rows;
    Mat<S> chunk_keys;  // chunk > 1: the mean key of every chunk of the group's sequences
  };
  tbb::enumerable_thread_specific<Scratch> scratch;
};

// The rows [b, e) that query i of a sequence of T reads from memory under `pattern`.
inline void KnnMemoryRows(const AttentionPattern& pattern, const KnnMemoryConfig& c, int i, int T,
                          int* b, int* e) {
  int kb, ke;
  pattern.KeyBounds(i, T, &kb, &ke);
  *e = kb;
  *b = c.memory > 0 ? std::max(0, kb - c.memory) : 0;
}

// qkv: [B*T, 3C] the layer's projections q | k | v (q and k before the encoding's transform);
// memory: [B*T, 3C] whose k and v fill the memory instead of qkv's (another layer's; null: qkv);
// group: the sequences whose memories a query reads (cfg.crossbatch in training, 1 otherwise).
template <typename S>
void KnnMemoryForward(const Mat<S>& qkv, int B, int T, int H, const AttentionPattern& pattern_all,
                      const KnnMemoryConfig& cfg, KnnMemoryCache<S>& cache, int group = 1,
                      const Mat<S>* memory = nullptr) {
  const long C = qkv.cols() / 3;
  const Mat<S>& src = memory ? *memory : qkv;
  const auto q = qkv.leftCols(C), k = src.middleCols(C, C), v = src.rightCols(C);
  const int D = static_cast<int>(C / H), K = cfg.top_k, s = std::max(1, cfg.chunk);
  const long rows = static_cast<long>(B) * H * T;
  const S inv_sqrt_d = S(1) / std::sqrt(S(D));
  const S neg_inf = -std::numeric_limits<S>::infinity();
  cache.k = K;
  cache.group = group;
  cache.idx.assign(rows * K, -1);
  Resize(cache.p, rows, K);
  cache.p.setZero();
  Resize(cache.lse, rows);
  cache.out.setZero(static_cast<long>(B) * T, C);
  ParallelFor(static_cast<long>(B) * H, [&](long task) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    const AttentionPattern& pattern = pattern_all.ForHead(h, H);
    auto& sc = cache.scratch.local();
    const long base = static_cast<long>(b) * T;
    const int first = b / group * group, members = std::min(group, B - first);
    const int chunks = T / s;  // whole chunks of a sequence
    if (s > 1) {
      // Every chunk's mean key, of each sequence of the group: row m * chunks + c.
      Resize(sc.chunk_keys, static_cast<long>(members) * chunks, D);
      for (int m = 0; m < members; ++m)
        for (int c = 0; c < chunks; ++c) {
          auto mean = sc.chunk_keys.row(static_cast<long>(m) * chunks + c);
          mean.setZero();
          for (int u = 0; u < s; ++u)
            mean += k.row(static_cast<long>(first + m) * T + c * s + u).segment(h * D, D);
          mean /= S(s);
        }
    }
    for (int i = 0; i < T; ++i) {
      const long row = task * T + i;
      int mb, me;
      KnnMemoryRows(pattern, cfg, i, T, &mb, &me);
      // Candidates: the memory's rows (s = 1) or its whole chunks [c0, c1).
      const int c0 = (mb + s - 1) / s, c1 = me / s, per_doc = c1 - c0;
      if (per_doc <= 0) {
        cache.lse[row] = neg_inf;
        continue;
      }
      const int n = members * per_doc, kept = std::min(std::max(1, K / s), n);
      const auto qi = q.row(base + i).segment(h * D, D);
      sc.score.resize(n);
      sc.order.resize(n);
      // Candidate `at` = m * per_doc + c is chunk c0 + c (row c0 + c when s = 1) of the group's
      // m-th sequence: ordering candidates orders their rows.
      auto first_row_of = [&](int at) {
        return (first + at / per_doc) * T + (c0 + at % per_doc) * s;
      };
      for (int at = 0; at < n; ++at) {
        sc.score[at] = s == 1 ? qi.dot(k.row(first_row_of(at)).segment(h * D, D)) * inv_sqrt_d
                              : qi.dot(sc.chunk_keys.row(static_cast<long>(at / per_doc) * chunks +
                                                         c0 + at % per_doc)) *
                                    inv_sqrt_d;
        sc.order[at] = at;
      }
      // Exact top-k: highest score first, the lower row on ties (independent of threads).
      std::partial_sort(sc.order.begin(), sc.order.begin() + kept, sc.order.end(),
                        [&](int x, int y) {
                          return sc.score[x] > sc.score[y] ||
                                 (sc.score[x] == sc.score[y] && x < y);
                        });
      // The retrieved rows (every row of each kept chunk) and their logits.
      sc.rows.clear();
      sc.logit.clear();
      for (int t = 0; t < kept; ++t)
        for (int u = 0; u < s; ++u) {
          const int key = first_row_of(sc.order[t]) + u;
          sc.rows.push_back(key);
          sc.logit.push_back(s == 1 ? sc.score[sc.order[t]]
                                    : qi.dot(k.row(key).segment(h * D, D)) * inv_sqrt_d);
        }
      const int got = static_cast<int>(sc.rows.size());
      const S mx = *std::max_element(sc.logit.begin(), sc.logit.end());
      S sum = 0;
      for (int t = 0; t < got; ++t) {
        const S e = std::exp(sc.logit[t] - mx);
        cache.p(row, t) = e;
        sum += e;
      }
      cache.lse[row] = mx + std::log(sum);
      auto o = cache.out.row(base + i).segment(h * D, D);
      for (int t = 0; t < got; ++t) {
        cache.idx[row * K + t] = sc.rows[t];
        cache.p(row, t) /= sum;
        o += cache.p(row, t) * v.row(sc.rows[t]).segment(h * D, D);
      }
    }
  });
}

// Forward: a_ij = q_i.k_j/sqrt(D) over the retrieved j; p = softmax(a); o = sum_j p_ij v_j;
//          lse_i = log sum_j exp(a_ij).
// Backward: d_p_ij = d_o_i . v_j;  d_a_ij = p_ij (d_p_ij - sum_j p_ij d_p_ij + d_lse_i);
//          d_q_i += sum_j d_a_ij k_j / sqrt(D); and with d_k, d_v (a differentiable memory):
//          d_k_j += d_a_ij q_i / sqrt(D), d_v_j += p_ij d_o_i.
// qkv, memory: the forward's; d_out: [B*T, C]; d_lse: [B*H*T] or empty; d_q, d_k, d_v: [B*T, C],
// accumulated (d_k, d_v in the memory's k and v, before the encoding's transform). One task per
// group of sequences and head, its queries in order: every memory row's sum has one order,
// whatever the threads.
template <typename S>
void KnnMemoryBackward(const Mat<S>& qkv, int B, int T, int H, KnnMemoryCache<S>& cache,
                       const Mat<S>& d_out, const Vec<S>& d_lse, Mat<S>& d_q, Mat<S>* d_k = nullptr,
                       Mat<S>* d_v = nullptr, const Mat<S>* memory = nullptr) {
  const long C = qkv.cols() / 3;
  const Mat<S>& src = memory ? *memory : qkv;
  const auto q = qkv.leftCols(C), k = src.middleCols(C, C), v = src.rightCols(C);
  const int D = static_cast<int>(C / H), K = cache.k, group = cache.group;
  const S inv_sqrt_d = S(1) / std::sqrt(S(D));
  const int groups = (B + group - 1) / group;
  ParallelFor(static_cast<long>(groups) * H, [&](long task) {
    const int g = static_cast<int>(task / H), h = static_cast<int>(task % H);
    std::vector<S>& d_p = cache.scratch.local().score;
    d_p.resize(K);
    for (int b = g * group; b < std::min(B, (g + 1) * group); ++b) {
      const long base = static_cast<long>(b) * T;
      for (int i = 0; i < T; ++i) {
        const long row = (static_cast<long>(b) * H + h) * T + i;
        if (cache.idx[row * K] < 0) continue;
        const auto d_o = d_out.row(base + i).segment(h * D, D);
        S dot = 0;
        for (int t = 0; t < K && cache.idx[row * K + t] >= 0; ++t) {
          d_p[t] = d_o.dot(v.row(cache.idx[row * K + t]).segment(h * D, D));
          dot += cache.p(row, t) * d_p[t];
        }
        const S extra = d_lse.size() > 0 ? d_lse[row] : S(0);
        auto dq = d_q.row(base + i).segment(h * D, D);
        for (int t = 0; t < K && cache.idx[row * K + t] >= 0; ++t) {
          const int key = cache.idx[row * K + t];
          const S d_a = cache.p(row, t) * (d_p[t] - dot + extra) * inv_sqrt_d;
          dq += d_a * k.row(key).segment(h * D, D);
          if (d_k) {
            d_k->row(key).segment(h * D, D) += d_a * q.row(base + i).segment(h * D, D);
            d_v->row(key).segment(h * D, D) += cache.p(row, t) * d_o;
          }
        }
      }
    }
  });
}

}  // namespace lexp
