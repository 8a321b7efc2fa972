// FreeKeyCorner (notebooks_cpp/figure_kit.h): a figure's key goes where its curves are not.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "notebooks_cpp/figure_kit.h"

namespace lexp {
namespace {

std::vector<std::pair<double, double>> Line(double y0, double y1, double x0 = 0, double x1 = 10) {
  std::vector<std::pair<double, double>> p;
  for (int i = 0; i <= 10; ++i) p.emplace_back(x0 + (x1 - x0) * i / 10, y0 + (y1 - y0) * i / 10);
  return p;
}

TEST(FreeKeyCorner, KeepsThePreferredCornerWhenItIsFree) {
  // A loss that rises from a low start leaves the top left free.
  EXPECT_EQ(FreeKeyCorner(Line(0.1, 0.9), {0, 10, 0, 1, false}, "top left"), "top left");
}

TEST(FreeKeyCorner, MovesTheKeyOffACurveThatFillsThePreferredCorner) {
  // A loss high everywhere (PI without fine-tuning): the top is taken, the bottom left free.
  EXPECT_EQ(FreeKeyCorner(Line(0.9, 0.95), {0, 10, 0, 1, false}, "top left"), "bottom left");
  // A curve high on the left only: the top right is free.
  EXPECT_EQ(FreeKeyCorner(Line(0.95, 0.1), {0, 10, 0, 1, false}, "top left"), "top right");
}

TEST(FreeKeyCorner, MeasuresALogarithmicAxisInLogScale) {
  // Lengths 1..1024 doubling, the curve high from 64 on. On a log axis 64 lies at 60% of the width,
  // so the top left is free; on a linear one 64, 128 and 256 lie in its left 45%, and the key goes
  // to the bottom right, where no point is.
  std::vector<std::pair<double, double>> p;
  for (double x = 1; x <= 1024; x *= 2) p.emplace_back(x, x >= 64 ? 0.9 : 0.1);
  EXPECT_EQ(FreeKeyCorner(p, {1, 1024, 0, 1, true}, "top left"), "top left");
  EXPECT_EQ(FreeKeyCorner(p, {1, 1024, 0, 1, false}, "top left"), "bottom right");
}

}  // namespace
}  // namespace lexp
