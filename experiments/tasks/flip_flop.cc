#include "experiments/tasks/flip_flop.h"

#include <utility>

#include "nn/check.h"

namespace lexp {

FlipFlopTask::FlipFlopTask(std::string name, double ignore)
    : name_(std::move(name)), ignore_(ignore) {}

Example FlipFlopTask::Sample(int n, Rng& rng) const {
  LEXP_INPUT_CHECK(n >= 2, name_ + ": length " + std::to_string(n) +
                               " pairs cannot hold the first write and the last read; lengths "
                               "start at 2");
  std::vector<int> seq;
  std::vector<uint8_t> scored;
  int memory = 0;
  for (int k = 0; k < n; ++k) {
    int op;
    if (k == 0) {
      op = kWrite;
    } else if (k == n - 1) {
      op = kRead;
    } else {
      const double u = rng.Uniform();
      op = u < ignore_ ? kIgnore : (u < ignore_ + (1 - ignore_) / 2 ? kWrite : kRead);
    }
    const int bit = op == kRead ? memory : static_cast<int>(rng.UniformInt(0, 1));
    if (op == kWrite) memory = bit;
    seq.insert(seq.end(), {op, bit});
    scored.insert(scored.end(), {0, static_cast<uint8_t>(op == kRead)});
  }
  Example e;
  e.input.assign(seq.begin(), seq.begin() + 2);
  e.output.assign(seq.begin() + 2, seq.end());
  e.output_scored.assign(scored.begin() + 2, scored.end());
  return e;
}

}  // namespace lexp
