// A synthetic task: for a requested length n and a seeded RNG, one example made of input symbols,
// output symbols and which output symbols are scored. How an example becomes a model sequence
// (decoder with a separator, or encoder with blank output slots) is the layout's business
// (sequence_layout.h), so every task works with both layouts where that makes sense.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "nn/rng.h"

namespace lexp {

struct Example {
  std::vector<int> input;   // symbols in [0, InputAlphabet())
  std::vector<int> output;  // symbols in [0, OutputAlphabet())
  std::vector<uint8_t>
      output_scored;  // 1 where the output symbol is a target (same size as output)
};

struct TaskOptions {
  int vocab = 0;  // task-specific alphabet size; 0 = the task's default
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string Name() const = 0;
  virtual int InputAlphabet() const = 0;
  virtual int OutputAlphabet() const = 0;
  // True when output symbols are the same tokens as input symbols (copy-like tasks).
  virtual bool SharedAlphabet() const { return false; }
  // False for tasks whose outputs contain unscored, unpredictable symbols that the model must read
  // (associative recall queries): they need the decoder layout.
  virtual bool SupportsEncoder() const { return true; }
  virtual int MinLength() const { return 1; }
  virtual int MaxLength() const { return 1 << 20; }
  virtual Example Sample(int n, Rng& rng) const = 0;
  // Tasks with a depth axis (where in the input the information sits, 0 = start, 1 = end):
  // evaluation sweeps it (eval.depths). Sample draws the depth at random.
  virtual bool HasDepth() const { return false; }
  virtual Example SampleAtDepth(int n, double /*depth*/, Rng& rng) const { return Sample(n, rng); }
  // Language-modelling sources: the source's entropy rate in nats per token (NaN: not a source).
  virtual double EntropyRate() const { return std::numeric_limits<double>::quiet_NaN(); }
};

struct TaskInfo {
  std::string name;
  std::string description;
  std::string source;
};

const std::vector<TaskInfo>& ListTasks();
std::unique_ptr<Task> CreateTask(const std::string& name, const TaskOptions& options);

}  // namespace lexp
