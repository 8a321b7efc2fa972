// The measured side of the RoPE base-scaling law (Liu et al. 2023,
// arXiv:2310.05209): a model's extrapolation limit is the longest evaluated length up to which its
// score stays within a tolerance of the in-distribution score (the loss of a language model; an
// accuracy for a task with an answer, whose loss at the training length is near 0 so that any
// relative tolerance on it fails at once), and over a grid of bases the limits
// are compared with T_extra = 2 pi b^(d_extra/d) by a least-squares fit of ln(limit) on ln(base),
// whose slope has a Student-t confidence interval (Boost.Math) to compare with the predicted
// exponent d_extra/d.
#pragma once

#include <vector>

namespace lexp {

// What a limit is read from: the loss (lower is better) or an accuracy (higher is better).
enum class LimitCriterion { kLoss, kTokenAccuracy, kExactMatch };
const char* LimitCriterionName(LimitCriterion c);  // "loss", "token_accuracy", "exact_match"
// The /eval dataset of a criterion's scores.
inline const char* LimitCriterionDataset(LimitCriterion c) { return LimitCriterionName(c); }
inline bool HigherIsBetter(LimitCriterion c) { return c != LimitCriterion::kLoss; }

// lengths ascending with their scores; in_distribution: the reference score. The largest length L
// such that every score at lengths <= L is within the tolerance of in_distribution: at most
// (1 + tolerance) x it for a loss, at least (1 - tolerance) x it for an accuracy; 0 when even the
// first fails (a NaN score fails).
double ExtrapolationLimitMeasured(const std::vector<double>& lengths,
                                  const std::vector<double>& scores, double in_distribution,
                                  double tolerance,
                                  LimitCriterion criterion = LimitCriterion::kLoss);

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
