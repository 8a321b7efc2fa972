// The reversed-format arithmetic tasks (experiments/tasks/arithmetic.h): every answer is the sum or
// product of its operands read least significant digit first, operands have the lengths their
// shape says with a non-zero top digit, a training batch has one shape and draws every shape,
// and evaluation reads shape 0 (both operands of n digits).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/arithmetic.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"

namespace lexp {
namespace {

// The operands of an input "a op b" (digits least significant first) split at the operator.
void Split(const std::vector<int>& input, int op, std::vector<int>* a, std::vector<int>* b) {
  const auto at = std::find(input.begin(), input.end(), op);
  ASSERT_NE(at, input.end());
  a->assign(input.begin(), at);
  b->assign(at + 1, input.end());
}

void ExpectANumber(const std::vector<int>& d, const std::string& what) {
  ASSERT_FALSE(d.empty()) << what;
  for (int x : d) ASSERT_TRUE(x >= 0 && x <= 9) << what;
  if (d.size() > 1) {
    EXPECT_NE(d.back(), 0) << what << ": a leading zero";
  }
}

TEST(ArithmeticTasks, EveryAnswerIsTheSumOfItsOperandsOfTheShapesLengths) {
  const auto task = CreateTask("addition_reversed", {});
  EXPECT_EQ(task->DigitSymbols(), 10);
  EXPECT_TRUE(task->SharedAlphabet());
  Rng rng(1);
  int swapped = 0, carried = 0;
  for (int n : {1, 2, 5, 12}) {
    ASSERT_EQ(task->Shapes(n), n);
    for (int shape = 0; shape < n; ++shape)
      for (int i = 0; i < 40; ++i) {
        const Example e = task->SampleShape(n, shape, rng);
        std::vector<int> a, b;
        Split(e.input, 10, &a, &b);
        ExpectANumber(a, "a");
        ExpectANumber(b, "b");
        const size_t longer = std::max(a.size(), b.size()), shorter = std::min(a.size(), b.size());
        EXPECT_EQ(longer, static_cast<size_t>(n));
        EXPECT_EQ(shorter, static_cast<size_t>(n - shape));
        swapped += a.size() < b.size();
        ASSERT_EQ(e.output.size(), static_cast<size_t>(n + 1));
        EXPECT_EQ(e.output_scored, std::vector<uint8_t>(n + 1, 1));
        EXPECT_EQ(arithmetic::ValueOfReversed(e.output),
                  arithmetic::ValueOfReversed(a) + arithmetic::ValueOfReversed(b));
        carried += e.output.back() == 1;
      }
  }
  EXPECT_GT(swapped, 100);  // the longer operand comes first or second
  EXPECT_GT(carried, 100);  // the top digit of the sum carries out in a good share of sums
  // Sample is shape 0.
  Rng r1(5), r2(5);
  EXPECT_EQ(task->Sample(7, r1).input, task->SampleShape(7, 0, r2).input);
}

TEST(ArithmeticTasks, EveryAnswerIsTheProductOfAnNDigitAndAOneToThreeDigitNumber) {
  const auto task = CreateTask("multiplication_reversed", {});
  Rng rng(2);
  for (int n : {1, 2, 3, 8}) {
    ASSERT_EQ(task->Shapes(n), std::min(3, n));
    for (int shape = 0; shape < task->Shapes(n); ++shape)
      for (int i = 0; i < 40; ++i) {
        const Example e = task->SampleShape(n, shape, rng);
        std::vector<int> a, b;
        Split(e.input, 11, &a, &b);
        ExpectANumber(a, "a");
        ExpectANumber(b, "b");
        EXPECT_EQ(a.size(), static_cast<size_t>(n));
        EXPECT_EQ(b.size(), static_cast<size_t>(std::min(3, n) - shape));
        ASSERT_EQ(e.output.size(), a.size() + b.size());
        EXPECT_EQ(arithmetic::ValueOfReversed(e.output),
                  arithmetic::ValueOfReversed(a) * arithmetic::ValueOfReversed(b));
      }
  }
}

TEST(ArithmeticTasks, ATrainingBatchHasOneShapeAndTrainingDrawsThemAllEvaluationReadsShapeZero) {
  const auto task = CreateTask("addition_reversed", {});
  const SequenceLayout layout(*task, Layout::kDecoder);
  Rng rng(4);
  std::set<int> lengths;
  for (int i = 0; i < 200; ++i) {
    const int shape = layout.DrawShape(6, rng);
    ASSERT_TRUE(shape >= 0 && shape < 6);
    const Batch b = layout.MakeBatch(6, 8, rng, -1, shape);
    // input 6 + (6 - shape) + 1, SEP, answer 7, END: 2 * 6 - shape + 1 + 1 + 7.
    EXPECT_EQ(b.T, 2 * 6 - shape + 9);
    lengths.insert(b.T);
  }
  EXPECT_EQ(lengths.size(), 6u);
  EXPECT_EQ(layout.MakeBatch(6, 8, rng).T, 21);            // evaluation: shape 0
  EXPECT_EQ(layout.SequenceLengthFor(6), 21);              // the longest shape
  EXPECT_EQ(layout.Digits(), 10);
  // A task of one shape draws nothing: its batches are those of before shapes existed.
  const auto copy = CreateTask("copy", {});
  const SequenceLayout copy_layout(*copy, Layout::kDecoder);
  Rng a(9), b(9);
  EXPECT_EQ(copy_layout.DrawShape(6, a), 0);
  EXPECT_EQ(a.NextU64(), b.NextU64());
  EXPECT_EQ(copy_layout.Digits(), 0);
}

TEST(ArithmeticTasks, AVocabularyIsRefused) {
  EXPECT_THROW(CreateTask("addition_reversed", TaskOptions{12}), InputError);
}

TaskOptions WithHints(int hints, bool zero_pad = false) {
  TaskOptions o;
  o.index_hints = hints;
  o.zero_pad = zero_pad;
  return o;
}

TEST(ArithmeticTasks, IndexHintsNameEachDigitsSignificanceFromOneStartPerExample) {
  // Zhou et al. 2024's index hints: hint 12 + o + s before the digit of significance s, in both
  // operands and the answer; without the hints the example is the plain one.
  constexpr int kHints = 9;
  const auto task = CreateTask("addition_reversed", WithHints(kHints));
  EXPECT_EQ(task->InputAlphabet(), 12 + kHints);
  EXPECT_EQ(task->MaxLength(), kHints - 1);  // the answer has n + 1 digits
  Rng rng(4);
  std::set<int> starts;
  for (int draw = 0; draw < 300; ++draw) {
    const int n = 1 + draw % 4;
    const Example e = task->SampleShape(n, draw % n, rng);
    std::vector<int> digits_in, digits_out;
    int start = -1;
    auto read = [&](const std::vector<int>& seq, size_t from, size_t to, std::vector<int>* d) {
      ASSERT_EQ((to - from) % 2, 0u);
      for (size_t i = from; i < to; i += 2) {
        const int s = static_cast<int>(i - from) / 2;
        if (start < 0) start = seq[i] - 12;
        ASSERT_EQ(seq[i], 12 + start + s) << "hint of significance " << s;
        ASSERT_TRUE(seq[i + 1] >= 0 && seq[i + 1] <= 9);
        d->push_back(seq[i + 1]);
      }
    };
    const auto op = std::find(e.input.begin(), e.input.end(), 10);
    ASSERT_NE(op, e.input.end());
    const size_t at = static_cast<size_t>(op - e.input.begin());
    std::vector<int> a, b;
    read(e.input, 0, at, &a);
    read(e.input, at + 1, e.input.size(), &b);
    read(e.output, 0, e.output.size(), &digits_out);
    ASSERT_LE(start + n + 1, kHints);  // every hint within the set
    starts.insert(start);
    EXPECT_EQ(arithmetic::ValueOfReversed(a) + arithmetic::ValueOfReversed(b),
              arithmetic::ValueOfReversed(digits_out));
    EXPECT_EQ(std::count(e.output_scored.begin(), e.output_scored.end(), 1),
              static_cast<long>(e.output.size()));  // hints graded too
  }
  EXPECT_EQ(starts, (std::set<int>{0, 1, 2, 3, 4, 5, 6, 7}));  // 1-digit sums reach start 7
  EXPECT_THROW(CreateTask("addition_reversed", WithHints(1)), InputError);
  EXPECT_THROW(CreateTask("multiplication_reversed", WithHints(3)), InputError);
  EXPECT_THROW(CreateTask("copy", WithHints(8)), InputError);
}

TEST(ArithmeticTasks, ZeroPaddingWritesBothOperandsOnTheLongerOnesDigits) {
  const auto padded = CreateTask("addition_reversed", WithHints(0, true));
  Rng rng(6);
  for (int draw = 0; draw < 100; ++draw) {
    const Example e = padded->SampleShape(5, 1 + draw % 4, rng);  // one operand shorter
    std::vector<int> a, b;
    Split(e.input, 10, &a, &b);
    EXPECT_EQ(a.size(), 5u);
    EXPECT_EQ(b.size(), 5u);
    EXPECT_TRUE(a.back() == 0 || b.back() == 0);  // the shorter one's zeros on top
    EXPECT_EQ(arithmetic::ValueOfReversed(a) + arithmetic::ValueOfReversed(b),
              arithmetic::ValueOfReversed(e.output));
  }
  // Negative control: unpadded, the shorter operand keeps its own digits.
  const auto plain = CreateTask("addition_reversed", {});
  const Example e = plain->SampleShape(5, 3, rng);
  std::vector<int> a, b;
  Split(e.input, 10, &a, &b);
  EXPECT_EQ(std::min(a.size(), b.size()), 2u);
  EXPECT_THROW(CreateTask("copy", WithHints(0, true)), InputError);
}

}  // namespace
}  // namespace lexp
