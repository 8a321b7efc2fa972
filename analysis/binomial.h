// Confidence intervals of accuracies. An accuracy measured on `trials` items is a binomial
// proportion; the Clopper-Pearson interval (Clopper & Pearson 1934) inverts the exact binomial tail
// probabilities, via Boost.Math. For token accuracy the tokens of one sequence are not independent,
// so its interval is optimistic; the sequence-level exact-match interval is exact.
#pragma once

namespace lexp {

struct Interval {
  double lo = 0, hi = 1;
};

// Two-sided Clopper-Pearson interval at `confidence` (e.g. 0.95) for successes out of trials.
// trials = 0 gives [0, 1].
Interval ClopperPearson(long successes, long trials, double confidence = 0.95);

}  // namespace lexp
