#include "experiments/tasks/bits.h"

#include <algorithm>

#include "nn/check.h"

namespace lexp::bits {

Bits Trim(Bits x) {
  while (x.size() > 1 && x.back() == 0) x.pop_back();
  if (x.empty()) x.push_back(0);
  return x;
}

Bits FromUint(unsigned long long v) {
  Bits b;
  do {
    b.push_back(static_cast<int>(v & 1));
    v >>= 1;
  } while (v);
  return b;
}

bool IsZero(const Bits& x) {
  return std::all_of(x.begin(), x.end(), [](int b) { return b == 0; });
}

int Compare(const Bits& a0, const Bits& b0) {
  const Bits a = Trim(a0), b = Trim(b0);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

Bits Add(const Bits& a, const Bits& b) {
  Bits s;
  int carry = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()) || carry; ++i) {
    const int t = (i < a.size() ? a[i] : 0) + (i < b.size() ? b[i] : 0) + carry;
    s.push_back(t & 1);
    carry = t >> 1;
  }
  return Trim(s);
}

Bits Subtract(const Bits& a, const Bits& b) {
  LEXP_CHECK(Compare(a, b) >= 0, "bits: negative difference");
  Bits d(a.size());
  int borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int t = a[i] - (i < b.size() ? b[i] : 0) - borrow;
    borrow = t < 0;
    d[i] = t + 2 * borrow;
  }
  return Trim(d);
}

Bits Multiply(const Bits& a, const Bits& b) {
  Bits p = {0};
  Bits shifted = a;
  for (size_t i = 0; i < b.size(); ++i) {
    if (b[i]) p = Add(p, shifted);
    shifted.insert(shifted.begin(), 0);
  }
  return Trim(p);
}

// Digit-by-digit (binary restoring) square root: for each bit from the top, keep it if the square
// still fits.
Bits FloorSqrt(const Bits& x0) {
  const Bits x = Trim(x0);
  Bits r = {0};
  for (int i = static_cast<int>((x.size() + 1) / 2); i-- > 0;) {
    Bits cand = r;
    if (cand.size() <= static_cast<size_t>(i)) cand.resize(i + 1, 0);
    cand[i] = 1;
    if (Compare(Multiply(cand, cand), x) <= 0) r = Trim(cand);
  }
  return r;
}

Bits UniformNonZero(int len, Rng& rng) {
  LEXP_CHECK(len >= 1, "bits: a number needs at least one bit");
  Bits b(len);
  do {
    for (int& x : b) x = static_cast<int>(rng.UniformInt(0, 1));
  } while (IsZero(b));
  return b;
}

Bits Padded(const Bits& x0, int len) {
  Bits x = Trim(x0);
  LEXP_CHECK(static_cast<int>(x.size()) <= len || IsZero(x), "bits: number does not fit");
  x.resize(len, 0);
  return x;
}

}  // namespace lexp::bits
