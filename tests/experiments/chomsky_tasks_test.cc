// The Chomsky-hierarchy generators (the Deletang et al. / Ruoss et al. task code): hand-checked
// values of the helpers, invariants of every generator recomputed independently, the edge lengths
// the reference treats specially, the termination masks, and that every task becomes equal-length
// batches in both layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/bits.h"
#include "experiments/tasks/chomsky.h"
#include "nn/check.h"

namespace lexp {
namespace {

using chomsky::EvaluateMod5;

unsigned long long ValueOf(const std::vector<int>& little_endian) {
  unsigned long long v = 0;
  for (size_t i = little_endian.size(); i-- > 0;) v = 2 * v + little_endian[i];
  return v;
}

// Scored outputs end with the end symbol 2; everything after is unscored zero padding.
std::vector<int> Terminated(const Example& e) {
  const auto end = std::find(e.output.begin(), e.output.end(), 2);
  EXPECT_NE(end, e.output.end());
  const size_t k = end - e.output.begin();
  for (size_t i = 0; i < e.output.size(); ++i) {
    EXPECT_EQ(e.output_scored[i], i <= k ? 1 : 0) << i;
    if (i > k) {
      EXPECT_EQ(e.output[i], 0);
    }
  }
  return std::vector<int>(e.output.begin(), end);
}

TEST(ChomskyHelpers, HandCheckedValues) {
  // 5 +, 6 -, 7 *, 8 (, 9 )
  EXPECT_EQ(EvaluateMod5({1, 5, 2, 7, 3}), (1 + 6) % 5);    // * binds first
  EXPECT_EQ(EvaluateMod5({1, 6, 2, 7, 4}), 3);              // 1 - 8 = -7 = 3 mod 5
  EXPECT_EQ(EvaluateMod5({6, 3}), 2);                       // -3
  EXPECT_EQ(EvaluateMod5({8, 6, 4, 9}), 1);                 // (-4)
  EXPECT_EQ(EvaluateMod5({8, 8, 2, 5, 3, 9, 7, 4, 9}), 0);  // ((2+3)*4) = 20
  EXPECT_EQ(EvaluateMod5({8, 4, 6, 8, 6, 2, 9, 9}), 1);     // (4 - (-2)) = 6
  using bits::FromUint;
  EXPECT_EQ(ValueOf(bits::Add(FromUint(13), FromUint(29))), 42u);
  EXPECT_EQ(ValueOf(bits::Multiply(FromUint(13), FromUint(29))), 377u);
  EXPECT_EQ(ValueOf(bits::Subtract(FromUint(100), FromUint(58))), 42u);
  for (unsigned long long x : {1ull, 3ull, 4ull, 15ull, 16ull, 17ull, 1000000ull, 999999999999ull})
    EXPECT_EQ(ValueOf(bits::FloorSqrt(FromUint(x))),
              static_cast<unsigned long long>(std::floor(std::sqrt(static_cast<long double>(x)))))
        << x;
  EXPECT_EQ(bits::FromUint(0), (bits::Bits{0}));
  // A 300-bit square: sqrt(2^300) = 2^150.
  bits::Bits big(301, 0);
  big[300] = 1;
  const bits::Bits r = bits::FloorSqrt(big);
  EXPECT_EQ(r.size(), 151u);
  EXPECT_EQ(r[150], 1);
  EXPECT_EQ(std::accumulate(r.begin(), r.end(), 0), 1);
}

TEST(Chomsky, RegularTasksAreCorrect) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Rng rng(seed);
    const int n = 1 + static_cast<int>(seed % 23);
    const Example ep = chomsky::EvenPairs(n, rng);
    ASSERT_EQ(ep.input.size(), static_cast<size_t>(n));
    EXPECT_EQ(ep.output[0], ep.input.front() != ep.input.back() ? 1 : 0) << "first != last";
    const Example ma = chomsky::ModularArithmetic(n, rng);
    ASSERT_EQ(ma.input.size(), static_cast<size_t>(n % 2 ? n : n - 1));
    // Independent evaluation of a flat expression: sum of signed products.
    long total = 0, prod = ma.input[0];
    int sign = 1;
    for (size_t t = 1; t < ma.input.size(); t += 2) {
      const int op = ma.input[t], d = ma.input[t + 1];
      EXPECT_TRUE(op >= 5 && op <= 7);
      if (op == 7) {
        prod *= d;
      } else {
        total += sign * prod;
        sign = op == 5 ? 1 : -1;
        prod = d;
      }
    }
    total += sign * prod;
    EXPECT_EQ(ma.output[0], ((total % 5) + 5) % 5);
    const Example cn = chomsky::CycleNavigation(n, rng);
    const long right = std::count(cn.input.begin(), cn.input.end(), 2);
    const long left = std::count(cn.input.begin(), cn.input.end(), 0);
    EXPECT_EQ(cn.output[0], (((right - left) % 5) + 5) % 5);
  }
}

TEST(Chomsky, StackManipulationSimulatesTheStackAndMasksUpToTheEnd) {
  Rng rng(3);
  const Example one = chomsky::StackManipulation(1, rng);
  EXPECT_EQ(one.output, (std::vector<int>{one.input[0], 2}));
  for (int n = 2; n <= 30; ++n) {
    const Example e = chomsky::StackManipulation(n, rng);
    ASSERT_EQ(e.input.size(), static_cast<size_t>(n));
    ASSERT_EQ(e.output.size(), static_cast<size_t>(n + 1));
    std::vector<int> stack;
    size_t t = 0;
    for (; t < e.input.size() && e.input[t] < 2; ++t) stack.push_back(e.input[t]);
    EXPECT_GE(t, 1u);
    EXPECT_LT(t, static_cast<size_t>(n)) << "at least one action";
    for (; t < e.input.size(); ++t) {
      ASSERT_GE(e.input[t], 2) << "actions only after the initial stack";
      if (e.input[t] == 2 && !stack.empty()) stack.pop_back();
      if (e.input[t] >= 3) stack.push_back(e.input[t] - 3);
    }
    EXPECT_EQ(Terminated(e), std::vector<int>(stack.rbegin(), stack.rend()));
  }
}

TEST(Chomsky, BracketExpressionsAndEquationsAreWellFormed) {
  Rng rng(5);
  for (int n = 1; n <= 40; ++n) {
    const Example b = chomsky::ModularArithmeticBrackets(n, rng);
    ASSERT_EQ(b.input.size(), static_cast<size_t>(n));
    int depth = 0;
    for (int s : b.input) {
      depth += (s == 8) - (s == 9);
      EXPECT_GE(depth, 0);
    }
    EXPECT_EQ(depth, 0);
    EXPECT_EQ(b.output[0], EvaluateMod5(b.input));
    const Example q = chomsky::SolveEquation(n, rng);
    ASSERT_EQ(q.input.size(), static_cast<size_t>(n));
    if (n < 3) {
      EXPECT_EQ(q.input, std::vector<int>(n, 0));
      EXPECT_EQ(q.output[0], 0);
      continue;
    }
    EXPECT_EQ(std::count(q.input.begin(), q.input.end(), 9), 1) << "one x";
    EXPECT_EQ(q.input[n - 2], 10) << "'=' before the value";
    EXPECT_EQ(std::count(q.input.begin(), q.input.end(), 7 /* ( */),
              std::count(q.input.begin(), q.input.end(), 8 /* ) */));
    // Put the answer back for x: the left side evaluates to the right side.
    std::vector<int> expr;
    for (int t = 0; t < n - 2; ++t) {
      const int s = q.input[t];
      expr.push_back(s == 9 ? q.output[0] : s == 7 ? 8 : s == 8 ? 9 : s);
    }
    EXPECT_EQ(EvaluateMod5(expr), q.input[n - 1]);
  }
}

TEST(Chomsky, ContextSensitiveStringTasksAreCorrect) {
  Rng rng(7);
  const Example md1 = chomsky::MissingDuplicateString(1, rng);
  EXPECT_EQ(md1.input, std::vector<int>{1});
  EXPECT_EQ(md1.output, std::vector<int>{1});
  for (int n = 2; n <= 25; ++n) {
    Example md = chomsky::MissingDuplicateString(n, rng);
    ASSERT_EQ(md.input.size(), static_cast<size_t>(n));
    if (n % 2) {
      EXPECT_EQ(md.input.back(), 3);
      md.input.pop_back();
    }
    EXPECT_EQ(std::count(md.input.begin(), md.input.end(), 2), 1);
    std::replace(md.input.begin(), md.input.end(), 2, md.output[0]);
    const size_t h = md.input.size() / 2;
    EXPECT_TRUE(std::equal(md.input.begin(), md.input.begin() + h, md.input.begin() + h));
    const Example of = chomsky::OddsFirst(n, rng);
    std::vector<int> back(n);  // undo: odd indices came first
    size_t k = 0;
    for (int t = 1; t < n; t += 2) back[t] = of.output[k++];
    for (int t = 0; t < n; t += 2) back[t] = of.output[k++];
    EXPECT_EQ(back, of.input);
    const Example bs = chomsky::BucketSort(n, rng);
    EXPECT_TRUE(std::is_sorted(bs.output.begin(), bs.output.end()));
    EXPECT_TRUE(std::is_permutation(bs.output.begin(), bs.output.end(), bs.input.begin()));
  }
}

TEST(Chomsky, BinaryArithmeticAndSquareRootAreExact) {
  Rng rng(11);
  for (int n = 1; n <= 40; ++n) {
    for (bool mul : {false, true}) {
      const Example e =
          mul ? chomsky::BinaryMultiplication(n, rng) : chomsky::BinaryAddition(n, rng);
      ASSERT_EQ(e.input.size(), static_cast<size_t>(n));
      ASSERT_EQ(e.output.size(), static_cast<size_t>(mul && n >= 3 ? n : n + 1));
      const std::vector<int> digits = Terminated(e);
      if (n <= 2) {
        EXPECT_EQ(ValueOf(digits), ValueOf(e.input));
        EXPECT_LE(ValueOf(e.input), (1ull << n) - 2);
        continue;
      }
      const auto plus = std::find(e.input.begin(), e.input.end(), 2);
      ASSERT_NE(plus, e.input.end());
      const std::vector<int> a(e.input.begin(), plus), b(plus + 1, e.input.end());
      EXPECT_GE(a.size(), 1u);
      EXPECT_GE(b.size(), 1u);
      EXPECT_GT(ValueOf(a), 0u);
      EXPECT_GT(ValueOf(b), 0u);
      if (n <= 40 && (!mul || n <= 34)) {
        const unsigned long long want = mul ? ValueOf(a) * ValueOf(b) : ValueOf(a) + ValueOf(b);
        EXPECT_EQ(ValueOf(digits), want) << n;
      }
      EXPECT_TRUE(digits.size() == 1 || digits.back() == 1) << "no trailing zeros";
    }
    const Example s = chomsky::ComputeSqrt(n, rng);
    ASSERT_EQ(s.output.size(), static_cast<size_t>((n + 1) / 2));
    const std::vector<int> x(s.input.rbegin(), s.input.rend()),
        r(s.output.rbegin(), s.output.rend());
    const unsigned long long xv = ValueOf(x), rv = ValueOf(r);
    EXPECT_GE(xv, 1u);
    EXPECT_LE(rv * rv, xv);
    EXPECT_GT((rv + 1) * (rv + 1), xv);
  }
  // Long lengths (the protocol evaluates up to 500): big numbers stay exact, outputs fit.
  const Example big = chomsky::BinaryMultiplication(500, rng);
  EXPECT_EQ(big.output.size(), 500u);
  EXPECT_EQ(chomsky::ComputeSqrt(499, rng).output.size(), 250u);
}

TEST(Chomsky, EveryTaskMakesEqualLengthBatchesInBothLayouts) {
  for (const char* name :
       {"even_pairs", "modular_arithmetic", "cycle_navigation", "stack_manipulation",
        "modular_arithmetic_brackets", "solve_equation", "missing_duplicate_string", "odds_first",
        "binary_addition", "binary_multiplication", "compute_sqrt", "bucket_sort"}) {
    auto task = CreateTask(name, {});
    for (Layout layout : {Layout::kEncoder, Layout::kDecoder}) {
      SequenceLayout sl(*task, layout);
      Rng rng(1);
      for (int n = 1; n <= 12; ++n) {
        const Batch b = sl.MakeBatch(n, 16, rng);  // throws if two examples differ in length
        EXPECT_EQ(b.T, sl.SequenceLengthFor(n)) << name;
      }
    }
    EXPECT_THROW(CreateTask(name, TaskOptions{7}), InputError) << "fixed alphabet: " << name;
  }
}

}  // namespace
}  // namespace lexp
