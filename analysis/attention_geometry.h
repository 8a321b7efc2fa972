// Where attention goes and how its logits grow with distance, per attention map (one sequence,
// layer and head; [T, T] row-major, logits -inf and probabilities 0 where a key is masked):
//  * LastQueryLogitBound: LM-Infinite's logit-explosion statistic (Han et al. 2023,
//    arXiv:2308.16137): along the last query's row, the logit at distance n = i - j, then its
//    running maximum over n, bound(n) = max(bound(n - 1), logit(n)); one curve per sequence and
//    head, whose mean and spread over sequences LM-Infinite plots. NaN before the first visible
//    key.
//  * AllQueriesLogitRunningMax: the largest logit at distance n over every query of the map, then
//    its running maximum over n. Not LM-Infinite's statistic: a maximum over T - n queries grows
//    with the probe length even for i.i.d. logits (N(0,1) at n = 32: 3.3 at T = 64, 3.9 at
//    T = 256, where the last-query bound stays near 2.1). NaN where no visible pair is that close.
//  * NonFiniteLogits: logits that are NaN or +inf (a diverged model); every statistic here skips
//    them (and masked keys, -inf), so callers count and report them.
//  * AttendedDistances: per query, the expected distance sum_j p_ij (i - j) and the distance of the
//    most attended key (tokens; negative for keys after the query in encoders).
//  * JensenShannon: JS divergence (nats, in [0, ln 2]) between two attention rows over the same
//  keys.
#pragma once

#include <vector>

namespace lexp {

std::vector<double> LastQueryLogitBound(const float* logits, int T, long ld);
std::vector<double> AllQueriesLogitRunningMax(const float* logits, int T, long ld);
long NonFiniteLogits(const float* logits, int T, long ld);

// Empirical attention expectation (xPos paper): adds every visible logit at
// distance n = i - j >= 0 to sum[n] and counts it in count[n] (sum, count: T entries); with
// sum_sq, adds its square there too (for the spread sqrt(sum_sq/count - mean^2)).
void AccumulateLogitsByDistance(const float* logits, int T, long ld, std::vector<double>& sum,
                                std::vector<double>& count, std::vector<double>* sum_sq = nullptr);

struct AttendedDistance {
  std::vector<double> mean;    // [T]
  std::vector<double> argmax;  // [T]
};
AttendedDistance AttendedDistances(const float* probs, int T, long ld);

double JensenShannon(const float* p, const float* q, int n);

}  // namespace lexp
