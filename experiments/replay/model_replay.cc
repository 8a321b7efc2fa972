#include "experiments/replay/model_replay.h"

#include <limits>

#include "experiments/core/run_file.h"
#include "nn/check.h"
#include "nn/ops/cross_entropy.h"

namespace lexp {
namespace {

RecipeConfig RecipeOf(const TrainedRun& run, const std::vector<std::string>& overrides) {
  RecipeConfig cfg = run.recipe;
  ApplyOverrides(cfg, overrides);
  ValidateRecipe(cfg);
  return cfg;
}

}  // namespace

ModelReplay::ModelReplay(const std::string& run_file, const std::vector<std::string>& overrides,
                         const EncodingWrapper& wrap)
    : ModelReplay(ReadTrainedRun(run_file), overrides, wrap) {}

ModelReplay::ModelReplay(const TrainedRun& run, const std::vector<std::string>& overrides,
                         const EncodingWrapper& wrap)
    : encoding_(run.encoding),
      cfg_(RecipeOf(run, overrides)),
      parts_(AssembleModel(cfg_, encoding_, wrap)) {
  LoadModelWeights(run, parts_.model->Parameters());
  if (parts_.pattern && cfg_.pattern_when != "train")
    parts_.model->set_pattern(parts_.pattern.get());
}

double ModelReplay::EvalLoss(int n) {
  LengthStreams st = EvalStreams(cfg_.seed, n);
  return EvaluateLength(parts_, n, cfg_.eval_samples, cfg_.eval_batch_size, -1, st.data,
                        st.positions, buf_)
      .loss;
}

std::vector<double> ModelReplay::EvalLossBySequence(int n, double* pooled) {
  std::vector<double> out;
  double total = 0, tokens = 0;
  ForEachEvalBatch(n, cfg_.eval_samples, [&](const Batch& b, const std::vector<double>& pos, int) {
    parts_.model->Forward(b.tokens, b.B, b.T, pos, false, false, buf_.logits);
    CrossEntropyForwardBackward<float>(buf_.logits, b.targets, b.graded, nullptr, &buf_.row_loss,
                                       nullptr);
    for (int s = 0; s < b.B; ++s) {
      double sum = 0, count = 0;
      for (int t = 0; t < b.T; ++t) {
        const size_t i = static_cast<size_t>(s) * b.T + t;
        if (!b.graded[i]) continue;
        sum += buf_.row_loss[i];
        count += 1;
      }
      out.push_back(count > 0 ? sum / count : std::numeric_limits<double>::quiet_NaN());
      total += sum;
      tokens += count;
    }
  });
  if (pooled) *pooled = tokens > 0 ? total / tokens : std::numeric_limits<double>::quiet_NaN();
  return out;
}

void ModelReplay::ForEachEvalBatch(
    int n, int samples,
    const std::function<void(const Batch& b, const std::vector<double>& pos, int first)>& f) {
  LengthStreams st = EvalStreams(cfg_.seed, n);
  for (int done = 0; done < samples; done += cfg_.eval_batch_size) {
    const Batch b = parts_.EvalLayout().MakeBatch(n, std::min(cfg_.eval_batch_size, samples - done),
                                                  st.data, -1);
    parts_.encoding->PositionIds(b.T, false, st.positions, buf_.pos);
    f(b, buf_.pos, done);
  }
}

void ModelReplay::ForEachProbeSequence(int n, const std::function<void(int s, int T)>& f) {
  const int S = ProbeSequences(n);
  for (int s = 0; s < S; ++s) {
    ForwardProbeSequence(s);
    f(s, probe_.T);
  }
}

int ModelReplay::ProbeSequences(int n) {
  LengthStreams st = ProbeStreams(cfg_.seed, n);
  probe_ = parts_.layout->MakeBatch(n, cfg_.probe_samples, st.data);
  parts_.encoding->PositionIds(probe_.T, false, st.positions, buf_.pos);
  return probe_.B;
}

const std::vector<int>& ModelReplay::ForwardProbeSequence(int s) {
  LEXP_CHECK(s >= 0 && s < probe_.B, "replay: probe sequence out of range");
  probe_tokens_.assign(probe_.tokens.begin() + static_cast<long>(s) * probe_.T,
                       probe_.tokens.begin() + static_cast<long>(s + 1) * probe_.T);
  parts_.model->Forward(probe_tokens_, 1, probe_.T, buf_.pos, false, true, buf_.logits);
  return probe_tokens_;
}

const std::vector<int>& ModelReplay::ForwardProbeSequence(int s, double shift) {
  LEXP_CHECK(s >= 0 && s < probe_.B, "replay: probe sequence out of range");
  probe_tokens_.assign(probe_.tokens.begin() + static_cast<long>(s) * probe_.T,
                       probe_.tokens.begin() + static_cast<long>(s + 1) * probe_.T);
  shifted_ = buf_.pos;
  for (double& p : shifted_) p += shift;
  parts_.model->Forward(probe_tokens_, 1, probe_.T, shifted_, false, true, buf_.logits);
  return probe_tokens_;
}

}  // namespace lexp
