// The parts of multi-head attention (nn/ops/attention.h) that its per-head path and its
// head-mixing path (nn/ops/attention_head_mix.h) share: shapes, caches and scratch, key bounds,
// masks, the logits of sites 6, 4 and 5, and the softmax of one row over its visible keys.
#pragma once

#include <tbb/enumerable_thread_specific.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "nn/check.h"
#include "nn/ops/gemm.h"
#include "nn/precision.h"
#include "nn/ops/landmark.h"
#include "nn/ops/packet_map.h"
#include "nn/parallel.h"
#include "nn/position_hooks.h"
#include "nn/tensor.h"

namespace lexp {

inline constexpr int kQueryBlock = 64;
// The materialised path (training) cuts a causal task's queries finer: its blocks then skip the
// keys no query of theirs sees, a quarter of a [64, 64] task's products and row work.
inline constexpr int kMaterialisedQueryBlock = 32;
inline constexpr int kKeyBlock = 256;

struct AttentionShape {
  int B = 1, T = 1, H = 1, D = 1;
  // Incremental decoding (forward only, streaming): only queries [first_query, T) are computed
  // (the rows of `out` before them are left alone), and sequence b starts at row b * row_stride
  // (0 = T) of q, k, v and out, so a decoder keeps room for the tokens still to come.
  int first_query = 0;
  int row_stride = 0;
  long Stride() const { return row_stride > 0 ? row_stride : T; }
  long C() const { return static_cast<long>(H) * D; }
  long Tasks() const { return static_cast<long>(B) * H; }
};

template <typename S>
struct AttentionScratch {
  Mat<S> a;    // [64, T] scores or d_probs
  Mat<S> acc;  // [64, D] streaming accumulator
  Mat<S> kt;   // [D, T] the task's keys (forward) or values (backward), transposed: the products
               // q.k and d_o.v then run as plain (NN) products, which have the fastest kernels
  Mat<S> mem;  // [64, T] the memory keys' part of p or d_a (backward, patterns with memory)
  std::vector<S> row;      // one row of logits (landmark attention)
  std::vector<S> group;    // its group-normalised probabilities (streaming landmark attention)
  std::vector<int> order;  // landmark attention's block order
  std::vector<S> mix, d_mix;  // [H, 64, keys] every head's logits / their gradients (head mix)
  Vec<S> m, l;
};

template <typename S>
struct AttentionCache {
  bool materialized = false;
  bool capture_logits = false;
  Mat<S> probs;   // [B*H*T, T] softmax probabilities (materialised path), 0 where masked
  Mat<S> group;   // [B*H*T, T] landmark attention: the group-normalised probabilities
  Mat<S> logits;  // [B*H*T, T] pre-softmax logits (capture only), -inf where masked
  // A merge with another attention over other keys (nn/ops/knn_memory.h) needs each query's
  // log-sum-exp of its logits, and gives back the loss's gradient with respect to it.
  bool keep_lse = false;
  Vec<S> lse;    // [B*H*T] log sum_j exp(a_ij) over the visible keys (keep_lse)
  Vec<S> d_lse;  // [B*H*T] read by the backward when not empty: d_a_ij += p_ij d_lse_i
  tbb::enumerable_thread_specific<AttentionScratch<S>> scratch;
};

namespace attention_detail {

template <typename S>
using Rows = Eigen::Map<Mat<S>, 0, Eigen::OuterStride<>>;
template <typename S>
using ConstRows = Eigen::Map<const Mat<S>, 0, Eigen::OuterStride<>>;

// Bounds [jb, je) of all keys visible to any query of [i0, i1).
inline void BlockKeyBounds(const AttentionPattern& pat, int i0, int i1, int T, int* jb, int* je) {
  *jb = T;
  *je = 0;
  for (int i = i0; i < i1; ++i) {
    int b, e;
    pat.KeyBounds(i, T, &b, &e);
    *jb = std::min(*jb, b);
    *je = std::max(*je, e);
  }
  if (*je < *jb) *je = *jb;
}

// Writes `value` at the keys of [j0, j1) that query i may not see (row points at key j0).
template <typename S>
void SetMasked(const AttentionPattern& pat, int i, int T, int j0, int j1, S* row, S value) {
  int b, e;
  pat.KeyBounds(i, T, &b, &e);
  for (int j = j0; j < std::min(b, j1); ++j) row[j - j0] = value;
  for (int j = std::max(e, j0); j < j1; ++j) row[j - j0] = value;
  if (!pat.Contiguous()) {
    for (int j = std::max(b, j0); j < std::min(e, j1); ++j)
      if (!pat.Visible(i, j, T)) row[j - j0] = value;
  }
}

// True when the pattern lets query i see at least one key. Patterns are validated so that every
// query does; a row whose logits are all -inf although it sees keys has overflowed.
inline bool SeesAKey(const AttentionPattern& pat, int i, int T) {
  int b, e;
  pat.KeyBounds(i, T, &b, &e);
  if (pat.Contiguous()) return e > b;
  for (int j = b; j < e; ++j)
    if (pat.Visible(i, j, T)) return true;
  return false;
}

// Asks the memory system for rows [0, T) of a [T, D] slice (row stride ld) ahead of their use:
// attention's tasks read their head's slices of q, k, v (and in the backward d_o and the
// probabilities) long after the passes that wrote them, and a task's loads, one short row after
// another, wait on memory more than they compute. A prefetch changes no value.
inline constexpr int kPrefetchMaxT = 128;  // longer tasks' next slices would evict their own

template <typename S>
void PrefetchRows(const S* x, long ld, int T, int D) {
  constexpr std::uintptr_t kLine = 64;  // bytes a cache line
  for (int t = 0; t < T; ++t) {
    const S* row = x + static_cast<long>(t) * ld;
    const auto last = reinterpret_cast<std::uintptr_t>(row + D - 1);
    for (auto line = reinterpret_cast<std::uintptr_t>(row) & ~(kLine - 1); line <= last;
         line += kLine)
      __builtin_prefetch(reinterpret_cast<const void*>(line));  // each line of the row once
  }
}

// Copies the task's [T, D] rows of x (row stride ld) into xt as [D, T]: square tiles of one packet
// a side through registers (Eigen's ptranspose), the rest element by element. A pure copy: the
// same bits as the element loop (scalar strided stores made it 4% of a T training step).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"  // PacketBlock<__m512, ...>: as Eigen does
template <typename S>
void TransposeHead(const S* x, long ld, int T, int D, Mat<S>& xt) {
  Resize(xt, D, T);
  S* out = xt.data();
  int t0 = 0;
  if constexpr (kPacketSize<S> > 1) {
    using Eigen::internal::ploadu;
    using Eigen::internal::pstoreu;
    constexpr int kP = kPacketSize<S>;
    for (; t0 + kP <= T; t0 += kP) {
      int d0 = 0;
      for (; d0 + kP <= D; d0 += kP) {
        Eigen::internal::PacketBlock<PacketOf<S>, kP> tile;
        for (int r = 0; r < kP; ++r)
          tile.packet[r] = ploadu<PacketOf<S>>(x + static_cast<long>(t0 + r) * ld + d0);
        Eigen::internal::ptranspose(tile);
        for (int r = 0; r < kP; ++r) pstoreu(out + static_cast<long>(d0 + r) * T + t0, tile.packet[r]);
      }
      for (int d = d0; d < D; ++d)
        for (int t = t0; t < t0 + kP; ++t) out[static_cast<long>(d) * T + t] = x[static_cast<long>(t) * ld + d];
    }
  }
  for (int t = t0; t < T; ++t)
    for (int d = 0; d < D; ++d) out[static_cast<long>(d) * T + t] = x[static_cast<long>(t) * ld + d];
}
#pragma GCC diagnostic pop

// One query's dot products with m transposed keys (kt [D, m] with row stride ldkt) into s[0, m):
// 16 keys at a time held in vector registers while the D components are summed in order.
template <typename S>
void OneQueryLogits(const S* q, const S* kt, long ldkt, int D, int m, S* s) {
  constexpr int kLanes = 16;
  int j = 0;
  using Lanes = Eigen::Array<S, kLanes, 1>;  // fixed size: Eigen's explicit vector code
  // Four blocks of keys at once: four independent chains of multiply-adds (each key's sum still
  // runs over d in order, so the blocking does not change a value).
  for (; j + 4 * kLanes <= m; j += 4 * kLanes) {
    Lanes a0 = Lanes::Zero(), a1 = Lanes::Zero(), a2 = Lanes::Zero(), a3 = Lanes::Zero();
    for (int d = 0; d < D; ++d) {
      const S* kr = kt + d * ldkt + j;
      a0 += q[d] * Eigen::Map<const Lanes>(kr);
      a1 += q[d] * Eigen::Map<const Lanes>(kr + kLanes);
      a2 += q[d] * Eigen::Map<const Lanes>(kr + 2 * kLanes);
      a3 += q[d] * Eigen::Map<const Lanes>(kr + 3 * kLanes);
    }
    Eigen::Map<Lanes>(s + j) = a0;
    Eigen::Map<Lanes>(s + j + kLanes) = a1;
    Eigen::Map<Lanes>(s + j + 2 * kLanes) = a2;
    Eigen::Map<Lanes>(s + j + 3 * kLanes) = a3;
  }
  for (; j + kLanes <= m; j += kLanes) {
    Lanes acc = Lanes::Zero();
    for (int d = 0; d < D; ++d) acc += q[d] * Eigen::Map<const Lanes>(kt + d * ldkt + j);
    Eigen::Map<Lanes>(s + j) = acc;
  }
  for (; j < m; ++j) {
    S acc = 0;
    for (int d = 0; d < D; ++d) acc += q[d] * kt[d * ldkt + j];
    s[j] = acc;
  }
}

// acc[0, D) += sum_j p[j] v[j, 0..D) over m value rows of stride ldv (one query's p v), the
// accumulator in registers for the usual head widths.
template <typename S, int kD>
void AddWeightedRowsFixed(const S* p, const S* v, long ldv, int m, S* acc) {
  using Row = Eigen::Array<S, kD, 1>;  // fixed size: Eigen's explicit vector code
  // Four rows at a time into four accumulators (independent chains), summed at the end.
  Row o0 = Row::Zero(), o1 = Row::Zero(), o2 = Row::Zero(), o3 = Row::Zero();
  int j = 0;
  for (; j + 4 <= m; j += 4) {
    o0 += p[j] * Eigen::Map<const Row>(v + j * ldv);
    o1 += p[j + 1] * Eigen::Map<const Row>(v + (j + 1) * ldv);
    o2 += p[j + 2] * Eigen::Map<const Row>(v + (j + 2) * ldv);
    o3 += p[j + 3] * Eigen::Map<const Row>(v + (j + 3) * ldv);
  }
  for (; j < m; ++j) o0 += p[j] * Eigen::Map<const Row>(v + j * ldv);
  Eigen::Map<Row> out(acc);
  out += (o0 + o1) + (o2 + o3);
}
template <typename S>
void AddWeightedRows(const S* p, const S* v, long ldv, int m, int D, S* acc) {
  switch (D) {
    case 16: return AddWeightedRowsFixed<S, 16>(p, v, ldv, m, acc);
    case 32: return AddWeightedRowsFixed<S, 32>(p, v, ldv, m, acc);
    case 64: return AddWeightedRowsFixed<S, 64>(p, v, ldv, m, acc);
    default:
      for (int j = 0; j < m; ++j)
        for (int u = 0; u < D; ++u) acc[u] += p[j] * v[j * ldv + u];
  }
}

// Raw logits of queries [i0,i1) against keys [j0,j1) into s (row stride lds): sites 6, 4 and 5.
// kt: the task's keys transposed, [D, T] with row stride ldkt, or null (a few queries: k is read
// as it is).
template <typename S>
void ComputeLogits(const PositionEncoding<S>& enc, const AttentionContext& ctx, const S* q,
                   const S* k, const S* kt, long ldkt, long ld, int i0, int i1, int j0, int j1,
                   S* s, long lds, bool mask = true) {
  const int D = ctx.head_dim;
  const int n = i1 - i0, m = j1 - j0;
  if (m <= 0) return;
  Rows<S> out(s, n, m, Eigen::OuterStride<>(lds));
  const S inv_sqrt_d = S(1) / std::sqrt(S(D));
  {
    // The product q k^T in the policy's `logits` precision (nn/precision.h).
    PrecisionPolicy logit_policy = ActivePrecision();
    logit_policy.matmul = logit_policy.logits;
    const PrecisionScope scope(logit_policy);
    if (n == 1 && kt != nullptr && logit_policy.matmul == Precision::kFp32) {
      // One query against transposed keys (a decoding step): s[j] = sum_d q[d] kt[d, j], the
      // keys in the vector lanes, without a matrix product's set-up for D multiply-adds a key.
      OneQueryLogits(q + static_cast<long>(i0) * ld, kt + j0, ldkt, D, m, s);
    } else if (kt != nullptr)
      Gemm<S>(false, false, n, m, D, q + static_cast<long>(i0) * ld, ld, kt + j0, ldkt, false, s,
              lds);
    else
      Gemm<S>(false, true, n, m, D, q + static_cast<long>(i0) * ld, ld,
              k + static_cast<long>(j0) * ld, ld, false, s, lds);
  }
  out *= inv_sqrt_d;
  if (enc.Uses(kSiteLogitScale)) {
    for (int r = 0; r < n; ++r) out.row(r) *= enc.LogitScale(ctx, i0 + r);
  }
  if (enc.Uses(kSiteLogitTerm)) enc.AddLogitTerm(ctx, i0, i1, j0, j1, HeadQK<S>{q, k, ld}, s, lds);
  if (ctx.pattern->HasLogitOffset()) {
    for (int r = 0; r < n; ++r)
      for (int j = j0; j < j1; ++j)
        out(r, j - j0) += static_cast<S>(ctx.pattern->LogitOffset(i0 + r, j, ctx.T));
  }
  if (!mask) return;
  for (int r = 0; r < n; ++r)
    SetMasked(*ctx.pattern, i0 + r, ctx.T, j0, j1, s + static_cast<long>(r) * lds,
              -std::numeric_limits<S>::infinity());
}

// v[i] = exp(v[i] - shift) for i in [0, n), every element by the same packet code wherever v
// starts (nn/ops/packet_map.h), so a row's probabilities do not depend on its alignment.
template <typename S>
void ExpShiftedInPlace(S* v, long n, S shift) {
  namespace pk = Eigen::internal;
  using P = PacketOf<S>;
  const P shift_packet = pk::pset1<P>(shift);
  MapPackets<S, 1, 1>(n, {v}, {v}, [&](const P (&in)[1], P (&out)[1]) {
    out[0] = pk::pexp(pk::psub(in[0], shift_packet));
  });
}

// Softmax of query i's logits row[0, je - jb) (keys [jb, je); masked keys -inf, or any value under a
// contiguous pattern, which never reads them) in place: masked keys get exactly 0. A contiguous
// pattern's row is normalised over its visible keys only (a causal block: half the exponentials),
// other patterns over the block's keys, masked after. NaN
// logits (a diverging run) pass through, so the loss reports them; so do rows whose every visible
// logit overflowed to -inf. Writes log sum_j exp(a_ij) to *lse when not null.
// Where packets have lane masks, a contiguous row's max, exponentials with their sum and division
// are three packet passes (nn/ops/packet_map.h).
template <typename S>
void SoftmaxVisibleRow(const AttentionPattern& pattern, int i, int T, int jb, int je, S* row,
                       S* lse) {
  const S neg_inf = -std::numeric_limits<S>::infinity();
  Eigen::Map<RowVec<S>> block_row(row, je - jb);
  int vb = jb, ve = je;
  if (pattern.Contiguous()) {
    pattern.KeyBounds(i, T, &vb, &ve);
    vb = std::max(vb, jb);
    ve = std::max(vb, std::min(ve, je));
  }
  if constexpr (kMaskedPackets<S>) {
    if (pattern.Contiguous()) {  // max, exponentials with their sum, division: packet passes
      S* visible = row + (vb - jb);
      const PacketSpan<S> span(ve - vb);
      const S mx = ve > vb ? SpanMax(visible, span) : neg_inf;
      if (mx == neg_inf) {
        LEXP_CHECK(SeesAKey(pattern, i, T), "attention: a query sees no key");
        block_row.setConstant(std::numeric_limits<S>::quiet_NaN());
        if (lse != nullptr) *lse = std::numeric_limits<S>::quiet_NaN();
        return;
      }
      const S sum = SpanExpShiftedSum(visible, span, mx);
      block_row.head(vb - jb).setZero();  // masked keys: exactly 0
      block_row.tail(je - ve).setZero();
      SpanDivide(visible, span, sum);
      if (lse != nullptr) *lse = mx + std::log(sum);
      return;
    }
  }
  auto visible = block_row.segment(vb - jb, ve - vb);
  const S mx = ve > vb ? visible.maxCoeff() : neg_inf;
  if (mx == neg_inf) {
    LEXP_CHECK(SeesAKey(pattern, i, T), "attention: a query sees no key");
    block_row.setConstant(std::numeric_limits<S>::quiet_NaN());
    if (lse != nullptr) *lse = std::numeric_limits<S>::quiet_NaN();
    return;
  }
  ExpShiftedInPlace(row + (vb - jb), ve - vb, mx);
  // Masked keys get exactly 0 (vectorised exp(-inf) may return a denormal).
  if (pattern.Contiguous()) {
    block_row.head(vb - jb).setZero();
    block_row.tail(je - ve).setZero();
  } else {
    SetMasked(pattern, i, T, jb, je, row, S(0));
  }
  const S sum = visible.sum();
  visible /= sum;
  if (lse != nullptr) *lse = mx + std::log(sum);
}

// SoftmaxVisibleRow on the n rows of queries [i0, i0 + n) (query i0 + r's row at rows + r * ld,
// keys [jb, je)), each log-sum-exp at lse[r] when lse is not null. Where packets have lane masks,
// a contiguous pattern's rows go pass by pass: every row's max, then every row's exponentials with
// their sum, then every division. One row's passes wait on each other's reductions; the rows'
// chains are independent, so the core overlaps them. Each element sees the operations of
// SoftmaxVisibleRow: the same bits.
template <typename S>
void SoftmaxVisibleRows(const AttentionPattern& pattern, int i0, int n, int T, int jb, int je,
                        S* rows, long ld, S* lse) {
  if constexpr (kMaskedPackets<S>) {
    if (n <= kQueryBlock && pattern.Contiguous()) {
      const S neg_inf = -std::numeric_limits<S>::infinity();
      int vb[kQueryBlock], ve[kQueryBlock];
      S mx[kQueryBlock];
      bool all_finite = true;
      for (int r = 0; r < n; ++r) {
        pattern.KeyBounds(i0 + r, T, &vb[r], &ve[r]);
        vb[r] = std::max(vb[r], jb);
        ve[r] = std::max(vb[r], std::min(ve[r], je));
        const S* visible = rows + r * ld + (vb[r] - jb);
        mx[r] = ve[r] > vb[r] ? SpanMax(visible, PacketSpan<S>(ve[r] - vb[r])) : neg_inf;
        all_finite = all_finite && mx[r] != neg_inf;
      }
      if (all_finite) {  // else some row overflowed: the row function reports it (NaN)
        S sum[kQueryBlock];
        for (int r = 0; r < n; ++r) {
          S* row = rows + r * ld;
          sum[r] = SpanExpShiftedSum(row + (vb[r] - jb), PacketSpan<S>(ve[r] - vb[r]), mx[r]);
          std::fill(row, row + (vb[r] - jb), S(0));  // masked keys: exactly 0
          std::fill(row + (ve[r] - jb), row + (je - jb), S(0));
        }
        for (int r = 0; r < n; ++r) {
          SpanDivide(rows + r * ld + (vb[r] - jb), PacketSpan<S>(ve[r] - vb[r]), sum[r]);
          if (lse != nullptr) lse[r] = mx[r] + std::log(sum[r]);
        }
        return;
      }
    }
  }
  for (int r = 0; r < n; ++r)
    SoftmaxVisibleRow(pattern, i0 + r, T, jb, je, rows + r * ld,
                      lse != nullptr ? lse + r : nullptr);
}

}  // namespace attention_detail

}  // namespace lexp
