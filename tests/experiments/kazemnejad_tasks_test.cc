// Kazemnejad et al.'s tasks in token form (Kazemnejad et al. 2023): the copy and reverse variants'
// formats, exact addition and summation, sorting, and LEGO chains whose answer is the product of
// the signs.
#include <gtest/gtest.h>

#include <algorithm>

#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"

namespace lexp {
namespace {

Example SampleOf(const std::string& task, int n, uint64_t seed) {
  Rng rng(seed);
  return CreateTask(task, {})->Sample(n, rng);
}

std::vector<int> Reversed(std::vector<int> v) {
  std::reverse(v.begin(), v.end());
  return v;
}

std::vector<int> Join(std::vector<int> a, int sep, const std::vector<int>& b) {
  a.push_back(sep);
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(Kazemnejad, CopyAndReverseVariantsHaveTheirFormats) {
  const int next = 100;  // NEXT after the default pool of 100
  for (int n : {1, 2, 7}) {
    const Example rsc = SampleOf("copy_rsc", n, 1);
    EXPECT_EQ(std::count(rsc.input.begin(), rsc.input.end(), rsc.input[0]), n);
    EXPECT_EQ(rsc.output, rsc.input);
    const Example rsc2 = SampleOf("copy_rsc2x", n, 1);
    EXPECT_EQ(rsc2.output, std::vector<int>(2 * n, rsc2.input[0]));
    const Example rdc = SampleOf("copy_rdc", n, 2);
    EXPECT_EQ(rdc.output, std::vector<int>(n, rdc.output[0]));
    EXPECT_EQ(rdc.input, std::vector<int>(n, rdc.input[0]));
    EXPECT_NE(rdc.input[0], rdc.output[0]);
    const Example c2 = SampleOf("copy_cmc2x", n, 3);
    EXPECT_EQ(c2.output, Join(c2.input, next, c2.input));
    const Example mc = SampleOf("reverse_mc", n, 4);
    EXPECT_EQ(mc.output, Reversed(mc.input));
    const Example mc2 = SampleOf("reverse_mc2x", n, 5);
    EXPECT_EQ(mc2.output, Join(Reversed(mc2.input), next, Reversed(mc2.input)));
    const Example rv = SampleOf("reverse_mcrv", n, 6);
    EXPECT_EQ(rv.output, Join(Reversed(rv.input), next, rv.input));
    for (const Example* e : {&c2, &mc, &mc2, &rv})
      for (int x : e->input) EXPECT_LT(x, next) << "NEXT never appears in the input";
  }
}

TEST(Kazemnejad, AdditionAndSummationAreExact) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const int n = 1 + static_cast<int>(seed % 12);
    const Example a = SampleOf("addition", n, seed);
    ASSERT_EQ(a.input.size(), 2u * n + 1);
    EXPECT_EQ(a.input[n], 10) << "'+' between the operands";
    ASSERT_EQ(a.output.size(), static_cast<size_t>(n + 1));
    unsigned long long x = 0, y = 0, s = 0;
    for (int i = 0; i < n; ++i) {
      x = 10 * x + a.input[i];
      y = 10 * y + a.input[n + 1 + i];
    }
    for (int d : a.output) s = 10 * s + d;
    EXPECT_EQ(s, x + y);
    // One operand has exactly n digits.
    if (n > 1) {
      EXPECT_TRUE(a.input[0] != 0 || a.input[n + 1] != 0);
    }
    const Example m = SampleOf("summation", n, seed);
    int sum = 0;
    for (size_t i = 0; i < m.input.size(); ++i) {
      if (i % 2) {
        EXPECT_EQ(m.input[i], 10);
      } else {
        EXPECT_TRUE(m.input[i] >= 1 && m.input[i] <= 9);
        sum += m.input[i];
      }
    }
    EXPECT_EQ(m.output[0], sum % 10);
  }
}

TEST(Kazemnejad, ParityAnswersYesForAnEvenCount) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Example p = SampleOf("parity", 1 + static_cast<int>(seed), seed);
    EXPECT_EQ(p.output[0], std::count(p.input.begin(), p.input.end(), 1) % 2 == 0 ? 1 : 0);
  }
}

TEST(Kazemnejad, SortAndLegoAreCorrect) {
  const Example s = SampleOf("sort", 12, 3);
  EXPECT_TRUE(std::is_sorted(s.output.begin(), s.output.end()));
  EXPECT_TRUE(std::is_permutation(s.output.begin(), s.output.end(), s.input.begin()));
  for (const auto& x : s.input) EXPECT_LT(x, 50);
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const int n = 1 + static_cast<int>(seed % 26);
    const Example l = SampleOf("lego", n, seed);
    ASSERT_EQ(l.input.size(), 3u * n + 2);
    EXPECT_EQ(l.input[3 * n], 29) << "QUERY";
    // Follow the chain: variable i's clause names variable i-1 (or ONE).
    int sign = 1, q = -1;
    std::vector<int> seen;
    for (int i = 0; i < n; ++i) {
      const int var = l.input[3 * i], op = l.input[3 * i + 1], prev = l.input[3 * i + 2];
      EXPECT_EQ(prev, i == 0 ? 28 : l.input[3 * (i - 1)]);
      EXPECT_TRUE(op == 26 || op == 27);
      EXPECT_EQ(std::count(seen.begin(), seen.end(), var), 0) << "distinct variables";
      seen.push_back(var);
      sign *= op == 26 ? 1 : -1;
      if (var == l.input[3 * n + 1]) {
        q = i;
        EXPECT_EQ(l.output[0], sign > 0 ? 1 : 0);
      }
    }
    EXPECT_GE(q, n / 2) << "queried from the second half of the chain";
  }
  EXPECT_EQ(CreateTask("lego", {})->MaxLength(), 26);
}

TEST(Kazemnejad, EveryTaskBatchesAtEveryLengthAndRejectsAVocabItCannotUse) {
  for (const char* name :
       {"copy_rsc", "copy_rsc2x", "copy_rdc", "copy_cmc2x", "reverse_mc", "reverse_mc2x",
        "reverse_mcrv", "addition", "summation", "sort", "lego", "parity"}) {
    auto task = CreateTask(name, {});
    SequenceLayout layout(*task, Layout::kDecoder);
    Rng rng(1);
    for (int n = 1; n <= 10; ++n)
      EXPECT_EQ(layout.MakeBatch(n, 8, rng).T, layout.SequenceLengthFor(n));
  }
  EXPECT_THROW(CreateTask("addition", TaskOptions{7}), InputError);
  EXPECT_EQ(CreateTask("sort", TaskOptions{7})->InputAlphabet(), 7);
}

}  // namespace
}  // namespace lexp
