// Linear read-outs (analysis/linear_probe.h): the ridge probe recovers a linear map and its
// intercept on features far from centred; the outlier rate of rows drawn like the reference is
// 1 - q, and near 1 for rows from a shifted distribution.
#include "analysis/linear_probe.h"

#include <gtest/gtest.h>

#include <cmath>

#include "nn/rng.h"

namespace lexp {
namespace {

Eigen::MatrixXd Gaussian(Rng& rng, long rows, long cols, double shift = 0) {
  Eigen::MatrixXd x(rows, cols);
  for (long r = 0; r < rows; ++r)
    for (long c = 0; c < cols; ++c) x(r, c) = rng.Normal() + shift;
  return x;
}

TEST(RidgeProbe, RecoversALinearMapWithItsInterceptOnUncentredFeatures) {
  Rng rng(4);
  const Eigen::MatrixXd x = Gaussian(rng, 400, 5, 50.0);  // features around 50: not centred
  const Eigen::VectorXd w = (Eigen::VectorXd(5) << 1, -2, 0.5, 0, 3).finished();
  const Eigen::VectorXd y = (x * w).array() + 7.0;
  const RidgeProbe probe(x, y);
  const Eigen::VectorXd p = probe.Predict(x);
  EXPECT_LT((p - y).cwiseAbs().maxCoeff(), 0.05) << "lambda = 1e-3 per row shrinks little";
  // A row at the feature mean is predicted at the mean target: the intercept is unpenalised.
  const Eigen::MatrixXd centre = x.colwise().mean();
  EXPECT_NEAR(probe.Predict(centre)[0], y.mean(), 1e-9);
}

// Rows from the reference distribution exceed the held-out 99th percentile at rate 0.01: 4000 test
// rows give a binomial standard error of 0.0016; the test allows 4 of them.
TEST(OutlierRate, IsOnePercentInDistributionAndNearOneWhenShifted) {
  Rng rng(9);
  const Eigen::MatrixXd ref = Gaussian(rng, 300, 20), held = Gaussian(rng, 2000, 20);
  const Eigen::MatrixXd same = Gaussian(rng, 4000, 20), shifted = Gaussian(rng, 500, 20, 3.0);
  EXPECT_NEAR(OutlierRate(ref, held, same), 0.01, 4 * 0.0016);
  EXPECT_GT(OutlierRate(ref, held, shifted), 0.95);
}

}  // namespace
}  // namespace lexp
