// Intervals for the difference of two scores, the tests behind a claim's verdict
// (experiments/reproduce/criterion.h). A difference A - B is significant on a side when its
// interval lies wholly on that side of 0.
//   Welch (Welch 1947): two groups of independent runs (different trained models), each a mean over
//     >= 2 seeds: d +- t_{(1+c)/2, nu} sqrt(s_a^2/n_a + s_b^2/n_b), nu by Welch-Satterthwaite.
//   Paired: the same seeds of one trained model or one pre-training on both sides: the Student-t
//     interval of the mean of the per-seed differences (binomial.h's MeanInterval).
//   MOVER (Zou & Donner 2008, "method of variance estimates recovery"): two independent scores each
//     with its own interval (a Clopper-Pearson interval of one run's counts, or a Student-t one):
//     L = d - sqrt((a - l_a)^2 + (u_b - b)^2), U = d + sqrt((u_a - a)^2 + (b - l_b)^2); with
//     Wilson intervals this is Newcombe's interval for a difference of proportions (1998, method 10).
// Several comparisons judged as one claim: "every one significant" needs no correction (an
// intersection-union test: each at level alpha keeps the whole at alpha, Berger 1982); "some one
// significant" takes Bonferroni's level alpha / m over the m comparisons.
#pragma once

#include <vector>

#include "analysis/binomial.h"

namespace lexp {

// Welch's interval for mean(a) - mean(b), each at least 2 values. Two groups without spread give
// the point difference (an interval of width 0).
Interval WelchDifference(const std::vector<double>& a, const std::vector<double>& b,
                         double confidence = 0.95);

// The interval of the mean of a[i] - b[i] (the same seed on both sides), at least 2 pairs.
Interval PairedDifference(const std::vector<double>& a, const std::vector<double>& b,
                          double confidence = 0.95);

// MOVER's interval for a - b from each side's point and interval (at the same confidence).
Interval MoverDifference(double a, Interval a_interval, double b, Interval b_interval);

// The confidence of each of m comparisons for a family-wise level 1 - alpha (Bonferroni).
double BonferroniConfidence(int m, double alpha = 0.05);

}  // namespace lexp
