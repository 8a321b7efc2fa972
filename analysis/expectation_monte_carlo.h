// Monte-Carlo attention expectation (xPos paper section 2; its sampling distribution
// could not be checked against the paper text, so the distribution is the user's choice): the mean
// over random content of the pre-softmax score between a query and a key n positions apart, for any
// rotary encoding given as per-pair frequencies theta_k (zero for pairs that do not rotate, e.g.
// partial RoPE) and optional per-pair decays zeta_k^(n/B) (xPos), with its standard error.
// Content model: every component of q and k is i.i.d. with mean mu and standard deviation sigma
// (Gaussian or uniform); either q = k = x (the same content at distance n, the default) or
// q and k independent. Score of pair k at distance n: zeta_k^(n/B) Re(q_k conj(k_k) e^{i n
// theta_k}), summed over pairs. Closed forms the estimates converge to:
//   same content:  E s(n) = (mu^2 + sigma^2) * proxy(n),  independent:  E s(n) = mu^2 * proxy(n),
// with proxy(n) = 2 sum_k zeta_k^(n/B) cos(n theta_k) the deterministic all-ones proxy.
// Samples are cut into fixed chunks, each with its own split of the seed, and the chunk sums are
// added in order, so the result does not depend on the thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lexp::theory {

struct ContentDistribution {
  std::string family = "gaussian";  // gaussian | uniform
  double mean = 0, sd = 1;
  bool same_content = true;  // q = k = x; false: q and k independent
};

struct MonteCarloCurve {
  std::vector<double> mean, standard_error;  // per requested distance
  long samples = 0;
};

MonteCarloCurve ExpectationMonteCarlo(const std::vector<double>& theta,
                                      const std::vector<double>& zeta, double scale_base,
                                      const std::vector<long>& distances,
                                      const ContentDistribution& content, long samples,
                                      uint64_t seed);

// The closed form the Monte-Carlo estimate converges to (see above), at `distances`.
std::vector<double> ExpectationClosedForm(const std::vector<double>& theta,
                                          const std::vector<double>& zeta, double scale_base,
                                          const std::vector<long>& distances,
                                          const ContentDistribution& content);

}  // namespace lexp::theory
