// A language-modelling source whose only structure is at a fixed long range, for the RoPE
// base-scaling law (Liu et al. 2023): each token repeats the token kGap positions
// back with probability kRepeat, and is otherwise uniform over V symbols (default 32); the first
// kGap tokens are uniform. Predicting it needs one head that attends exactly kGap tokens back from
// every query, whatever the sequence length, so a model that helps keeps its loss flat past
// the training length, while spurious attention to far keys whose rotary angles were never seen in
// training (the failure the law predicts) shows up as a rising loss. Conditional law of token t >=
// kGap:
//   P(x_t = x_{t-g}) = a = r + (1-r)/V,  P(x_t = v) = b = (1-r)/V for every other v,
// so the entropy rate is H = -a ln a - (V-1) b ln b nats per token (the first kGap tokens cost
// ln V). Requested length n = tokens; decoder layout only.
#pragma once

#include <vector>

#include "experiments/tasks/task.h"

namespace lexp {

class LookbackLmTask final : public Task {
 public:
  static constexpr int kGap = 24;
  static constexpr double kRepeat = 0.8;
  explicit LookbackLmTask(int vocab);
  std::string Name() const override { return "lookback_lm"; }
  bool HasAnswer() const override { return false; }
  bool Stationary() const override { return true; }
  int InputAlphabet() const override { return V_; }
  int OutputAlphabet() const override { return V_; }
  bool SharedAlphabet() const override { return true; }
  bool SupportsEncoder() const override { return false; }
  Example Sample(int n, Rng& rng) const override;
  double EntropyRate() const override;
  // Conditional probability of x_t given the token kGap back (t >= kGap).
  double Conditional(int token, int back) const;

 private:
  int V_;
};

}  // namespace lexp
