// Element-wise kernels over a flat range in SIMD packets, the last partial packet padded through a
// small buffer: every element goes through the same packet code, so its bits depend neither on the
// range's alignment nor on where a caller's chunk of rows begins or ends (Eigen's array expressions
// peel misaligned heads and odd tails into scalar code, whose exp is libm's, not the packet one).
#pragma once

#include <Eigen/Core>
#include <algorithm>

namespace lexp {

template <typename S>
using PacketOf = typename Eigen::internal::packet_traits<S>::type;

template <typename S>
inline constexpr int kPacketSize = Eigen::internal::unpacket_traits<PacketOf<S>>::size;

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

}  // namespace lexp
