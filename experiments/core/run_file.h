// The run file of one model, <out>/<name>.h5 (layout in data/README.md), and its checkpoint
// <out>/<name>.ckpt.h5: where they are, the state a run file is in, and the typed parts that the
// commands read back (status, collect, figures, eval, analyze, base-law). The trainer writes the
// full file (experiments/training/trainer.cc); a model that failed before it could is written here.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "experiments/core/evaluation.h"
#include "experiments/core/recipe.h"

namespace lexp {

namespace h5 {
class Group;
}

std::string RunFilePath(const std::string& out_dir, const std::string& name);
std::string CheckpointPath(const std::string& out_dir, const std::string& name);

// /status@state. A file is only ever written whole, in one of these states:
//  analyzing   trained and evaluated, its end-of-training analysis not yet in (--resume does it)
//  completed   everything the run will hold is in it
//  diverged    a non-finite loss or gradient stopped it; its history up to that step is kept
//  interrupted stopped by a signal; the checkpoint beside it resumes it
//  failed      bad input or an error before training could finish; the message says which
enum class RunState { kAnalyzing, kCompleted, kDiverged, kInterrupted, kFailed };
const char* RunStateName(RunState s);
// The trained weights are final: completed, or analyzing.
bool HasFinalWeights(RunState s);
bool HasFinalWeights(const std::string& state);

// Training history, one entry per logged step.
struct TrainHistory {
  std::vector<int64_t> step, length, batch_size;
  std::vector<int64_t> tokens;  // model tokens of the step (sequences x tokens per sequence)
  std::vector<double> flops;    // the step's matrix-product FLOPs (nn/model/flops.h)
  std::vector<double> loss, lr, grad_norm, tokens_per_s;
};

// Evaluation during training (train.eval_every): one row per (step, length), step = the steps
// trained before it (0: the initial or fine-tuning source's weights), on the sequences of /eval.
struct EvalHistory {
  std::vector<int64_t> step, length;
  std::vector<double> loss, token_accuracy, exact_match;
  std::string decoding;  // as /eval's
  size_t size() const { return step.size(); }
};

// A float32 tensor as a run file stores it, with its shape and axis names: a trained parameter
// (/model) or a capture site (/probe/length_<n>/<site>).
struct StoredTensor {
  std::string name, axes;
  std::vector<uint64_t> shape;
  std::vector<float> values;
};

// The `units` attribute of a capture site's dataset, by what the site holds: attention
// probabilities, pre-softmax logits, or activations in the model's own units.
std::string CaptureSiteUnits(const std::string& site);

// The attention probe at one task length: the stored sequences' maps and the batch statistics.
struct ProbeRecord {
  int length = 0, T = 0, input_tokens = 0;
  std::vector<int64_t> tokens;                         // [stored, T]
  std::vector<double> positions;                       // [T]
  std::vector<float> logits, probs;                    // [stored, L, H, T, T]
  std::vector<double> entropy, max_logit, mean_logit;  // [L, H]
  double log_visible = 0;
  std::vector<StoredTensor> sites;  // probe.capture: [stored, site dims...], by site name
};

// Everything a run file holds before its end-of-training analysis, typed. The trainer fills it
// and writes it whole (Write: through a temporary file, renamed into place); `lexp analyze` adds
// /analysis/* afterwards and turns analyzing into completed in the same write.
struct RunFile {
  std::string encoding, label, task;  // label: the run's name (encoding and suffixes)
  int seed = 0, train_max_length = 0;
  std::string weights_from, init_from;  // evaluation of another run's weights; fine-tuning source
  std::string sweep_key;                // the key sweep the run belongs to ("" for none)
  int64_t trainable_parameters = 0, total_parameters = 0;  // LoRA trains a part
  std::string start_time;
  RecipeConfig recipe;  // this model's effective recipe, with the source it was read from
  std::map<std::string, std::vector<double>> encoding_values;  // PositionEncoding::Describe()
  TrainHistory train;
  EvalHistory eval_history;  // written only when it has rows
  std::vector<EvalRow> eval;
  Decoding decoding = Decoding::kTeacherForced;
  bool end_token = false;
  double source_entropy_rate = std::numeric_limits<double>::quiet_NaN();  // nats per token
  double chance_token_accuracy = 0;  // a uniform guess over the task's output alphabet
  std::string nonfinite_lengths;     // lengths whose loss is not finite, comma-separated ("": none)
  // Why /eval holds no rows (a capture-only evaluation); "": it holds them. Written as /eval@skipped.
  std::string eval_skipped;
  std::vector<double> depth_exact, depth_accuracy;  // [length, recipe.eval_depths] (passkey)
  std::vector<ProbeRecord> probes;
  std::vector<StoredTensor> weights;      // written when completed
  RunState state = RunState::kCompleted;  // written as analyzing when completed
  std::string message;

  void Write(const std::string& path) const;
  void WriteEvalRows(h5::Group& ev) const;  // the rows of /eval (Write's part)
  // Reads back what Write wrote (the recipe, history, evaluation, status; the probes' maps only
  // with_probes; the weights not: LoadModelWeights reads them into a model). Shapes are checked;
  // input errors name the file.
  static RunFile Read(const std::string& path, bool with_probes = false);
};

// The root attributes and /status of a run file. Input errors name the file when it is not a run
// file (no /status) or its state is not one of the above.
struct RunFileHead {
  std::string path, encoding, label, task;  // label: the run's name (encoding and suffixes)
  int seed = 0, train_max_length = 0;
  RunState state = RunState::kFailed;
  std::string message;  // why it diverged, was interrupted or failed
  int64_t steps_completed = 0;
  std::string sweep_key;  // root attribute `sweep`: the key sweep the run belongs to
};
RunFileHead ReadRunFileHead(const std::string& run_file);

// The /eval rows of a run file.
std::vector<EvalRow> ReadEvalRows(const std::string& run_file);

// The recipe of a run file with final weights (/config/recipe), narrowed to the run's own
// encoding (the recipe may train several): *encoding receives it. Input errors name the file.
RecipeConfig CompletedRunRecipe(const std::string& run_file, std::string* encoding);

// A run file for a model that failed before it could write its own (state failed).
void WriteFailedRunFile(const RecipeConfig& cfg, const std::string& encoding,
                        const std::string& path, const std::string& message);

}  // namespace lexp
