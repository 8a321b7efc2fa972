// A recipe's model put together: task, sequence layout, encoding (with the recipe's position
// scheme and an optional observer around it), attention pattern and transformer. The trainer
// builds its model here, and `lexp analyze` rebuilds a trained one here from its run file (recipe
// plus /model weights) to replay it under evaluation-time variants.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "experiments/core/recipe.h"
#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/task.h"
#include "nn/model/transformer.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Wraps the built encoding (e.g. in an analysis observer); must keep its parameters and hooks.
using EncodingWrapper = std::function<std::unique_ptr<PositionEncoding<float>>(
    std::unique_ptr<PositionEncoding<float>>)>;

struct AssembledModel {
  std::unique_ptr<Task> task;
  std::unique_ptr<SequenceLayout> layout;             // reads *task
  // The task's held-out data (Task::HeldOut) and its layout, which evaluation reads; null for
  // tasks without (EvalLayout() is then `layout`).
  std::unique_ptr<Task> eval_task;
  std::unique_ptr<SequenceLayout> eval_layout;
  const SequenceLayout& EvalLayout() const { return eval_layout ? *eval_layout : *layout; }
  std::unique_ptr<PositionEncoding<float>> encoding;  // with the position scheme (and wrapper)
  std::unique_ptr<AttentionPattern> pattern;          // the recipe's pattern; null: none
  std::unique_ptr<Transformer<float>> model;          // reads *encoding; no pattern set yet
};

AssembledModel AssembleModel(const RecipeConfig& cfg, const std::string& encoding,
                             const EncodingWrapper& wrap = nullptr);

// The encoding options the recipe gives `encoding` (empty when none).
std::map<std::string, std::string> OptionsOf(const RecipeConfig& cfg, const std::string& encoding);
// The shape an encoding of this recipe is built with.
EncodingShape ShapeFor(const RecipeConfig& cfg, const SequenceLayout& layout);

// Copies a completed (or analyzing) run file's /model weights into params: every parameter present,
// stored as float32 with its shape (format 1 stored them flat), finite; and, unless `part` (an
// encoding or a backbone loaded from a whole model), no weight in the file that params lacks (a
// recipe and weights that disagree). float for models, double for an encoding rebuilt for
// closed-form tables. Input errors name the file and the parameter.
template <typename S>
void LoadModelWeights(const std::string& run_file, const std::vector<ParamRef<S>>& params,
                      bool part = false);

// One /model dataset as read: values (row-major) and the dimensions the file gives them.
struct WeightsRead {
  std::vector<double> values;
  std::vector<uint64_t> dims;
  std::string type;  // stored element type: "f32" as lexp writes weights
};

// A completed run read once: its recipe (narrowed to its encoding) and its /model weights, so that
// the replays of one analysis (variants, cuts, lengths) build their models from memory, in
// parallel, without reading the file again.
struct TrainedRun {
  std::string path;
  std::string encoding;
  RecipeConfig recipe;
  std::map<std::string, WeightsRead> weights;  // /model, by parameter name
  int format = 0;                               // lexp-run/<format>
};
TrainedRun ReadTrainedRun(const std::string& run_file);
// LoadModelWeights from the weights read (the same checks and messages).
template <typename S>
void LoadModelWeights(const TrainedRun& run, const std::vector<ParamRef<S>>& params);

// The trained encoding of a completed run file, rebuilt from its recipe with its learned parameters
// (double precision), for closed-form tables of what was learned. Sets *name to the encoding and
// *shape to the shape it was built with.
std::unique_ptr<PositionEncoding<double>> LoadTrainedEncoding(const std::string& run_file,
                                                              std::string* name,
                                                              EncodingShape* shape);

}  // namespace lexp
