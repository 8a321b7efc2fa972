#include "experiments/model_replay.h"

#include "nn/check.h"
#include "nn/io/hdf5.h"

namespace lexp {
namespace {

RecipeConfig RecipeOf(const std::string& run_file, const std::vector<std::string>& overrides,
                      std::string* encoding) {
  std::string recipe, state;
  {
    h5::Reader r(run_file);
    LEXP_INPUT_CHECK(r.root().Has("config") && r.root().OpenGroup("config").Has("recipe") &&
                         r.root().Has("status"),
                     "'" + run_file + "' is not a lexp run file (no /config/recipe)");
    recipe = r.root().OpenGroup("config").ReadString("recipe");
    *encoding = r.root().AttrString("encoding");
    state = r.root().OpenGroup("status").AttrString("state");
  }
  LEXP_INPUT_CHECK(state == "completed", "'" + run_file + "' did not complete (" + state +
                                             "); there are no trained weights to replay");
  RecipeConfig cfg = ParseRecipe(recipe, run_file + ":/config/recipe");
  // The recipe may train several encodings; this run is one of them.
  cfg.encodings = {*encoding};
  for (auto it = cfg.encoding_options.begin(); it != cfg.encoding_options.end();)
    it = it->first == *encoding ? std::next(it) : cfg.encoding_options.erase(it);
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
