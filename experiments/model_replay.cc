#include "experiments/model_replay.h"

#include "nn/check.h"

namespace lexp {
namespace {

RecipeConfig RecipeOf(const std::string& run_file, const std::vector<std::string>& overrides,
                      std::string* encoding) {
  RecipeConfig cfg = CompletedRunRecipe(run_file, encoding);
  ApplyOverrides(cfg, overrides);
  ValidateRecipe(cfg);
  return cfg;
}

}  // namespace

ModelReplay::ModelReplay(const std::string& run_file, const std::vector<std::string>& overrides,
                         const EncodingWrapper& wrap)
    : cfg_(RecipeOf(run_file, overrides, &encoding_)),
      parts_(AssembleModel(cfg_, encoding_, wrap)) {
  LoadModelWeights(run_file, parts_.model->Parameters());
  if (parts_.pattern && cfg_.pattern_when != "train")
    parts_.model->set_pattern(parts_.pattern.get());
}

double ModelReplay::EvalLoss(int n) {
  LengthStreams st = EvalStreams(cfg_.seed, n);
  return EvaluateLength(parts_, n, cfg_.eval_samples, cfg_.eval_batch_size, -1, st.data,
                        st.positions, buf_)
      .loss;
}

void ModelReplay::ForEachProbeSequence(int n, const std::function<void(int s, int T)>& f) {
  LengthStreams st = ProbeStreams(cfg_.seed, n);
  const Batch b = parts_.layout->MakeBatch(n, cfg_.probe_samples, st.data);
  parts_.encoding->PositionIds(b.T, false, st.positions, buf_.pos);
  for (int s = 0; s < b.B; ++s) {
    const std::vector<int> one(b.tokens.begin() + static_cast<long>(s) * b.T,
                               b.tokens.begin() + static_cast<long>(s + 1) * b.T);
    parts_.model->Forward(one, 1, b.T, buf_.pos, false, true, buf_.logits);
    f(s, b.T);
  }
}

}  // namespace lexp
