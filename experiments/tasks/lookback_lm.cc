#include "experiments/tasks/lookback_lm.h"

#include <cmath>

#include "nn/check.h"

namespace lexp {

LookbackLmTask::LookbackLmTask(int vocab) : V_(vocab > 0 ? vocab : 32) {
  LEXP_INPUT_CHECK(V_ >= 2, "task 'lookback_lm' needs vocab >= 2");
}

double LookbackLmTask::Conditional(int token, int back) const {
  const double other = (1 - kRepeat) / V_;
  return token == back ? kRepeat + other : other;
}

double LookbackLmTask::EntropyRate() const {
  const double a = kRepeat + (1 - kRepeat) / V_, b = (1 - kRepeat) / V_;
  return -a * std::log(a) - (V_ - 1) * b * std::log(b);
}

Example LookbackLmTask::Sample(int n, Rng& rng) const {
  Example e;
  e.output.resize(n);
  for (int t = 0; t < n; ++t) {
    const bool repeat = t >= kGap && rng.Uniform() < kRepeat;
    e.output[t] = repeat ? e.output[t - kGap] : static_cast<int>(rng.UniformInt(0, V_ - 1));
  }
  e.output_scored.assign(n, 1);
  return e;
}

}  // namespace lexp
