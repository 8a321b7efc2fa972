// The gallery table's numbers (experiments/reproduce/gallery.h): a score far below the table's
// 3 decimals (B1's fp32 moves, about 1e-6) keeps its significant digits instead of reading 0.000.
#include <gtest/gtest.h>

#include "experiments/reproduce/gallery.h"

namespace lexp {
namespace {

TEST(GalleryScoreText, ThreeDecimalsUnlessTheyWouldHideTheValue) {
  EXPECT_EQ(ScoreText(0.0224), "0.022");
  EXPECT_EQ(ScoreText(1.5174), "1.517");
  EXPECT_EQ(ScoreText(0.0), "0.000");
  EXPECT_EQ(ScoreText(1.1e-6), "1.1e-06");
  EXPECT_EQ(ScoreText(0.00031), "0.00031");
  EXPECT_EQ(ScoreText(-0.00031), "-0.00031");
  EXPECT_EQ(ScoreText(0.0016), "0.002");  // 3 decimals still show it
}

TEST(GalleryScoreText, SignedDifferencesKeepTheirSign) {
  EXPECT_EQ(ScoreText(0.001234, true), "+0.001");
  EXPECT_EQ(ScoreText(-0.0162, true), "-0.016");
  EXPECT_EQ(ScoreText(2.2e-7, true), "+2.2e-07");
  EXPECT_EQ(ScoreText(-4e-4, true), "-0.0004");
}

}  // namespace
}  // namespace lexp
