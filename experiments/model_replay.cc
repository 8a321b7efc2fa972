#include "experiments/model_replay.h"

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/ops/cross_entropy.h"

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
  Rng data = Rng(static_cast<uint64_t>(cfg_.seed)).Split("eval").Split(static_cast<uint64_t>(n));
  Rng prng = data.Split("positions");
  double loss = 0;
  long count = 0;
  for (int done = 0; done < cfg_.eval_samples; done += cfg_.eval_batch_size) {
    const int bs = std::min(cfg_.eval_batch_size, cfg_.eval_samples - done);
    const Batch b = parts_.layout->MakeBatch(n, bs, data);
    parts_.encoding->PositionIds(b.T, false, prng, pos_);
    parts_.model->Forward(b.tokens, b.B, b.T, pos_, false, false, logits_);
    const CrossEntropyResult ce = CrossEntropyForwardBackward<float>(
        logits_, b.targets, b.mask, nullptr, &row_loss_, &row_correct_);
    loss += ce.loss_sum;
    count += ce.count;
  }
  return loss / std::max(1L, count);
}

void ModelReplay::ForEachProbeSequence(int n, const std::function<void(int s, int T)>& f) {
  Rng data = Rng(static_cast<uint64_t>(cfg_.seed)).Split("probe").Split(static_cast<uint64_t>(n));
  Rng prng = data.Split("positions");
  const Batch b = parts_.layout->MakeBatch(n, cfg_.probe_samples, data);
  parts_.encoding->PositionIds(b.T, false, prng, pos_);
  for (int s = 0; s < b.B; ++s) {
    const std::vector<int> one(b.tokens.begin() + static_cast<long>(s) * b.T,
                               b.tokens.begin() + static_cast<long>(s + 1) * b.T);
    parts_.model->Forward(one, 1, b.T, pos_, false, true, logits_);
    f(s, b.T);
  }
}

}  // namespace lexp
