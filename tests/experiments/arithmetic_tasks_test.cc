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

}  // namespace
}  // namespace lexp
