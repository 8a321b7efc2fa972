// The last-window split of the scores by position (experiments/replay/position_scores.h) read on
// planted RoPE readers of lookback_lm (tests/testing/planted_runs.h), a stationary source on which
// the window alone is a fair input:
//  * a reader whose slow pairs turn its attention to far keys beyond the trained distances fails
//    with the whole sequence and not with the window alone: the cost is the extra keys', and the
//    unseen positions cost nothing (only differences of positions enter a rotary logit);
//  * the negative control, the same reader without the slow pairs, extrapolates: the extra keys cost
//    nothing (they help: the window's first 23 rows find their source before the window only with
//    the whole sequence), and the unseen positions nothing either.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "experiments/replay/position_scores.h"
#include "tests/testing/planted_runs.h"

namespace lexp {
namespace {

TEST(PlantedPositionScores, AFailureFromFarKeysIsTheExtraKeysCost) {
  const auto dir = testing::FreshTempDir("planted_scores");
  const PositionScores p = MeasurePositionScores(testing::LookbackReader(dir, "far", 25, 50));
  ASSERT_TRUE(p.window_split_not_applicable.empty());
  ASSERT_EQ(p.lengths, (std::vector<int>{64, 256, 512}));
  for (size_t x = 1; x < 3; ++x) {
    EXPECT_GT(p.last_window_loss[x] - p.window_shifted_loss[x], 0.5) << p.lengths[x];
    EXPECT_NEAR(p.window_shifted_loss[x], p.window_only_loss[x], 1e-3) << p.lengths[x];
  }
  std::filesystem::remove_all(dir);
}

TEST(PlantedPositionScores, AReaderThatExtrapolatesPaysForNeither) {
  const auto dir = testing::FreshTempDir("planted_scores_none");
  const PositionScores p = MeasurePositionScores(testing::LookbackReader(dir, "near", 25, 0));
  for (size_t x = 1; x < 3; ++x) {
    EXPECT_LT(p.last_window_loss[x] - p.window_shifted_loss[x], 0.0) << p.lengths[x];
    EXPECT_NEAR(p.window_shifted_loss[x], p.window_only_loss[x], 1e-3) << p.lengths[x];
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
