// Context-sensitive Chomsky tasks (the Deletang et al. / Ruoss et al. task code):
// missing_duplicate_string, odds_first, binary_addition, binary_multiplication, compute_sqrt,
// bucket_sort.
#include <algorithm>

#include "experiments/tasks/bits.h"
#include "experiments/tasks/chomsky.h"
#include "nn/check.h"

namespace lexp::chomsky {
namespace {

constexpr int kOperator = 2, kEnd = 2;

std::vector<int> RandomBits(int n, Rng& rng) {
  std::vector<int> b(n);
  for (int& x : b) x = static_cast<int>(rng.UniformInt(0, 1));
  return b;
}

// Output digits, the end symbol, zeros up to `length`; scored up to and including the end.
Example Terminated(std::vector<int> input, const bits::Bits& digits, int length) {
  Example e;
  e.input = std::move(input);
  e.output = digits;
  e.output.push_back(kEnd);
  LEXP_CHECK(static_cast<int>(e.output.size()) <= length, "binary task: output does not fit");
  e.output_scored.assign(e.output.size(), 1);
  e.output.resize(length, 0);
  e.output_scored.resize(length, 0);
  return e;
}

// n >= 3: a ~ U[1, 2^la - 1], b ~ U[1, 2^lb - 1], la ~ U{1..n-2}, lb = n - 1 - la, both
// little-endian on their lengths: input a + b. n <= 2: one number in [0, 2^n - 2] on n bits.
Example BinaryOperation(int n, bool multiply, Rng& rng) {
  const int out_len = multiply ? (n <= 2 ? n + 1 : n) : n + 1;
  if (n <= 2) {
    const auto x = static_cast<unsigned long long>(rng.UniformInt(0, (1 << n) - 2));
    const bits::Bits b = bits::FromUint(x);
    return Terminated(bits::Padded(b, n), b, out_len);
  }
  const int la = static_cast<int>(rng.UniformInt(1, n - 2)), lb = n - 1 - la;
  const bits::Bits a = bits::UniformNonZero(la, rng), b = bits::UniformNonZero(lb, rng);
  std::vector<int> in = a;
  in.push_back(kOperator);
  in.insert(in.end(), b.begin(), b.end());
  return Terminated(std::move(in), multiply ? bits::Multiply(a, b) : bits::Add(a, b), out_len);
}

}  // namespace

Example MissingDuplicateString(int n, Rng& rng) {
  Example e;
  e.output_scored = {1};
  if (n == 1) {
    e.input = {1};
    e.output = {1};
    return e;
  }
  const std::vector<int> w = RandomBits(n / 2, rng);
  e.input = w;
  e.input.insert(e.input.end(), w.begin(), w.end());
  const int at = static_cast<int>(rng.UniformInt(0, static_cast<int64_t>(e.input.size()) - 1));
  e.output = {e.input[at]};
  e.input[at] = 2;
  if (n % 2 == 1) e.input.push_back(3);
  return e;
}

Example OddsFirst(int n, Rng& rng) {
  Example e;
  e.input = RandomBits(n, rng);
  for (int start : {1, 0})
    for (int t = start; t < n; t += 2) e.output.push_back(e.input[t]);
  e.output_scored.assign(n, 1);
  return e;
}

Example BinaryAddition(int n, Rng& rng) { return BinaryOperation(n, false, rng); }
Example BinaryMultiplication(int n, Rng& rng) { return BinaryOperation(n, true, rng); }

// x ~ U[1, 2^n - 1] big-endian on n bits; output floor(sqrt x) big-endian on ceil(n/2) bits.
Example ComputeSqrt(int n, Rng& rng) {
  const bits::Bits x = bits::UniformNonZero(n, rng);
  const bits::Bits r = bits::Padded(bits::FloorSqrt(x), (n + 1) / 2);
  Example e;
  e.input.assign(x.rbegin(), x.rend());
  e.output.assign(r.rbegin(), r.rend());
  e.output_scored.assign(e.output.size(), 1);
  return e;
}

Example BucketSort(int n, Rng& rng) {
  Example e;
  e.input.resize(n);
  for (int& s : e.input) s = static_cast<int>(rng.UniformInt(0, 4));
  e.output = e.input;
  std::sort(e.output.begin(), e.output.end());
  e.output_scored.assign(n, 1);
  return e;
}

}  // namespace lexp::chomsky
