// Scratchpads (Kazemnejad et al. 2023): the step tokens of every component written out by hand for
// one summation and one parity example, what is trained on and what is graded, one shape per
// length, and the errors of a bad component list or a task without a scratchpad.
#include "experiments/tasks/scratchpad.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "experiments/core/sequence_layout.h"
#include "nn/check.h"

namespace lexp {
namespace {

// Marker symbols after an answer alphabet of `base` symbols (scratchpad.h's order).
struct Markers {
  int step, in, comp, out, var, rem, plus, ans;
  explicit Markers(int base)
      : step(base),
        in(base + 1),
        comp(base + 2),
        out(base + 3),
        var(base + 4),
        rem(base + 5),
        plus(base + 6),
        ans(base + 7) {}
};

Example SampleWith(const std::string& task, const std::string& components, int n, uint64_t seed) {
  Rng rng(seed);
  return CreateTask(task, TaskOptions(0, components))->Sample(n, rng);
}

TEST(Scratchpad, SummationStepsHoldEveryComponent) {
  const Example e = SampleWith("summation", "icovr", 3, 5);
  Rng rng(5);
  const Example plain = CreateTask("summation", {})->Sample(3, rng);
  ASSERT_EQ(e.input, plain.input) << "the scratchpad leaves the input as it is";
  const int v1 = e.input[0], v2 = e.input[2], v3 = e.input[4];
  const int s1 = v1 % 10, s2 = (s1 + v2) % 10, s3 = (s2 + v3) % 10;
  const Markers m(10);
  const std::vector<int> expected = {
      m.step, m.in, v1, m.comp, 0,  m.plus, v1, m.out, s1, m.var, s1, m.rem, v2, v3,  // step 1
      m.step, m.in, v2, m.comp, s1, m.plus, v2, m.out, s2, m.var, s2, m.rem, v3,      // step 2
      m.step, m.in, v3, m.comp, s2, m.plus, v3, m.out, s3, m.var, s3, m.rem,          // step 3
      m.ans,  s3};
  EXPECT_EQ(e.output, expected);
  EXPECT_EQ(s3, plain.output.back()) << "the answer is the plain task's";
  EXPECT_EQ(std::count(e.output_scored.begin(), e.output_scored.end(), 1),
            static_cast<long>(e.output.size()))
      << "every step token is trained on";
  EXPECT_EQ(std::count(e.output_graded.begin(), e.output_graded.end(), 1), 1);
  EXPECT_EQ(e.output_graded.back(), 1) << "only the answer is graded";
}

TEST(Scratchpad, ParityComponentsCanBeSwitchedOff) {
  const Example e = SampleWith("parity", "cv", 4, 9);
  const Markers m(2);
  std::vector<int> expected;
  int p = 0;
  for (int b : e.input) {
    expected.insert(expected.end(), {m.step, m.comp, p, m.plus, b});
    p ^= b;
    expected.insert(expected.end(), {m.var, p});
  }
  expected.insert(expected.end(), {m.ans, p == 0 ? 1 : 0});  // 1 = an even number of ones
  EXPECT_EQ(e.output, expected);
  EXPECT_EQ(CreateTask("parity", TaskOptions(0, "cv"))->OutputAlphabet(), 2 + 8);
}

TEST(Scratchpad, AdditionStepsCarryFromTheLeastSignificantDigit) {
  const Example e = SampleWith("addition", "icovr", 2, 11);
  Rng rng(11);
  const Example plain = CreateTask("addition", {})->Sample(2, rng);
  ASSERT_EQ(e.input, plain.input);
  const int a0 = e.input[0], a1 = e.input[1], b0 = e.input[3], b1 = e.input[4];
  const int t1 = a1 + b1, c1 = t1 / 10, t0 = a0 + b0 + c1, c0 = t0 / 10;
  const Markers m(10);
  std::vector<int> expected = {m.step, m.in, a1, b1, m.comp, a1, m.plus, b1, m.plus, 0, m.out,
                               t1 % 10, m.var, c1, m.rem, a0, b0,  // step 1: the last digits; a0
                                                                   // and b0 remain
                               m.step, m.in, a0, b0, m.comp, a0, m.plus, b0, m.plus, c1, m.out,
                               t0 % 10, m.var, c0, m.rem, m.ans};
  expected.insert(expected.end(), plain.output.begin(), plain.output.end());
  EXPECT_EQ(e.output, expected);
  EXPECT_EQ(plain.output, (std::vector<int>{c0, t0 % 10, t1 % 10})) << "the sum's digits";
  EXPECT_EQ(std::count(e.output_graded.begin(), e.output_graded.end(), 1), 3)
      << "the n + 1 digits of the answer";
  EXPECT_TRUE(std::equal(e.output_graded.end() - 3, e.output_graded.end(),
                         std::vector<uint8_t>{1, 1, 1}.begin()));
}

TEST(Scratchpad, SortStepsAreSelectionSortOverTheUnsortedPortion) {
  Rng rng(2);
  auto task = CreateTask("sort", TaskOptions(0, "icor"));
  Example e;
  do e = task->Sample(3, rng);
  while (e.input[0] == e.input[1] || e.input[1] == e.input[2] || e.input[0] == e.input[2]);
  const int x = e.input[0], y = e.input[1], z = e.input[2];
  std::vector<int> u = {x, y, z};
  const Markers m(50);  // markers after the 50 items; the input shares them
  EXPECT_EQ(task->InputAlphabet(), 58);
  EXPECT_EQ(task->OutputAlphabet(), 58);
  EXPECT_TRUE(task->SharedAlphabet());
  std::vector<int> expected;
  for (int k = 0; k < 3; ++k) {
    const auto mn = std::min_element(u.begin() + k, u.end());
    const int front = u[k];
    std::iter_swap(u.begin() + k, mn);
    expected.insert(expected.end(), {m.step, m.in, front, m.comp, m.out, u[k], m.rem});
    expected.insert(expected.end(), u.begin() + k + 1, u.end());
  }
  expected.push_back(m.ans);
  std::vector<int> sorted = {x, y, z};
  std::sort(sorted.begin(), sorted.end());
  expected.insert(expected.end(), sorted.begin(), sorted.end());
  EXPECT_EQ(e.output, expected);
  EXPECT_EQ(std::count(e.output_graded.begin(), e.output_graded.end(), 1), 3) << "the sorted list";
}

TEST(Scratchpad, LegoStepsResolveEveryClauseInChainOrder) {
  // Hand-made: x_0 = 4 (+ ONE), x_1 = 9 (- x_0), x_2 = 1 (- x_1); QUERY x_1.
  const int plus = 26, minus = 27, one = 28, query = 29;
  auto task = CreateTask("lego", TaskOptions(0, "icor"));
  Rng rng(1);
  Example e;
  for (int tries = 0; tries < 10000; ++tries) {  // find a sample with this sign pattern
    e = task->Sample(3, rng);
    if (e.input[1] == plus && e.input[4] == minus && e.input[7] == minus) break;
  }
  ASSERT_EQ(e.input[1], plus);
  ASSERT_EQ(e.input[4], minus);
  ASSERT_EQ(e.input[7], minus);
  ASSERT_EQ(e.input[2], one);
  ASSERT_EQ(e.input[9], query);
  const int x0 = e.input[0], x1 = e.input[3], x2 = e.input[6];
  auto sym = [](int s) { return 2 + s; };
  const Markers m(2 + 29);
  // Values: x_0 = +1 (1), x_1 = -1 (0), x_2 = +1 (1).
  const std::vector<int> expected = {
      m.step,  m.in,           sym(x0), m.comp,  m.out,      1,          m.rem,
      sym(x1), sym(minus),     sym(x0), sym(x2), sym(minus), sym(x1),  // step x_0
      m.step,  m.in,           sym(x1), m.comp,  sym(minus), sym(x0),    sym(minus),
      1,       m.out,          0,       m.rem,   sym(x2),    sym(minus), sym(x1),  // step x_1
      m.step,  m.in,           sym(x2), m.comp,  sym(minus), sym(x1),    sym(minus),
      0,       m.out,          1,       m.rem,  // x_2
      m.ans,   e.output.back()};
  EXPECT_EQ(e.output.size(), expected.size());
  for (size_t t = 0; t < std::min(e.output.size(), expected.size()); ++t)
    EXPECT_EQ(e.output[t], expected[t]) << t;
  const int q = e.input[10] == x1 ? 1 : (e.input[10] == x2 ? 2 : 0);
  EXPECT_EQ(e.output.back(), std::vector<int>({1, 0, 1})[q]) << "the answer is the query's value";
  EXPECT_THROW(CreateTask("lego", TaskOptions(0, "cv")), InputError) << "no variable to update";
  EXPECT_THROW(CreateTask("sort", TaskOptions(0, "iv")), InputError);
}

TEST(Scratchpad, BatchesTrainOnTheStepsAndGradeTheAnswerAndEndToken) {
  for (const char* name : {"summation", "sort", "lego"}) {
    const auto task = CreateTask(name, TaskOptions(0, "io"));
    const SequenceLayout layout(*task, Layout::kDecoder);
    Rng rng(3);
    for (int n : {2, 4, 9}) {
      const Batch b = layout.MakeBatch(n, 6, rng);  // throws if two examples differ in length
      EXPECT_EQ(b.T, layout.SequenceLengthFor(n));
      for (int s = 0; s < b.B; ++s) {
        const long row = static_cast<long>(s) * b.T;
        long trained = 0, graded = 0;
        for (int t = 0; t < b.T; ++t) {
          trained += b.mask[row + t];
          graded += b.graded[row + t];
          EXPECT_TRUE(!b.graded[row + t] || b.mask[row + t]) << "a graded token is trained on";
        }
        EXPECT_EQ(trained, b.T - b.prompt + 1) << "every output token and the end token";
        const long answer = std::string(name) == "sort" ? n : 1;
        EXPECT_EQ(graded, answer + 1) << name << ": the answer and the end token";
        EXPECT_TRUE(b.graded[row + b.T - 1] && b.graded[row + b.T - 2]);
      }
    }
  }
}

TEST(Scratchpad, WithoutAScratchpadEverythingTrainedOnIsGraded) {
  const auto task = CreateTask("summation", {});
  const SequenceLayout layout(*task, Layout::kDecoder);
  Rng rng(4);
  const Batch b = layout.MakeBatch(5, 4, rng);
  EXPECT_EQ(b.graded, b.mask);
}

TEST(Scratchpad, BadComponentsAndTasksWithoutOneAreInputErrors) {
  for (const char* bad : {"x", "ci", "ii", "icovrx"}) {
    try {
      CreateTask("parity", TaskOptions(0, bad));
      ADD_FAILURE() << bad << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("task.scratchpad"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("in that order"), std::string::npos) << e.what();
    }
  }
  try {
    CreateTask("copy", TaskOptions(0, "io"));
    ADD_FAILURE() << "copy has no scratchpad";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("addition, summation, parity, sort, lego"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(ValidScratchpadComponents("icovr"));
  EXPECT_TRUE(ValidScratchpadComponents("r"));
  EXPECT_FALSE(ValidScratchpadComponents(""));
}

}  // namespace
}  // namespace lexp
