#include "analysis/censored_regression.h"

#include <Eigen/Dense>
#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

namespace lexp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

double Pdf(double u) { return std::isfinite(u) ? kInvSqrt2Pi * std::exp(-0.5 * u * u) : 0.0; }
// Upper tail Q(u) = 1 - Phi(u), accurate far in either tail.
double Upper(double u) { return 0.5 * std::erfc(u / std::sqrt(2.0)); }

// ln P(lo <= y < hi) and its gradient in (intercept, slope, ln sigma), summed over the points.
double LogLikelihood(const std::vector<CensoredPoint>& pts, const Eigen::Vector3d& th,
                     Eigen::Vector3d* grad) {
  const double a = th[0], b = th[1], sigma = std::exp(th[2]);
  double ll = 0;
  if (grad) grad->setZero();
  for (const auto& p : pts) {
    const double mu = a + b * p.x;
    double dmu = 0, ds = 0;  // d ln P / d mu, d ln P / d ln sigma
    if (p.lo == p.hi) {      // exact: ln phi(u) - ln sigma
      const double u = (p.lo - mu) / sigma;
      ll += std::log(kInvSqrt2Pi) - 0.5 * u * u - th[2];
      dmu = u / sigma;
      ds = u * u - 1;
    } else {
      const double ul = (p.lo - mu) / sigma, uh = (p.hi - mu) / sigma;
      // P = Q(ul) - Q(uh) when the interval lies right of the mean, Phi(uh) - Phi(ul) otherwise:
      // the subtraction of two numbers near 1 is avoided either way.
      const double P = ul > 0 ? Upper(ul) - Upper(uh) : Upper(-uh) - Upper(-ul);
      if (!(P > 0)) return -std::numeric_limits<double>::infinity();
      ll += std::log(P);
      const double fl = Pdf(ul), fh = Pdf(uh);
      dmu = (fl - fh) / (sigma * P);
      const double ufl = std::isfinite(ul) ? ul * fl : 0.0, ufh = std::isfinite(uh) ? uh * fh : 0.0;
      ds = (ufl - ufh) / P;
    }
    if (grad) {
      (*grad)[0] += dmu;
      (*grad)[1] += dmu * p.x;
      (*grad)[2] += ds;
    }
  }
  return ll;
}

// Observed information: minus the Hessian, by central differences of the analytic gradient.
Eigen::Matrix3d Information(const std::vector<CensoredPoint>& pts, const Eigen::Vector3d& th) {
  Eigen::Matrix3d H;
  for (int k = 0; k < 3; ++k) {
    const double h = 1e-5 * std::max(1.0, std::abs(th[k]));
    Eigen::Vector3d up = th, dn = th, gu, gd;
    up[k] += h;
    dn[k] -= h;
    LogLikelihood(pts, up, &gu);
    LogLikelihood(pts, dn, &gd);
    H.col(k) = -(gu - gd) / (2 * h);
  }
  return 0.5 * (H + H.transpose());
}

// Newton's method with step halving over the first `free` of (intercept, slope, ln sigma) (2: sigma
// held), from th; a non-ascent direction falls back to gradient ascent. False when it does not
// converge.
bool Maximize(const std::vector<CensoredPoint>& pts, int free, Eigen::Vector3d& th, double* ll,
              int* iterations) {
  Eigen::Vector3d g;
  *ll = LogLikelihood(pts, th, &g);
  if (!std::isfinite(*ll)) return false;
  if (free == 2) g[2] = 0;
  for (*iterations = 0; *iterations < 200; ++*iterations) {
    if (th[2] < std::log(1e-6)) return false;  // sigma -> 0
    const Eigen::MatrixXd I = Information(pts, th).topLeftCorner(free, free);
    Eigen::Vector3d step = Eigen::Vector3d::Zero();
    step.head(free) = I.ldlt().solve(Eigen::VectorXd(g.head(free)));
    if (!step.allFinite() || step.dot(g) <= 0) step = g / std::max(1.0, g.norm());
    double t = 1;
    bool moved = false;
    for (int half = 0; half < 60 && !moved; ++half, t *= 0.5) {
      const Eigen::Vector3d next = th + t * step;
      Eigen::Vector3d gn;
      const double l = LogLikelihood(pts, next, &gn);
      if (free == 2) gn[2] = 0;
      if (std::isfinite(l) && l >= *ll - 1e-12) {
        const bool done = std::abs(l - *ll) < 1e-12 * (1 + std::abs(*ll)) && gn.norm() < 1e-6;
        th = next;
        *ll = l;
        g = gn;
        moved = true;
        if (done) return true;
      }
    }
    if (!moved) return g.norm() < 1e-4;
  }
  return g.norm() < 1e-4;
}

CensoredLineFit Fail(CensoredLineFit f, const std::string& why) {
  f.ok = false;
  f.why = why;
  f.intercept = f.slope = f.sigma = f.slope_se = f.slope_lo = f.slope_hi = kNaN;
  return f;
}

}  // namespace

CensoredLineFit FitCensoredLine(const std::vector<CensoredPoint>& pts, double confidence) {
  CensoredLineFit f;
  f.n = static_cast<int>(pts.size());
  double xmin = kNaN, xmax = kNaN;
  for (const auto& p : pts) {
    if (p.lo == p.hi)
      ++f.exact;
    else if (std::isinf(p.hi))
      ++f.right_censored;
    else if (std::isinf(p.lo))
      ++f.left_censored;
    else
      ++f.interval;
    xmin = std::isnan(xmin) ? p.x : std::min(xmin, p.x);
    xmax = std::isnan(xmax) ? p.x : std::max(xmax, p.x);
  }
  if (f.n < 3) return Fail(f, "fewer than 3 points");
  if (!(xmax > xmin)) return Fail(f, "every point has the same x");
  if (f.right_censored == f.n) return Fail(f, "every point is right-censored");
  for (const auto& p : pts)
    if (!(p.lo <= p.hi) || (std::isinf(p.lo) && std::isinf(p.hi)))
      return Fail(f, "a point's interval is empty or unbounded on both sides");
  // Start: least squares on interval midpoints (lower bounds for censored points).
  double mx = 0, my = 0;
  std::vector<double> y;
  for (const auto& p : pts)
    y.push_back(std::isinf(p.hi) ? p.lo : std::isinf(p.lo) ? p.hi : 0.5 * (p.lo + p.hi));
  for (int i = 0; i < f.n; ++i) {
    mx += pts[i].x / f.n;
    my += y[i] / f.n;
  }
  double sxx = 0, sxy = 0, syy = 0;
  for (int i = 0; i < f.n; ++i) {
    sxx += (pts[i].x - mx) * (pts[i].x - mx);
    sxy += (pts[i].x - mx) * (y[i] - my);
  }
  Eigen::Vector3d th(my - sxy / sxx * mx, sxy / sxx, 0);
  for (int i = 0; i < f.n; ++i) {
    const double e = y[i] - th[0] - th[1] * pts[i].x;
    syy += e * e / f.n;
  }
  // When a line passes through every interval sigma is not identified; it is then held at the
  // spread of the midpoints around their least-squares line plus that of a value known only to
  // within its interval: sqrt(SSE / (n - 2) + mean(width^2) / 12).
  double w2 = 0;
  int finite = 0;
  for (const auto& p : pts)
    if (std::isfinite(p.lo) && std::isfinite(p.hi)) {
      w2 += (p.hi - p.lo) * (p.hi - p.lo);
      ++finite;
    }
  const double floor_sigma = std::sqrt(syy * f.n / (f.n - 2.0) + (finite ? w2 / finite / 12 : 0.0));
  th[2] = std::log(std::max({std::sqrt(syy), floor_sigma, 1e-3}));
  const Eigen::Vector3d start = th;
  double ll = 0;
  // A line through every interval shows as a likelihood near 1 for every point (ln L near 0) with
  // sigma shrinking, whether or not Newton stopped: no maximum with sigma > 0 exists.
  const bool converged = Maximize(pts, 3, th, &ll, &f.iterations);
  if (!converged || (f.exact == 0 && ll > -1e-3 * f.n)) {
    th = start;
    th[2] = std::log(std::max(floor_sigma, 1e-6));
    f.sigma_at_floor = true;
    if (!Maximize(pts, 2, th, &ll, &f.iterations))
      return Fail(f, "the likelihood has no maximum (Newton did not converge)");
  }
  f.ok = true;
  f.intercept = th[0];
  f.slope = th[1];
  f.sigma = std::exp(th[2]);
  const int free = f.sigma_at_floor ? 2 : 3;
  const Eigen::MatrixXd cov = Information(pts, th).topLeftCorner(free, free).inverse();
  // Small-sample correction n / (n - 2): with exact points it turns the maximum-likelihood
  // variance SSE / (n sxx) into least squares' SSE / ((n - 2) sxx), so the interval is then exactly
  // the classical t interval.
  f.slope_se = cov(1, 1) > 0 ? std::sqrt(cov(1, 1) * f.n / (f.n - 2.0)) : kNaN;
  f.slope_lo = f.slope_hi = kNaN;
  if (std::isfinite(f.slope_se)) {
    const boost::math::students_t t(f.n - 2);
    const double q = boost::math::quantile(boost::math::complement(t, (1 - confidence) / 2));
    f.slope_lo = f.slope - q * f.slope_se;
    f.slope_hi = f.slope + q * f.slope_se;
  }
  return f;
}

}  // namespace lexp
