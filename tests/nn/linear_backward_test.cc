// LinearBackward with scratch cuts the weight gradient's sum over rows into groups of
// kWeightGradRowGroup rows. The finite-difference check (ops_gradcheck_test.cc) uses a handful of
// rows, one group; these tests cover several groups and a ragged last one against the closed form,
// and the thread-count independence of the float result.
#include <gtest/gtest.h>

#include "nn/ops/linear.h"
#include "nn/rng.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

using testing::FillNormal;

// Rows spanning two full groups and a ragged third; 70 output columns (a ragged column chunk too).
constexpr long kRows = 2 * kWeightGradRowGroup + 37;
constexpr long kIn = 9, kOut = 70;

// The closed form for kOut output columns, and for 300: three column chunks, and the region then
// lists d_x's row chunks before the weight-gradient tasks (70: the weight tasks first).
TEST(LinearBackward, RowGroupsSumToTheClosedFormAndKeepWhatTheGradientsHeld) {
  for (const long out : {kOut, 300L}) {
    SCOPED_TRACE(out);
    Rng rng(11);
    MatD x(kRows, kIn), d_y(kRows, out);
    LinearParams<double> p, g;
    p.w.resize(kIn, out);
    p.b.resize(out);
    g.w.resize(kIn, out);
    g.b.resize(out);
    FillNormal(x, rng);
    FillNormal(d_y, rng);
    FillNormal(p.w, rng);
    FillNormal(p.b, rng);
    FillNormal(g.w, rng);  // earlier gradients: accumulated onto, not replaced
    FillNormal(g.b, rng);
    const MatD w0 = g.w;
    const RowVec<double> b0 = g.b;
    MatD d_x_add(kRows, kIn);
    FillNormal(d_x_add, rng);
    const MatD d_x0 = d_x_add;

    LinearScratch<double> scratch;
    LinearBackward(x, p, d_y, &d_x_add, g, GradWrite::kAdd, &scratch);
    EXPECT_EQ(static_cast<long>(scratch.partial.size()), 2 * kIn * out);  // groups 1 and 2

    const MatD w_expected = w0 + x.transpose() * d_y;
    const RowVec<double> b_expected = b0 + d_y.colwise().sum();
    const MatD dx_expected = d_x0 + d_y * p.w.transpose();
    EXPECT_LT((g.w - w_expected).cwiseAbs().maxCoeff(), 1e-10);
    EXPECT_LT((g.b - b_expected).cwiseAbs().maxCoeff(), 1e-10);
    EXPECT_LT((d_x_add - dx_expected).cwiseAbs().maxCoeff(), 1e-10);

    MatD d_x_over;
    LinearBackward(x, p, d_y, &d_x_over, g, GradWrite::kOverwrite, &scratch);
    EXPECT_LT((d_x_over - d_y * p.w.transpose()).cwiseAbs().maxCoeff(), 1e-10);
    EXPECT_LT((g.w - (w_expected + x.transpose() * d_y)).cwiseAbs().maxCoeff(), 1e-10);
  }
}

TEST(LinearBackward, FloatGradientsAreBitIdenticalOnOneAndTwoThreads) {
  Rng rng(12);
  MatD xd(kRows, kIn), dyd(kRows, kOut), wd(kIn, kOut);
  FillNormal(xd, rng);
  FillNormal(dyd, rng);
  FillNormal(wd, rng);
  const Mat<float> x = xd.cast<float>(), d_y = dyd.cast<float>();
  LinearParams<float> p;
  p.w = wd.cast<float>();
  p.b.setZero(kOut);
  auto run = [&](int threads, LinearParams<float>& g, Mat<float>& d_x) {
    ThreadLimit limit(threads);
    g.w.setZero(kIn, kOut);
    g.b.setZero(kOut);
    LinearScratch<float> scratch;
    LinearBackward(x, p, d_y, &d_x, g, GradWrite::kOverwrite, &scratch);
  };
  LinearParams<float> g1, g2;
  Mat<float> d_x1, d_x2;
  run(1, g1, d_x1);
  run(2, g2, d_x2);
  EXPECT_TRUE((g1.w.array() == g2.w.array()).all());
  EXPECT_TRUE((g1.b.array() == g2.b.array()).all());
  EXPECT_TRUE((d_x1.array() == d_x2.array()).all());
}

}  // namespace
}  // namespace lexp
