// Evaluation of an assembled model, shared by the trainer and the replays of `lexp analyze`: the
// seeded streams a run evaluates and probes on, and the batched loss/accuracy/exact-match pass over
// one task length. Both callers draw the same sequences for the same seed and length, which is what
// lets a replay reproduce a run's /eval.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/core/assembled_model.h"
#include "nn/rng.h"
#include "nn/tensor.h"

namespace lexp {

// One evaluated length. Under teacher forcing: loss, token accuracy (argmax of each scored
// position given the true tokens before it) and exact match (every scored token right). Under
// greedy decoding the model writes its answer from the prompt (input and separator), each token the
// argmax given its own earlier ones, until it writes the end token or has written twice the
// target's length; then exact match = the written sequence equals the answer followed by the end
// token, and token accuracy = the fraction of the answer's positions (the end token included) at
// which the written sequence holds the target token (a sequence that stops early misses the rest;
// one that runs on is judged on its first positions). The loss stays the teacher-forced loss, and
// the teacher-forced scores of the same sequences are kept beside the greedy ones.
struct EvalRow {
  int length = 0, seq_len = 0, samples = 0;
  long scored_tokens = 0;
  double loss = 0, token_accuracy = 0, exact_match = 0;
  Decoding decoding = Decoding::kTeacherForced;
  // Greedy decoding only: teacher-forced token accuracy and exact match of the same sequences, the
  // fraction of sequences that wrote the end token, and the mean written length (tokens, end
  // token included).
  double teacher_forced_accuracy = 0, teacher_forced_exact = 0, ended = 0, written_length = 0;
  // Wall-clock seconds of the teacher-forced pass and of greedy decoding (the run prints their
  // ratio; no file holds them, as they depend on the machine).
  double teacher_forced_seconds = 0, greedy_seconds = 0;
  // Greedy decoding only: written tokens read from the teacher-forced pass (GreedyWrite's
  // shortcut), all written tokens, and the sequences decoded past it.
  long greedy_from_teacher_forced = 0, greedy_written_tokens = 0;
  int greedy_decoded_sequences = 0;
};

// The data and position-id streams of task length n: evaluation (seed -> "eval" -> n) and probe
// (seed -> "probe" -> n); positions are the "positions" split of the data stream.
struct LengthStreams {
  Rng data, positions;
};
LengthStreams EvalStreams(int seed, int n);
LengthStreams ProbeStreams(int seed, int n);

// What greedy decoding of a batch wrote: per sequence up to `cap` tokens (twice the length of the
// answer with its end token), `tokens` [B, cap] with -1 after the written length.
struct WrittenAnswers {
  int cap = 0;
  std::vector<int> tokens, length;
  std::vector<uint8_t> ended;  // wrote the end token
  long from_teacher_forced = 0;  // tokens read from the teacher-forced pass
  int decoded_sequences = 0;     // sequences that were decoded (the others: read whole)
};

// Buffers reused across evaluation batches (no allocation once warm).
struct EvalBuffers {
  MatF logits;
  std::vector<double> pos, row_loss;
  std::vector<uint8_t> row_correct;
  std::vector<int> step_tokens;  // greedy decoding
  WrittenAnswers written;
};

// Greedy decoding of batch b (decoder layout, a task with an answer) from its prompts (input and
// separator), with position ids drawn from positions.Split("greedy").
// With teacher_logits, the logits [B*T, V] of a teacher-forced pass over b at the position ids
// buf.pos holds on entry (as EvaluateLength leaves them; the matrix may be buf.logits itself):
// where the model's own prefix is the true one, its greedy token is the argmax of that pass, so
// the tokens up to and including the first one off target are read from it, and only the
// sequences that have not written the end token by then are decoded, from there. Exact in real
// arithmetic; used only where decoding gives a row the logits a whole forward pass does (same
// position ids on the first T, Transformer::DecodingRecomputesPrefix false). The two passes
// round differently, so an exact tie between two tokens may be broken differently.
void GreedyWrite(AssembledModel& m, const Batch& b, Rng& positions, EvalBuffers& buf,
                 WrittenAnswers& out, const MatF* teacher_logits = nullptr);

// Scores of one model's evaluation under the published protocols: Ruoss/Deletang (token accuracy
// averaged over the evaluated lengths N+1..M), Kazemnejad (exact match averaged over N+1..2N) and
// in distribution (token accuracy over 1..N). NaN where no evaluated length falls in the range.
struct ProtocolScores {
  double in_distribution, ruoss, kazemnejad_exact;
};
ProtocolScores ScoreEvalRows(const std::vector<EvalRow>& eval, int train_max_length);

// The cost of greedy decoding over these rows, for the run's progress: its seconds against the
// teacher-forced pass over the same sequences, and how much of it that pass already held.
std::string GreedyCostLine(const std::vector<EvalRow>& eval);

// The task lengths whose evaluation loss is not finite, "n1,n2,..." ("" when none).
std::string NonFiniteLossLengths(const std::vector<EvalRow>& eval);

// `samples` sequences of task length n (depth >= 0: at that depth) in batches of `batch_size`,
// drawn from `data` with position ids from `positions` (greedy decoding draws the positions of the
// written sequence from positions.Split("greedy") at each batch).
EvalRow EvaluateLength(AssembledModel& m, int n, int samples, int batch_size, double depth,
                       Rng& data, Rng& positions, EvalBuffers& buf,
                       Decoding decoding = Decoding::kTeacherForced);

}  // namespace lexp
