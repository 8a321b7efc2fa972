#include "experiments/replay/attention_symptoms.h"

#include <algorithm>
#include <limits>

#include "analysis/attention_stats.h"

namespace lexp {

AttentionSymptoms LastQuerySymptoms(ModelReplay& replay, int n) {
  AttentionSymptoms out;
  const int layers = replay.config().model.n_layers, heads = replay.config().model.n_heads;
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  bool causal_self_attention = true;  // [H*T, T] logits per layer (not a memory or cross layer)
  double entropy = 0, logit_max = 0;
  int sequences = 0;
  replay.ForEachProbeSequence(n, [&](int s, int T) {
    double largest = -std::numeric_limits<double>::infinity();
    for (int l = 0; l < layers; ++l) {
      const MatF& z = replay.model().Logits(l);  // [H*T, T], -inf where masked
      if (z.rows() != static_cast<long>(heads) * T || z.cols() != T) {
        causal_self_attention = false;
        continue;
      }
      for (int h = 0; h < heads; ++h) {
        const AttentionRowStats st =
            RowStats(z.data() + (static_cast<long>(h) * T + (T - 1)) * T, T);
        entropy += st.entropy;
        largest = std::max(largest, st.max_logit);
        if (s == 0 && l == 0 && h == 0) out.keys = st.visible;
      }
    }
    logit_max += largest;
    ++sequences;
  });
  if (sequences == 0 || !causal_self_attention) {  // nothing read: no symptom, not a zero
    out.entropy = out.logit_max = kNaN;
    return out;
  }
  out.entropy = entropy / (static_cast<double>(sequences) * layers * heads);
  out.logit_max = logit_max / sequences;
  return out;
}

}  // namespace lexp
