// A trained run's model rebuilt from its run file (recipe + /model weights,
// experiments/core/assembled_model.h) and replayed on the run's own evaluation and probe streams,
// under recipe overrides in the syntax of `--set` (encoding_options.rope.log_n=true,
// model.pattern=...) and with an optional observer around its encoding. `lexp analyze` uses it for
// the analyses that need the model itself: entropy under log-n, YaRN and the Lambda mask, the
// rotary pair contributions and the post-critical ablations. With no override, EvalLoss(n)
// reproduces the run's /eval/loss at n.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "experiments/core/assembled_model.h"
#include "experiments/core/evaluation.h"

namespace lexp {

class ModelReplay {
 public:
  ModelReplay(const std::string& run_file, const std::vector<std::string>& overrides = {},
              const EncodingWrapper& wrap = nullptr);
  // The same from a run read once (ReadTrainedRun): the replays of one analysis share it.
  ModelReplay(const TrainedRun& run, const std::vector<std::string>& overrides = {},
              const EncodingWrapper& wrap = nullptr);
  const RecipeConfig& config() const { return cfg_; }
  const std::string& encoding_name() const { return encoding_; }
  PositionEncoding<float>& encoding() { return *parts_.encoding; }
  const Transformer<float>& model() const { return *parts_.model; }
  // The assembled parts (task layout, encoding, model), for analyses that build their own batches.
  AssembledModel& parts() { return parts_; }
  int SequenceLength(int n) const { return parts_.layout->SequenceLengthFor(n); }
  int InputTokens(int n) const { return parts_.layout->InputTokensFor(n); }

  // Mean loss per scored token at task length n over the recipe's eval.samples sequences (the
  // trainer's evaluation stream for n).
  double EvalLoss(int n);
  // The same sequences one by one: the loss per graded token of each (in the stream's order); their
  // pooled mean (total loss over total tokens, = EvalLoss(n)) into *pooled when given.
  std::vector<double> EvalLossBySequence(int n, double* pooled = nullptr);
  // The probe batch of task length n (probe.samples sequences, the trainer's probe stream),
  // forwarded one sequence at a time with attention kept; after sequence s, f(s, T) may read
  // model().Logits(l) / Probs(l) ([H*T, T]).
  void ForEachProbeSequence(int n, const std::function<void(int s, int T)>& f);
  // The first `samples` sequences of the evaluation stream of length n (those /eval scored, in its
  // order), in batches of eval.batch_size: f(b, pos, first) with the batch, its position ids and
  // the index of its first sequence. f runs the model as it needs (parts().model).
  void ForEachEvalBatch(
      int n, int samples,
      const std::function<void(const Batch& b, const std::vector<double>& pos, int first)>& f);
  // The same one sequence at a time, to walk two runs in step: ProbeSequences(n) builds the probe
  // batch of length n and returns its size; ForwardProbeSequence(s) forwards sequence s of it
  // (attention kept) and returns its tokens.
  int ProbeSequences(int n);
  const std::vector<int>& ForwardProbeSequence(int s);
  // The same with every position id moved by `shift` (the probe's ids plus shift).
  const std::vector<int>& ForwardProbeSequence(int s, double shift);

 private:
  std::string encoding_;
  RecipeConfig cfg_;
  AssembledModel parts_;
  EvalBuffers buf_;
  Batch probe_;                    // the batch ProbeSequences built
  std::vector<int> probe_tokens_;  // the sequence ForwardProbeSequence forwarded
  std::vector<double> shifted_;    // the probe's position ids moved
};

}  // namespace lexp
