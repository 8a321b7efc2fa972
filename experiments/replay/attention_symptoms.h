// The attention symptoms of failure beyond the training length that a diagnosis reads beside each
// intervention (lexp diagnose), so that a closed gap can be read against the symptom it removes:
//   entropy    the last query's attention entropy (nats), mean over probe sequences, layers and
//              heads; it grows about like ln n when attention spreads over more keys (LM-Infinite,
//              Han et al. 2023, arXiv:2308.16137, Theorem 2), and is at most ln(keys it sees)
//   logit_max  the last query's largest attention logit over its keys, the layers and the heads,
//              mean over probe sequences: LM-Infinite's logit explosion at unseen distances
//              (Theorem 1)
// read on the run's probe stream at task length n (probe.samples sequences), the model replayed
// with the intervention's overrides. NaN when the probe stream is empty or a layer's attention is
// not one [H*T, T] map per sequence.
#pragma once

#include "experiments/replay/model_replay.h"

namespace lexp {

struct AttentionSymptoms {
  double entropy = 0, logit_max = 0;
  int keys = 0;  // the keys the last query sees (first layer, first head, first sequence)
};

AttentionSymptoms LastQuerySymptoms(ModelReplay& replay, int n);

}  // namespace lexp
