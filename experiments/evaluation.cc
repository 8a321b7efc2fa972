#include "experiments/evaluation.h"

#include <algorithm>

#include "nn/ops/cross_entropy.h"

namespace lexp {

namespace {
LengthStreams StreamsOf(int seed, const char* purpose, int n) {
  Rng data = Rng(static_cast<uint64_t>(seed)).Split(purpose).Split(static_cast<uint64_t>(n));
  Rng positions = data.Split("positions");
  return {data, positions};
}
}  // namespace

LengthStreams EvalStreams(int seed, int n) { return StreamsOf(seed, "eval", n); }
LengthStreams ProbeStreams(int seed, int n) { return StreamsOf(seed, "probe", n); }

EvalRow EvaluateLength(AssembledModel& m, int n, int samples, int batch_size, double depth,
                       Rng& data, Rng& positions, EvalBuffers& buf) {
  EvalRow r;
  r.length = n;
  double loss_sum = 0;
  long correct = 0, exact = 0;
  for (int done = 0; done < samples; done += batch_size) {
    const int bs = std::min(batch_size, samples - done);
    const Batch b = m.layout->MakeBatch(n, bs, data, depth);
    r.seq_len = b.T;
    m.encoding->PositionIds(b.T, false, positions, buf.pos);
    m.model->Forward(b.tokens, b.B, b.T, buf.pos, false, false, buf.logits);
    const CrossEntropyResult ce = CrossEntropyForwardBackward<float>(
        buf.logits, b.targets, b.mask, nullptr, &buf.row_loss, &buf.row_correct);
    loss_sum += ce.loss_sum;
    correct += ce.correct;
    r.scored_tokens += ce.count;
    for (int s = 0; s < b.B; ++s) {
      bool all = true;
      for (int t = 0; t < b.T; ++t) {
        const long i = static_cast<long>(s) * b.T + t;
        if (b.mask[i] && !buf.row_correct[i]) all = false;
      }
      exact += all ? 1 : 0;
    }
    r.samples += bs;
  }
  r.loss = loss_sum / std::max(1L, r.scored_tokens);
  r.token_accuracy = static_cast<double>(correct) / std::max(1L, r.scored_tokens);
  r.exact_match = static_cast<double>(exact) / std::max(1, r.samples);
  return r;
}

}  // namespace lexp
