#include "experiments/tasks/counting.h"

#include <array>
#include <string>
#include <vector>

#include "nn/check.h"

namespace lexp {

namespace {

enum class Op { kSet, kPass, kIncrement };

// The reference's weights: set 1, pass (DUMMY) 50, increment 7.
Op DrawOp(Rng& rng) {
  const int64_t u = rng.UniformInt(0, 57);
  return u < 1 ? Op::kSet : (u < 51 ? Op::kPass : Op::kIncrement);
}

}  // namespace

Example CountingTask::Sample(int n, Rng& rng) const {
  LEXP_INPUT_CHECK(n >= 1, "counting: a program needs at least 1 statement, got " +
                               std::to_string(n));
  for (int attempt = 0; attempt < 100000; ++attempt) {
    std::array<int, kVariables> value;
    value.fill(-1);  // -1: not set yet
    std::vector<int> tokens;
    bool failed = false;
    for (int k = 0; k < n && !failed; ++k) {
      bool written = false;
      for (int trial = 0; trial < 100 && !written; ++trial) {
        const Op op = DrawOp(rng);
        if (op == Op::kSet) {
          const int v = static_cast<int>(rng.UniformInt(0, kVariables - 1));
          value[v] = 0;
          tokens.insert(tokens.end(), {v, kEquals});
          written = true;
        } else if (op == Op::kPass) {
          tokens.insert(tokens.end(), {kPass, kEnd});
          written = true;
        } else {
          std::vector<int> set;
          for (int v = 0; v < kVariables; ++v)
            if (value[v] >= 0) set.push_back(v);
          if (set.empty()) continue;  // nothing to increment: drawn again
          const int v = set[rng.UniformInt(0, static_cast<int64_t>(set.size()) - 1)];
          if (value[v] + 1 > kMaxValue) continue;
          ++value[v];
          tokens.insert(tokens.end(), {v, kIncrement});
          written = true;
        }
      }
      failed = !written;
    }
    std::vector<int> set;
    for (int v = 0; v < kVariables; ++v)
      if (value[v] >= 0) set.push_back(v);
    if (failed || set.empty()) continue;  // no variable to print: the program is drawn again
    const int v = set[rng.UniformInt(0, static_cast<int64_t>(set.size()) - 1)];
    tokens.insert(tokens.end(), {kPrint, v});
    Example e;
    e.input = std::move(tokens);
    e.output = {value[v]};
    e.output_scored = {1};
    return e;
  }
  FailInput("counting: no program of " + std::to_string(n) + " statements in 100000 draws");
}

}  // namespace lexp
