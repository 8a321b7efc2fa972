// A straight line fitted to interval-censored responses: each observation says only that y lies in
// [lo, hi) (hi = +inf: right-censored; lo = -inf: left-censored; lo = hi: exact), with y =
// intercept + slope x + e and e ~ N(0, sigma^2). The fit maximizes the interval likelihood
//   sum_i ln( Phi((hi_i - mu_i) / sigma) - Phi((lo_i - mu_i) / sigma) ),  mu_i = intercept + slope
//   x_i
// (the Tobit model generalised to intervals; exact points contribute ln phi / sigma) by Newton's
// method on (intercept, slope, ln sigma). The slope's interval is the Wald interval from the
// observed information, its variance scaled by n / (n - 2), with a Student-t quantile on n - 2
// degrees of freedom: with exact points this is the classical least-squares t interval, and its
// coverage on simulated censored data is tested (tests/analysis/censored_regression_test.cc).
// When one line passes through every interval, the likelihood tends to its supremum 1 as
// sigma -> 0 and has no maximum: the information about the slope vanishes and the Wald interval is
// meaningless (about 3% of the simulated sweeps at sd 0.3). Such a fit is recognised by a log
// likelihood above -1e-3 per point with no exact point (or by Newton not converging); sigma is
// then held at the residual spread of least squares on the interval midpoints (bounds for censored
// points) plus the spread of a value known only to within its interval,
// sqrt(SSE / (n - 2) + mean(width^2) / 12), and only the line is fitted (sigma_at_floor).
//
// The RoPE base-law fit uses it: a measured extrapolation limit is known only between the last
// evaluated length that passed and the first that failed, or is at least the longest evaluated
// length, and treating those grid values as exact biases the slope.
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace lexp {

struct CensoredPoint {
  double x = 0;
  double lo = 0;                                        // y >= lo (may be -inf)
  double hi = std::numeric_limits<double>::infinity();  // y < hi (lo == hi: exact)
};

struct CensoredLineFit {
  bool ok = false;  // false: no maximum (why says so); every number is NaN
  std::string why;
  // Points by kind: exact, both bounds finite, lo = -inf, hi = +inf.
  int n = 0, exact = 0, interval = 0, left_censored = 0, right_censored = 0;
  double intercept = 0, slope = 0, sigma = 0;
  double slope_se = 0, slope_lo = 0, slope_hi = 0;
  int iterations = 0;
  bool sigma_at_floor = false;  // sigma held (see above)
};

CensoredLineFit FitCensoredLine(const std::vector<CensoredPoint>& points, double confidence = 0.95);

}  // namespace lexp
