// LayerNormBackward over several row chunks: written over a buffer (kOverwrite) it gives the values
// of adding to zeros, and its parameter gradients have the bits of LayerNormParamGrad's chunked
// sums, on one thread and two.
#include <gtest/gtest.h>

#include "nn/ops/layernorm.h"
#include "nn/rng.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

using testing::FillNormal;

constexpr long kRows = 2 * kRowGrain + 37;  // two full chunks and a ragged third
constexpr long kC = 24;

struct Case {
  Mat<float> x, y, d_y;
  LayerNormParams<float> p;
  LayerNormCache<float> cache;
  Case() {
    Rng rng(21);
    MatD xd(kRows, kC), dyd(kRows, kC);
    FillNormal(xd, rng);
    FillNormal(dyd, rng);
    x = xd.cast<float>();
    d_y = dyd.cast<float>();
    MatD gd(1, kC), bd(1, kC);
    FillNormal(gd, rng);
    FillNormal(bd, rng);
    p.g = gd.row(0).cast<float>();
    p.b = bd.row(0).cast<float>();
    LayerNormForward(x, p, y, cache);
  }
};

LayerNormParams<float> Zeros() {
  LayerNormParams<float> g;
  g.g.setZero(kC);
  g.b.setZero(kC);
  return g;
}

TEST(LayerNormBackward, OverwriteIsAddingToZerosAndTheParameterSumsAreTheChunkedOnes) {
  const Case c;
  for (const int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    const ThreadLimit limit(threads);
    Mat<float> added = Mat<float>::Zero(kRows, kC);
    LayerNormParams<float> g_added = Zeros();
    LayerNormBackward(c.p, c.cache, c.d_y, added, g_added);

    Mat<float> over = Mat<float>::Constant(kRows, kC, 7.f);  // what was there must not count
    LayerNormParams<float> g_over = Zeros();
    LayerNormBackward(c.p, c.cache, c.d_y, over, g_over, GradWrite::kOverwrite);
    EXPECT_TRUE((over.array() == added.array()).all());

    Mat<float> resized;  // kOverwrite sizes an empty buffer
    LayerNormParams<float> g_resized = Zeros();
    LayerNormBackward(c.p, c.cache, c.d_y, resized, g_resized, GradWrite::kOverwrite);
    ASSERT_EQ(resized.rows(), kRows);
    EXPECT_TRUE((resized.array() == added.array()).all());

    LayerNormParams<float> g_sums = Zeros();
    LayerNormParamGrad(c.cache, c.d_y, g_sums);
    for (const auto* g : {&g_added, &g_over, &g_resized}) {
      EXPECT_TRUE((g->g.array() == g_sums.g.array()).all());
      EXPECT_TRUE((g->b.array() == g_sums.b.array()).all());
    }
    // And the closed forms, in double: d_b = sum_rows d_y, d_g = sum_rows d_y * xhat.
    const MatD xhat = c.cache.xhat.cast<double>(), d_y = c.d_y.cast<double>();
    EXPECT_LT((g_over.b.cast<double>() - d_y.colwise().sum()).cwiseAbs().maxCoeff(), 1e-3);
    EXPECT_LT((g_over.g.cast<double>() - d_y.cwiseProduct(xhat).colwise().sum())
                  .cwiseAbs()
                  .maxCoeff(),
              1e-3);
  }
}

}  // namespace
}  // namespace lexp
