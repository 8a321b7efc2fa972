// The empirical attention expectation (xPos paper) of a trained run at every
// evaluation length: the mean and spread of the pre-softmax logit at each relative distance
// n = i - j >= 0 over the probe batch (probe.samples sequences of the run's probe stream at that
// length, replayed with experiments/replay/model_replay.h), per layer and head, and the attention
// resolution of the mean curve (convention A, and B). Distances a length does not reach, or where
// no pair is visible, are NaN and are gaps the resolution does not join. A flat curve of K
// distances has resolution 1/K^2, so resolution falls with length even with no change of shape:
// the resolution over the training window (the same N at every length) and the flat curve's are
// written beside it.
#pragma once

#include <string>
#include <vector>

#include "nn/io/hdf5.h"

namespace lexp {

struct EmpiricalExpectation {
  std::vector<int> lengths, sequence_lengths;  // [E] task length n, tokens T
  uint64_t layers = 0, heads = 0, max_tokens = 0;
  std::vector<double> mean, sd;                  // [E, L, H, max_tokens]
  std::vector<double> resolution, resolution_b;  // [E, L, H]
  std::vector<double> resolution_window;         // [E, L, H] distances < train_tokens only
  std::vector<double> resolution_flat, resolution_flat_window;  // [E] a flat curve, same gaps
  int train_tokens = 0;
};

EmpiricalExpectation MeasureExpectation(const std::string& run_file);

// Writes /analysis/expectation (replacing an earlier one); returns a report line.
std::string WriteEmpiricalExpectation(const EmpiricalExpectation& e, const h5::Group& analysis);

}  // namespace lexp
