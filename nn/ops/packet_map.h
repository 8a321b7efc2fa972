// Element-wise kernels over a flat range in SIMD packets, the last partial packet loaded and stored
// under a lane mask (or, where packets have no masks, padded through a small buffer): every element
// goes through the same packet code, so its bits depend neither on the range's alignment nor on
// where a caller's chunk of rows begins or ends (Eigen's array expressions peel misaligned heads
// and odd tails into scalar code, whose exp is libm's, not the packet one).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace lexp {

template <typename S>
using PacketOf = typename Eigen::internal::packet_traits<S>::type;

template <typename S>
inline constexpr int kPacketSize = Eigen::internal::unpacket_traits<PacketOf<S>>::size;

// True when S's packets load and store under a lane mask (float with AVX or AVX-512).
template <typename S>
inline constexpr bool kMaskedPackets =
    Eigen::internal::unpacket_traits<PacketOf<S>>::masked_load_available &&
    Eigen::internal::unpacket_traits<PacketOf<S>>::masked_store_available;

// A lane mask of S's packets (Eigen's mask_t: one bit a lane) and the mask of the first `lanes`.
template <typename S>
using PacketMask = std::conditional_t<(kPacketSize<S> > 8), std::uint16_t, std::uint8_t>;
template <typename S>
PacketMask<S> TailMask(long lanes) {
  return static_cast<PacketMask<S>>((1u << lanes) - 1);
}

// For i in [0, n) in packets: loads packet i of each input, body(in, out) fills one packet per
// output, stores them. Body: void(const Packet (&in)[kIn], Packet (&out)[kOut]).
template <typename S, int kIn, int kOut, typename Body>
void MapPackets(long n, const S* const (&ins)[kIn], S* const (&outs)[kOut], const Body& body) {
  using Eigen::internal::ploadu;
  using Eigen::internal::pstoreu;
  using P = PacketOf<S>;
  constexpr int kP = kPacketSize<S>;
  P in[kIn], out[kOut];
  long i = 0;
  for (; i + kP <= n; i += kP) {
    for (int a = 0; a < kIn; ++a) in[a] = ploadu<P>(ins[a] + i);
    body(in, out);
    for (int a = 0; a < kOut; ++a) pstoreu(outs[a] + i, out[a]);
  }
  if (i == n) return;
  const long rest = n - i;
  if constexpr (kMaskedPackets<S>) {  // the tail under a mask: its other lanes read as 0
    const auto mask = TailMask<S>(rest);
    for (int a = 0; a < kIn; ++a) in[a] = Eigen::internal::ploadu<P>(ins[a] + i, mask);
    body(in, out);
    for (int a = 0; a < kOut; ++a) pstoreu(outs[a] + i, out[a], mask);
    return;
  }
  alignas(64) S buffer[kP];
  for (int a = 0; a < kIn; ++a) {
    std::fill(buffer, buffer + kP, S(0));
    std::copy(ins[a] + i, ins[a] + n, buffer);
    in[a] = ploadu<P>(buffer);
  }
  body(in, out);
  for (int a = 0; a < kOut; ++a) {
    pstoreu(buffer, out[a]);
    std::copy(buffer, buffer + rest, outs[a] + i);
  }
}

// Sets a [rows, cols] block (row stride ld) to 0 in packet stores, a column of packets at a time:
// GCC turns a loop along a short row into one memset call a row, which costs more than the stores.
template <typename S>
void ZeroRows(S* x, long rows, long cols, long ld) {
  const PacketOf<S> zero = Eigen::internal::pset1<PacketOf<S>>(S(0));
  long c = 0;
  for (; c + kPacketSize<S> <= cols; c += kPacketSize<S>)
    for (long r = 0; r < rows; ++r) Eigen::internal::pstoreu(x + r * ld + c, zero);
  for (; c < cols; ++c)
    for (long r = 0; r < rows; ++r) x[r * ld + c] = S(0);
}

}  // namespace lexp

namespace lexp {

// The fused passes of a softmax and of its backward over n contiguous values, each in packets with
// the last one under a mask (kMaskedPackets<S> only): SpanMax, SpanExpShiftedSum (v = exp(v -
// shift), returning the sum), SpanDivide; SpanDot, SpanSoftmaxGrad. The elements' values are those
// of the packet code wherever v starts; sums add lane by lane, then across the lanes.
template <typename S>
struct PacketSpan {
  using P = PacketOf<S>;
  explicit PacketSpan(long n)
      : full(n - n % kPacketSize<S>),
        rest(n % kPacketSize<S>),
        mask(TailMask<S>(rest)),
        in_tail(Eigen::internal::pcmp_lt(Eigen::internal::plset<P>(S(0)),
                                         Eigen::internal::pset1<P>(static_cast<S>(rest)))) {}
  long full, rest;
  PacketMask<S> mask;
  P in_tail;  // all bits set in the tail's lanes
};

template <typename S>
S SpanMax(const S* v, const PacketSpan<S>& span) {
  namespace pk = Eigen::internal;
  using P = PacketOf<S>;
  const P neg_inf = pk::pset1<P>(-std::numeric_limits<S>::infinity());
  P mx = neg_inf;
  for (long i = 0; i < span.full; i += kPacketSize<S>) mx = pk::pmax(mx, pk::ploadu<P>(v + i));
  if (span.rest > 0)
    mx = pk::pmax(mx, pk::pselect(span.in_tail, pk::ploadu<P>(v + span.full, span.mask), neg_inf));
  return pk::predux_max(mx);
}

template <typename S>
S SpanExpShiftedSum(S* v, const PacketSpan<S>& span, S shift) {
  namespace pk = Eigen::internal;
  using P = PacketOf<S>;
  const P shift_packet = pk::pset1<P>(shift);
  P acc = pk::pset1<P>(S(0));
  for (long i = 0; i < span.full; i += kPacketSize<S>) {
    const P e = pk::pexp(pk::psub(pk::ploadu<P>(v + i), shift_packet));
    pk::pstoreu(v + i, e);
    acc = pk::padd(acc, e);
  }
  if (span.rest > 0) {
    const P e = pk::pexp(pk::psub(pk::ploadu<P>(v + span.full, span.mask), shift_packet));
    pk::pstoreu(v + span.full, e, span.mask);
    acc = pk::padd(acc, pk::pand(e, span.in_tail));
  }
  return pk::predux(acc);
}

// sum_i a[i] b[i] over the span (lanes, then across: the masked tail's lanes load as 0).
template <typename S>
S SpanDot(const S* a, const S* b, const PacketSpan<S>& span) {
  namespace pk = Eigen::internal;
  using P = PacketOf<S>;
  P acc = pk::pset1<P>(S(0));
  for (long i = 0; i < span.full; i += kPacketSize<S>)
    acc = pk::padd(acc, pk::pmul(pk::ploadu<P>(a + i), pk::ploadu<P>(b + i)));
  if (span.rest > 0)
    acc = pk::padd(acc, pk::pmul(pk::ploadu<P>(a + span.full, span.mask),
                                 pk::ploadu<P>(b + span.full, span.mask)));
  return pk::predux(acc);
}

// The softmax's backward on a row: d[i] = (p[i] (d[i] - dot)) scale.
template <typename S>
void SpanSoftmaxGrad(S* d, const S* p, const PacketSpan<S>& span, S dot, S scale) {
  namespace pk = Eigen::internal;
  using P = PacketOf<S>;
  const P dot_packet = pk::pset1<P>(dot), scale_packet = pk::pset1<P>(scale);
  const auto grad = [&](const P& dv, const P& pv) {
    return pk::pmul(pk::pmul(pv, pk::psub(dv, dot_packet)), scale_packet);
  };
  for (long i = 0; i < span.full; i += kPacketSize<S>)
    pk::pstoreu(d + i, grad(pk::ploadu<P>(d + i), pk::ploadu<P>(p + i)));
  if (span.rest > 0)
    pk::pstoreu(d + span.full,
                grad(pk::ploadu<P>(d + span.full, span.mask),
                     pk::ploadu<P>(p + span.full, span.mask)),
                span.mask);
}

template <typename S>
void SpanDivide(S* v, const PacketSpan<S>& span, S divisor) {
  namespace pk = Eigen::internal;
  using P = PacketOf<S>;
  const P d = pk::pset1<P>(divisor);
  for (long i = 0; i < span.full; i += kPacketSize<S>)
    pk::pstoreu(v + i, pk::pdiv(pk::ploadu<P>(v + i), d));
  if (span.rest > 0)
    pk::pstoreu(v + span.full, pk::pdiv(pk::ploadu<P>(v + span.full, span.mask), d), span.mask);
}

}  // namespace lexp
