// The pure part of the position-shift analysis (analysis/shift_invariance.h): two attention maps
// compared row by row, with the first key's part.
#include "analysis/shift_invariance.h"

#include <gtest/gtest.h>

#include <vector>

namespace lexp {
namespace {

// Identical maps differ by nothing (the reading of an exactly relative encoding).
TEST(ShiftInvariance, IdenticalMapsDifferByNothing) {
  const std::vector<float> a = {1, 0, 0, 0.5f, 0.5f, 0, 0.2f, 0.3f, 0.5f};
  ShiftDifference d;
  AddShiftDifference(a.data(), a.data(), 3, &d);
  EXPECT_EQ(d.row_l1, 0.0);
  EXPECT_EQ(d.first_key, 0.0);
  EXPECT_EQ(d.rows, 3);
}

// A planted move: row 1 moves 0.1 of its mass from key 1 to key 0, row 2 moves 0.2 from key 2 to
// key 1. Row distances 0.2 and 0.4; the first key holds 0.1 of the 0.6.
TEST(ShiftInvariance, PlantedMovesAreMeasuredWithTheFirstKeysPart) {
  const std::vector<double> a = {1, 0, 0, 0.5, 0.5, 0, 0.2, 0.3, 0.5};
  const std::vector<double> b = {1, 0, 0, 0.6, 0.4, 0, 0.2, 0.5, 0.3};
  ShiftDifference d;
  AddShiftDifference(a.data(), b.data(), 3, &d);
  EXPECT_NEAR(d.row_l1, 0.6, 1e-12);
  EXPECT_NEAR(d.first_key, 0.1, 1e-12);
  EXPECT_EQ(d.rows, 3);
  // All of a move that only changes the first key against the last: half of the row's L1.
  const std::vector<double> c = {1, 0, 0, 0.5, 0.5, 0, 0.5, 0.3, 0.2};
  ShiftDifference e;
  AddShiftDifference(a.data(), c.data(), 3, &e);
  EXPECT_NEAR(e.row_l1, 0.6, 1e-12);
  EXPECT_NEAR(e.first_key, 0.3, 1e-12);
}

}  // namespace
}  // namespace lexp
