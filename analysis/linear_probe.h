// Linear read-outs of hidden states, for the position probes of `lexp analyze`:
//  * RidgeProbe: y = (x - mean_x) w + b, fitted by ridge regression with lambda = 1e-3 x rows on w
//    and the intercept b unpenalised (features centred by their own fit-set mean, b = mean y);
//  * OutlierRate: the fraction of test rows whose squared Mahalanobis distance
//    (x - mu)^T (Sigma + 1e-3 I)^(-1) (x - mu) to a reference set exceeds the q-quantile of that
//    distance over held-out reference rows. mu and Sigma come from `reference`, the cut from
//    `held_out`, so rows drawn like the reference exceed it at rate 1 - q (the cut is not fitted
//    to the rows that set it).
#pragma once

#include <Eigen/Dense>

namespace lexp {

class RidgeProbe {
 public:
  RidgeProbe(const Eigen::MatrixXd& x, const Eigen::VectorXd& y);
  Eigen::VectorXd Predict(const Eigen::MatrixXd& x) const;

 private:
  Eigen::RowVectorXd mean_;
  Eigen::VectorXd w_;
  double b_ = 0;
};

double OutlierRate(const Eigen::MatrixXd& reference, const Eigen::MatrixXd& held_out,
                   const Eigen::MatrixXd& test, double q = 0.99);

}  // namespace lexp
