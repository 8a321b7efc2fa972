// Confidence intervals of accuracies. An accuracy measured on `trials` items is a binomial
// proportion; the Clopper-Pearson interval (Clopper & Pearson 1934) inverts the exact binomial tail
// probabilities, via Boost.Math. For token accuracy the tokens of one sequence are not independent,
// so its interval is optimistic; the sequence-level exact-match interval is exact.
// Over independent runs (seeds), the mean of a score has the Student-t interval
// mean +- t_{(1+c)/2, n-1} s / sqrt(n) (s the sample standard deviation; Student 1908).
#pragma once

#include <vector>

namespace lexp {

struct Interval {
  double lo = 0, hi = 1;
};

// Two-sided Clopper-Pearson interval at `confidence` (e.g. 0.95) for successes out of trials.
// trials = 0 gives [0, 1].
Interval ClopperPearson(long successes, long trials, double confidence = 0.95);

// Two-sided Student-t interval of the mean of xs (at least 2 values) at `confidence`.
Interval MeanInterval(const std::vector<double>& xs, double confidence = 0.95);

}  // namespace lexp
