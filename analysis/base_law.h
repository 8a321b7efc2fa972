// The measured side of the RoPE base-scaling law (Liu et al. 2023,
// arXiv:2310.05209): a model's extrapolation limit is the longest evaluated length up to which the
// loss stays within a tolerance of the in-distribution loss, and over a grid of bases the limits
// are compared with T_extra = 2 pi b^(d_extra/d) by a least-squares fit of ln(limit) on ln(base),
// whose slope has a Student-t confidence interval (Boost.Math) to compare with the predicted
// exponent d_extra/d.
#pragma once

#include <vector>

namespace lexp {

// lengths ascending with their losses; in_distribution: the reference loss. The largest length L
// such that every loss at lengths <= L is at most (1 + tolerance) * in_distribution; 0 when even
// the first fails.
double ExtrapolationLimitMeasured(const std::vector<double>& lengths,
                                  const std::vector<double>& losses, double in_distribution,
                                  double tolerance);

struct LineFit {
  double slope = 0, intercept = 0;
  double slope_lo = 0, slope_hi = 0;  // confidence interval of the slope
  int n = 0;
};
// Ordinary least squares y = intercept + slope x, with a two-sided Student-t interval at
// `confidence` for the slope (needs n >= 3 for an interval; otherwise lo = hi = slope).
LineFit FitLine(const std::vector<double>& x, const std::vector<double>& y,
                double confidence = 0.95);

}  // namespace lexp
