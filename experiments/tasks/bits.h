// Non-negative integers of any size as little-endian bit vectors (bit 0 first), for the binary
// arithmetic tasks whose operands reach hundreds of bits at the evaluation lengths of the
// Chomsky-hierarchy protocol. Every result is trimmed to its shortest form; zero is {0}.
#pragma once

#include <vector>

#include "nn/rng.h"

namespace lexp::bits {

using Bits = std::vector<int>;  // little-endian, values 0/1

Bits Trim(Bits x);  // drop high zero bits (zero stays {0})
Bits FromUint(unsigned long long v);
bool IsZero(const Bits& x);
int Compare(const Bits& a, const Bits& b);  // -1, 0, 1
Bits Add(const Bits& a, const Bits& b);
Bits Subtract(const Bits& a, const Bits& b);  // requires a >= b
Bits Multiply(const Bits& a, const Bits& b);
Bits FloorSqrt(const Bits& x);
// Uniform in [1, 2^len - 1]: len random bits, redrawn while all are zero (rejection, unbiased).
Bits UniformNonZero(int len, Rng& rng);
// x written on exactly len bits (zero-padded; x must fit).
Bits Padded(const Bits& x, int len);

}  // namespace lexp::bits
