#include "experiments/tasks/markov_lm.h"

#include <algorithm>
#include <cmath>

#include "nn/check.h"

namespace lexp {

MarkovLmTask::MarkovLmTask(int vocab) : V_(vocab > 0 ? vocab : 32) {
  LEXP_INPUT_CHECK(V_ > kSuccessors,
                   "task 'markov_lm' needs vocab > " + std::to_string(kSuccessors));
  Rng rng(0x6d61726b6f766c6dULL);  // fixed: the source is part of the task definition
  succ_.assign(kChains, std::vector<std::vector<int>>(V_));
  prob_.assign(kChains, std::vector<std::vector<double>>(V_));
  stationary_.assign(kChains, std::vector<double>(V_, 1.0 / V_));
  for (int k = 0; k < kChains; ++k) {
    for (int i = 0; i < V_; ++i) {
      std::vector<int>& s = succ_[k][i];
      s.push_back((i + 1) % V_);
      while (static_cast<int>(s.size()) < kSuccessors) {
        const int j = static_cast<int>(rng.UniformInt(0, V_ - 1));
        if (std::find(s.begin(), s.end(), j) == s.end()) s.push_back(j);
      }
      double total = 0;
      for (int b = 0; b < kSuccessors; ++b) {
        prob_[k][i].push_back(-std::log(1 - rng.Uniform()));  // Exp(1): normalised, Dirichlet(1)
        total += prob_[k][i].back();
      }
      for (double& p : prob_[k][i]) p /= total;
    }
    // Stationary distribution: power iteration on the lazy chain (P + I) / 2 (same fixed point,
    // aperiodic).
    std::vector<double>& pi = stationary_[k];
    for (int it = 0; it < 20000; ++it) {
      std::vector<double> next(V_, 0.0);
      for (int i = 0; i < V_; ++i) {
        next[i] += 0.5 * pi[i];
        for (int b = 0; b < kSuccessors; ++b) next[succ_[k][i][b]] += 0.5 * pi[i] * prob_[k][i][b];
      }
      double diff = 0;
      for (int i = 0; i < V_; ++i) diff += std::abs(next[i] - pi[i]);
      pi.swap(next);
      if (diff < 1e-15) break;
    }
  }
}

double MarkovLmTask::ChainEntropyRate(int k) const {
  double h = 0;
  for (int i = 0; i < V_; ++i)
    for (double p : prob_[k][i]) h -= stationary_[k][i] * p * std::log(p);
  return h;
}

double MarkovLmTask::EntropyRate() const {
  double h = 0;
  for (int k = 0; k < kChains; ++k) h += ChainEntropyRate(k) / kChains;
  return h;
}

double MarkovLmTask::Transition(int k, int from, int to) const {
  for (int b = 0; b < kSuccessors; ++b)
    if (succ_[k][from][b] == to) return prob_[k][from][b];
  return 0;
}

int MarkovLmTask::Next(int k, int from, Rng& rng) const {
  double u = rng.Uniform();
  for (int b = 0; b < kSuccessors - 1; ++b) {
    if (u < prob_[k][from][b]) return succ_[k][from][b];
    u -= prob_[k][from][b];
  }
  return succ_[k][from][kSuccessors - 1];
}

std::vector<int> MarkovLmTask::SampleChain(int k, int n, Rng& rng) const {
  std::vector<int> x;
  if (n <= 0) return x;
  double u = rng.Uniform();
  int s = 0;
  while (s < V_ - 1 && u >= stationary_[k][s]) u -= stationary_[k][s++];
  x.push_back(s);
  while (static_cast<int>(x.size()) < n) x.push_back(Next(k, x.back(), rng));
  return x;
}

Example MarkovLmTask::Sample(int n, Rng& rng) const {
  const int k = static_cast<int>(rng.UniformInt(0, kChains - 1));
  Example e;
  e.output = SampleChain(k, n, rng);
  e.output_scored.assign(n, 1);
  return e;
}

}  // namespace lexp
