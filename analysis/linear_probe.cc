#include "analysis/linear_probe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "nn/check.h"

namespace lexp {

RidgeProbe::RidgeProbe(const Eigen::MatrixXd& x, const Eigen::VectorXd& y) {
  LEXP_CHECK(x.rows() == y.size() && x.rows() > 0, "ridge probe: one target per row");
  mean_ = x.colwise().mean();
  const Eigen::MatrixXd z = x.rowwise() - mean_;
  b_ = y.mean();
  Eigen::MatrixXd a = z.transpose() * z;
  a.diagonal().array() += 1e-3 * static_cast<double>(x.rows());
  w_ = a.ldlt().solve(z.transpose() * (y.array() - b_).matrix());
}

Eigen::VectorXd RidgeProbe::Predict(const Eigen::MatrixXd& x) const {
  return ((x.rowwise() - mean_) * w_).array() + b_;
}

double OutlierRate(const Eigen::MatrixXd& reference, const Eigen::MatrixXd& held_out,
                   const Eigen::MatrixXd& test, double q) {
  if (test.rows() == 0 || held_out.rows() == 0 || reference.rows() < 2)
    return std::numeric_limits<double>::quiet_NaN();
  const Eigen::RowVectorXd mu = reference.colwise().mean();
  const Eigen::MatrixXd c = reference.rowwise() - mu;
  Eigen::MatrixXd cov = c.transpose() * c / static_cast<double>(reference.rows());
  cov.diagonal().array() += 1e-3;
  const Eigen::LDLT<Eigen::MatrixXd> inv(cov);
  auto d2 = [&](const Eigen::MatrixXd& x, Eigen::Index r) {
    const Eigen::VectorXd v = (x.row(r) - mu).transpose();
    return v.dot(inv.solve(v));
  };
  std::vector<double> held(static_cast<size_t>(held_out.rows()));
  for (Eigen::Index r = 0; r < held_out.rows(); ++r) held[static_cast<size_t>(r)] = d2(held_out, r);
  std::sort(held.begin(), held.end());
  const size_t k =
      std::min(held.size() - 1, static_cast<size_t>(q * static_cast<double>(held.size())));
  const double cut = held[k];
  double out = 0;
  for (Eigen::Index r = 0; r < test.rows(); ++r) out += d2(test, r) > cut;
  return out / static_cast<double>(test.rows());
}

}  // namespace lexp
