// Attention entropy of a trained run under the evaluation-time remedies for entropy growth
// (LM-Infinite Theorem 2: with bounded logits entropy grows like ln n with the n
// visible keys): the plain model, RoPE's log-n logit scale (option `log_n`), YaRN's
// temperature (scaling = yarn, factor = longest probe / training length) and the Lambda mask
// (LM-Infinite: 2 global tokens and a window of the training length). Each is a replay of the run's
// probe at its longest probe length (experiments/replay/model_replay.h); entropy per (layer, head,
// query) over the keys the query may see, mean over the probe sequences. Variants that do not apply
// to the run's encoding or layout carry the reason instead.
#pragma once

#include <string>
#include <vector>

#include "nn/io/hdf5.h"

namespace lexp {

struct EntropyVariant {
  std::string name;                    // plain | log_n | yarn | lambda
  std::string description;             // what was changed, in words
  std::vector<std::string> overrides;  // recipe overrides of the replay
  std::string not_applicable;          // non-empty: why the variant was skipped
  std::vector<double> entropy;         // [L, H, T] nats
  std::vector<double> visible;         // [T] keys query i may see (layer 0, head 0)
};

struct EntropyVariants {
  int length = 0, sequence_length = 0, input_tokens = 0, train_tokens = 0, layers = 0, heads = 0;
  // What the run itself already applies at evaluation ("none", or e.g. "scaling pi factor 2, log-n,
  // pattern lambda"): the variants replay with it (log-n and the Lambda mask on top of it, YaRN in
  // place of its frequency rule), which the file and the figure say.
  std::string run_rule = "none";
  std::vector<EntropyVariant> variants;
};

EntropyVariants EntropyUnderVariants(const std::string& run_file);

// Writes /analysis/entropy_variants (replacing an earlier one) and returns report lines.
std::string WriteEntropyVariants(const EntropyVariants& ev, const h5::Group& analysis);

}  // namespace lexp
