// CoPE's counting task (Golovneva et al. 2024) against the program it writes: the answer is what
// running the program gives the printed variable, every program of n statements has one length,
// and the statements follow the reference generator's weights (set 1, pass 50, increment 7; an
// increment with nothing to increment is drawn again).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "experiments/tasks/counting.h"
#include "nn/check.h"
#include "nn/rng.h"

namespace lexp {
namespace {

using C = CountingTask;

TEST(Counting, AnswerIsThePrintedVariablesValueAfterRunningTheProgram) {
  CountingTask task;
  Rng rng(11);
  long sets = 0, passes = 0, increments = 0, printed_last_set = 0, two_set = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + trial % 40;
    const Example e = task.Sample(n, rng);
    ASSERT_EQ(e.input.size(), static_cast<size_t>(2 * n + 2));
    std::array<int, C::kVariables> value;
    value.fill(-1);
    for (int k = 0; k < n; ++k) {
      const int a = e.input[2 * k], b = e.input[2 * k + 1];
      if (a == C::kPass) {
        EXPECT_EQ(b, C::kEnd);
        ++passes;
        continue;
      }
      ASSERT_TRUE(a >= 0 && a < C::kVariables);
      if (b == C::kEquals) {
        value[a] = 0;
        ++sets;
      } else {
        ASSERT_EQ(b, C::kIncrement);
        ASSERT_GE(value[a], 0) << "an increment of a variable never set";
        ++value[a];
        ASSERT_LE(value[a], C::kMaxValue);
        ++increments;
      }
    }
    ASSERT_EQ(e.input[2 * n], C::kPrint);
    const int printed = e.input[2 * n + 1];
    int last_set = -1, set_count = 0;
    for (int k = 0; k < n; ++k)
      if (e.input[2 * k] != C::kPass && e.input[2 * k + 1] == C::kEquals) last_set = e.input[2 * k];
    for (int v = 0; v < C::kVariables; ++v) set_count += value[v] >= 0;
    if (set_count >= 2) {
      ++two_set;
      printed_last_set += printed == last_set;
    }
    ASSERT_GE(value[printed], 0) << "printed a variable never set";
    EXPECT_EQ(e.output, std::vector<int>{value[printed]});
    EXPECT_EQ(e.output_scored, std::vector<uint8_t>{1});
  }
  // Among programs with two or more variables set, the printed one is uniform over them, not the
  // last one set (which would be printed every time).
  ASSERT_GT(two_set, 50);
  EXPECT_LT(printed_last_set, 0.75 * two_set);
  EXPECT_GT(sets, 0);
  EXPECT_GT(increments, 0);
  EXPECT_THROW(task.Sample(0, rng), InputError);
}

// The reference's weights on long programs (where the first set and the cap at 10 matter little):
// passes 50 of 58 draws (about 0.90 with the redrawn increments), increments 7 per set less those
// redrawn before the first set and at the cap (measured 4.5 over 200 programs of 300).
TEST(Counting, LongProgramsFollowTheReferenceWeights) {
  CountingTask task;
  Rng rng(11);
  long sets = 0, passes = 0, increments = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const Example e = task.Sample(300, rng);
    for (int k = 0; k < 300; ++k) {
      if (e.input[2 * k] == C::kPass) {
        ++passes;
      } else if (e.input[2 * k + 1] == C::kEquals) {
        ++sets;
      } else {
        ++increments;
      }
    }
  }
  const double total = sets + passes + increments;
  EXPECT_GT(passes / total, 0.86);
  EXPECT_LT(passes / total, 0.93);
  EXPECT_GT(increments, 3.5 * sets);
  EXPECT_LT(increments, 6.0 * sets);
}

}  // namespace
}  // namespace lexp
