// Which cut of an ablation sweep makes a model extrapolate, judged as a reviewer would: the
// post-critical ablation of RoPE (Liu et al. 2023, arXiv:2310.05209: the pairs beyond the critical
// dimension d_extra/2 never complete a period in training, so freezing them, theta_k = 0 for k >=
// c, should remove what breaks beyond the training length) evaluates the model with every cut c =
// 0..P (c = P: nothing ablated) on the same sequences. A lowest loss among cuts is not yet a
// boundary: every cut may still fail (worse than a uniform guess), and the lowest may be noise or
// may cost the model what it does in distribution. For each cut, from per-sequence losses (sequence
// s of each length is the same for every cut, so differences are paired):
//   beyond_c(s)  = mean over the lengths > N of the loss of sequence s      (in_c(s) alike, <= N)
//   beyond_loss_c = mean_s beyond_c(s), with its Student-t interval over s
//   beyond_difference_c = mean_s (beyond_c(s) - beyond_P(s)), with its paired interval
//   in_distribution_cost_c = mean_s (in_c(s) - in_P(s)), with its paired interval
//   better_than_chance_c: the beyond-loss interval lies below the chance loss (ln V, a uniform
//   guess over the model's vocabulary) extrapolates_c: beyond_difference's interval lies below 0
//   and better_than_chance_c
// The measured boundary is the extrapolating cut with the lowest beyond loss (the first on ties);
// -1 when no cut helps (or no length lies beyond N, or fewer than 2 sequences).
#pragma once

#include <vector>

namespace lexp {

struct CutAblationInput {
  std::vector<int> lengths;  // [E] task lengths
  int train_length = 0;      // N: lengths > N are beyond training
  double chance_loss = 0;    // ln V
  // [cut][length][sequence] loss per scored token of each sequence; the last cut ablates nothing.
  std::vector<std::vector<std::vector<double>>> loss;
};

struct CutAblationVerdict {
  bool applicable = false;  // a length beyond N and a length within it, and >= 2 sequences
  std::vector<double> beyond_loss, beyond_lo, beyond_hi;                // [cut]
  std::vector<double> beyond_difference, difference_lo, difference_hi;  // [cut] vs the last cut
  std::vector<double> in_distribution_loss;                             // [cut]
  std::vector<double> in_distribution_cost, cost_lo, cost_hi;           // [cut] vs the last cut
  std::vector<int> better_than_chance, helps;                    // [cut] 0/1
  int boundary = -1;  // the extrapolating cut with the lowest beyond loss; -1: none
  int lowest = -1;    // the cut with the lowest beyond loss, extrapolating or not (first on ties)
};

CutAblationVerdict JudgeCutAblation(const CutAblationInput& in, double confidence = 0.95);

}  // namespace lexp
