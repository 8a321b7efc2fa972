// Flip-flop language modelling (Liu et al. 2023, arXiv:2306.00946) against its definition, read
// back from the sequences: the first instruction writes, the last reads, every read's bit is the
// last written bit and only those bits are scored, and the instructions between follow
// (write, read, ignore) = ((1 - p) / 2, (1 - p) / 2, p) for the three distributions.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "experiments/tasks/flip_flop.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"
#include "nn/rng.h"

namespace lexp {
namespace {

TEST(FlipFlop, ReadsReturnTheLastWriteAndOnlyTheyAreScored) {
  for (const auto& [name, p] : std::vector<std::pair<std::string, double>>{
           {"flip_flop", 0.8}, {"flip_flop_sparse", 0.98}, {"flip_flop_dense", 0.1}}) {
    auto task = CreateTask(name, {});
    Rng rng(7);
    const int n = 50, trials = 400;
    long ops[5] = {0, 0, 0, 0, 0}, middle = 0;
    long free_bits = 0, ones = 0, same_as_memory = 0;  // bits after writes and ignores
    for (int s = 0; s < trials; ++s) {
      const Example e = task->Sample(n, rng);
      ASSERT_EQ(e.input.size(), 2u);
      ASSERT_EQ(e.output.size(), static_cast<size_t>(2 * n - 2));
      std::vector<int> seq = e.input;
      seq.insert(seq.end(), e.output.begin(), e.output.end());
      std::vector<uint8_t> scored = {0, 0};
      scored.insert(scored.end(), e.output_scored.begin(), e.output_scored.end());
      EXPECT_EQ(seq[0], FlipFlopTask::kWrite);
      EXPECT_EQ(seq[2 * n - 2], FlipFlopTask::kRead);
      int memory = -1;
      for (int k = 0; k < n; ++k) {
        const int op = seq[2 * k], bit = seq[2 * k + 1];
        ASSERT_TRUE(bit == 0 || bit == 1);
        EXPECT_EQ(scored[2 * k], 0);
        EXPECT_EQ(scored[2 * k + 1], op == FlipFlopTask::kRead ? 1 : 0);
        if (op != FlipFlopTask::kRead) {
          ++free_bits;
          ones += bit;
          same_as_memory += k > 0 && bit == memory;
        }
        if (op == FlipFlopTask::kWrite) memory = bit;
        if (op == FlipFlopTask::kRead) {
          EXPECT_EQ(bit, memory) << name << " pair " << k;
        }
        if (k > 0 && k < n - 1) {
          ++ops[op];
          ++middle;
        }
      }
    }
    // Bits after a write or an ignore are fair coins, not the remembered bit: writing always 0, or
    // ignoring with the remembered bit, fails here.
    EXPECT_NEAR(ones, free_bits * 0.5, 5 * std::sqrt(free_bits * 0.25)) << name;
    EXPECT_NEAR(same_as_memory, (free_bits - trials) * 0.5, 5 * std::sqrt(free_bits * 0.25) + 1)
        << name;
    const double sd = std::sqrt(middle * p * (1 - p));
    EXPECT_NEAR(ops[FlipFlopTask::kIgnore], middle * p, 5 * sd + 1) << name;
    EXPECT_NEAR(ops[FlipFlopTask::kWrite], ops[FlipFlopTask::kRead],
                5 * std::sqrt(middle * (1 - p)) + 1)
        << name;
  }
}

TEST(FlipFlop, RefusesFewerThanTwoPairsAndTheEncoder) {
  auto task = CreateTask("flip_flop", {});
  Rng rng(1);
  EXPECT_THROW(task->Sample(1, rng), InputError);
  EXPECT_FALSE(task->SupportsEncoder());
  const Example e = task->Sample(2, rng);  // w b r b
  EXPECT_EQ(e.output[0], FlipFlopTask::kRead);
  EXPECT_EQ(e.output[1], e.input[1]);
}

}  // namespace
}  // namespace lexp
