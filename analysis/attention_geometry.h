// Where attention goes and how its logits grow with distance, per attention map (one sequence,
// layer and head; [T, T] row-major, logits -inf and probabilities 0 where a key is masked):
//  * LogitRunningMax: LM-Infinite's logit-explosion curve (Han et al. 2023, arXiv:2308.16137;
//    formulas.md 7.3, as its visualization code measures it): m(n) = max over queries of the logit
//    at distance n = i - j, then the running maximum over n. NaN where no visible pair is that
//    close.
//  * AttendedDistances: per query, the expected distance sum_j p_ij (i - j) and the distance of the
//    most attended key (tokens; negative for keys after the query in encoders).
//  * JensenShannon: JS divergence (nats, in [0, ln 2]) between two attention rows over the same
//  keys.
#pragma once

#include <vector>

namespace lexp {

std::vector<double> LogitRunningMax(const float* logits, int T, long ld);

// Empirical attention expectation (xPos paper, formulas.md 7.2): adds every visible logit at
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
