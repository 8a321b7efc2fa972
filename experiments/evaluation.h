// Evaluation of an assembled model, shared by the trainer and the replays of `lexp analyze`: the
// seeded streams a run evaluates and probes on, and the batched loss/accuracy/exact-match pass over
// one task length. Both callers draw the same sequences for the same seed and length, which is what
// lets a replay reproduce a run's /eval.
#pragma once

#include <cstdint>
#include <vector>

#include "experiments/assembled_model.h"
#include "nn/rng.h"
#include "nn/tensor.h"

namespace lexp {

struct EvalRow {
  int length = 0, seq_len = 0, samples = 0;
  long scored_tokens = 0;
  double loss = 0, token_accuracy = 0, exact_match = 0;
};

// The data and position-id streams of task length n: evaluation (seed -> "eval" -> n) and probe
// (seed -> "probe" -> n); positions are the "positions" split of the data stream.
struct LengthStreams {
  Rng data, positions;
};
LengthStreams EvalStreams(int seed, int n);
LengthStreams ProbeStreams(int seed, int n);

// Buffers reused across evaluation batches (no allocation once warm).
struct EvalBuffers {
  MatF logits;
  std::vector<double> pos, row_loss;
  std::vector<uint8_t> row_correct;
};

// `samples` sequences of task length n (depth >= 0: at that depth) in batches of `batch_size`,
// drawn from `data` with position ids from `positions`.
EvalRow EvaluateLength(AssembledModel& m, int n, int samples, int batch_size, double depth,
                       Rng& data, Rng& positions, EvalBuffers& buf);

}  // namespace lexp
