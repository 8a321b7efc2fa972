#include "experiments/core/assembled_model.h"

#include <cmath>
#include <set>

#include "experiments/core/run_file.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_data.h"
#include "pe/patterns.h"
#include "pe/log_n_scale.h"
#include "pe/position_schemes.h"
#include "pe/registry.h"

namespace lexp {

std::map<std::string, std::string> OptionsOf(const RecipeConfig& cfg, const std::string& encoding) {
  auto it = cfg.encoding_options.find(encoding);
  return it == cfg.encoding_options.end() ? std::map<std::string, std::string>{} : it->second;
}

EncodingShape ShapeFor(const RecipeConfig& cfg, const SequenceLayout& layout) {
  return EncodingShape{cfg.model.d_model,   cfg.model.n_heads,
                       cfg.model.n_layers,  cfg.layout == "decoder",
                       cfg.MaxPositionId(), layout.SequenceLengthFor(cfg.train_max_length),
                       layout.Vocab(),      layout.Digits()};
}

AssembledModel AssembleModel(const RecipeConfig& cfg, const std::string& encoding,
                             const EncodingWrapper& wrap) {
  AssembledModel m;
  m.task = CreateTask(cfg.task, cfg.TaskOpts());
  m.layout = std::make_unique<SequenceLayout>(
      *m.task, cfg.layout == "encoder" ? Layout::kEncoder : Layout::kDecoder);
  m.layout->set_score_input(cfg.score_input != 0);
  m.eval_task = m.task->HeldOut();
  if (m.eval_task) {
    m.eval_layout = std::make_unique<SequenceLayout>(
        *m.eval_task, cfg.layout == "encoder" ? Layout::kEncoder : Layout::kDecoder);
    m.eval_layout->set_score_input(cfg.score_input != 0);
  }
  const ModelConfig mc = cfg.Model(m.layout->Vocab());
  m.encoding = CreateEncoding<float>(encoding, OptionsOf(cfg, encoding), ShapeFor(cfg, *m.layout));
  if (cfg.positions != "identity") {
    PositionSchemeConfig pc;
    pc.name = cfg.positions;
    pc.max_position = cfg.PositionsMax();
    pc.sample_at_eval = cfg.positions_at_eval == "sample";
    m.encoding = std::make_unique<WithPositionScheme<float>>(std::move(m.encoding), pc);
  }
  if (cfg.log_n == 1)
    m.encoding = std::make_unique<WithLogNScale<float>>(
        std::move(m.encoding), std::max(2, m.layout->SequenceLengthFor(cfg.train_max_length)));
  if (wrap) m.encoding = wrap(std::move(m.encoding));
  m.model = std::make_unique<Transformer<float>>(mc, m.encoding.get());
  m.pattern = CreatePattern(cfg.PatternFor(m.layout->SequenceLengthFor(cfg.train_max_length)));
  return m;
}

namespace {

std::string DimsText(const std::vector<uint64_t>& dims) {
  std::string s;
  for (const uint64_t d : dims) s += (s.empty() ? "" : " x ") + std::to_string(d);
  return "[" + s + "]";
}

// Copies the weights read (by parameter name) into params, with the file's name in every message.
// Format 2 and 3 files store each parameter with its shape; format 1 files stored them flat,
// which is accepted there when the element count matches. Unless `part`, a weight the model does
// not have is refused too (the recipe and the weights disagree), except the LoRA adapters a
// fine-tuned run keeps beside the weights they were merged into.
template <typename S>
void CopyWeights(const std::string& path, int format, const std::vector<ParamRef<S>>& params,
                 const std::map<std::string, WeightsRead>& weights, bool part) {
  for (const auto& p : params) {
    const auto it = weights.find(p.name);
    LEXP_INPUT_CHECK(it != weights.end(), "'" + path + "' has no weights for " + p.name +
                                              " (a different model or encoding?)");
    const WeightsRead& found = it->second;
    LEXP_INPUT_CHECK(found.type == "f32", "'" + path + "': " + p.name + " is stored as " +
                                              found.type +
                                              ", lexp stores weights as f32 (the "
                                              "file is damaged or was not written by lexp)");
    const std::vector<double>& v = found.values;
    const bool flat_v1 =
        format == 1 && found.dims.size() == 1 && static_cast<long>(v.size()) == p.size;
    LEXP_INPUT_CHECK(found.dims == p.shape || flat_v1,
                     "'" + path + "': " + p.name + " is " + DimsText(found.dims) +
                         " in the file, the model needs " + DimsText(p.shape) +
                         " (a different model size or encoding option?)");
    for (long i = 0; i < p.size; ++i) {
      LEXP_INPUT_CHECK(std::isfinite(v[i]), "'" + path + "': the weights of " + p.name +
                                                " are not finite (a diverged model?)");
      p.value[i] = static_cast<S>(v[i]);
    }
  }
  if (part) return;
  std::set<std::string> wanted;
  for (const auto& p : params) wanted.insert(p.name);
  auto lora_adapter = [](const std::string& name) {  // kept beside the merged weights
    for (const std::string end : {".lora_A", ".lora_B"})
      if (name.size() > end.size() && name.compare(name.size() - end.size(), end.size(), end) == 0)
        return true;
    return false;
  };
  for (const auto& [name, w] : weights)
    LEXP_INPUT_CHECK(wanted.count(name) || lora_adapter(name),
                     "'" + path + "' holds weights " + name +
                         " that the model of its recipe does not have (the "
                         "recipe and the weights disagree: the file is "
                         "damaged or was changed)");
}

std::map<std::string, WeightsRead> ReadWeights(const std::string& path) {
  h5::Reader r(path);
  LEXP_INPUT_CHECK(r.root().Has("model"), "'" + path + "' holds no trained weights (/model)");
  h5::Group m = r.root().OpenGroup("model");
  std::map<std::string, WeightsRead> w;
  for (const auto& name : m.Children()) {
    WeightsRead& t = w[name];
    t.type = m.DatasetType(name);
    t.values = m.ReadDoubles(name, &t.dims);
  }
  return w;
}

// The format of a run file with final weights (completed or analyzing); input errors otherwise.
int FinalRunFormat(const std::string& path) {
  const RunFileHead head = ReadRunFileHead(path);
  LEXP_INPUT_CHECK(HasFinalWeights(head.state), "'" + path + "' did not complete (" +
                                                    RunStateName(head.state) +
                                                    "); there are no trained weights");
  h5::Reader r(path);
  return RunFileFormat(r.root());
}

}  // namespace

template <typename S>
void LoadModelWeights(const std::string& path, const std::vector<ParamRef<S>>& params, bool part) {
  const int format = FinalRunFormat(path);
  CopyWeights(path, format, params, ReadWeights(path), part);
}

TrainedRun ReadTrainedRun(const std::string& run_file) {
  TrainedRun run;
  run.path = run_file;
  run.recipe = CompletedRunRecipe(run_file, &run.encoding);
  run.format = FinalRunFormat(run_file);
  run.weights = ReadWeights(run_file);
  return run;
}

template <typename S>
void LoadModelWeights(const TrainedRun& run, const std::vector<ParamRef<S>>& params) {
  CopyWeights(run.path, run.format, params, run.weights, false);
}

template void LoadModelWeights<float>(const std::string&, const std::vector<ParamRef<float>>&,
                                      bool);
template void LoadModelWeights<double>(const std::string&, const std::vector<ParamRef<double>>&,
                                       bool);
template void LoadModelWeights<float>(const TrainedRun&, const std::vector<ParamRef<float>>&);

std::unique_ptr<PositionEncoding<double>> LoadTrainedEncoding(const std::string& run_file,
                                                              std::string* name,
                                                              EncodingShape* shape) {
  const RecipeConfig cfg = CompletedRunRecipe(run_file, name);
  auto task = CreateTask(cfg.task, cfg.TaskOpts());
  const SequenceLayout layout(*task, cfg.layout == "encoder" ? Layout::kEncoder : Layout::kDecoder);
  *shape = ShapeFor(cfg, layout);
  auto enc = CreateEncoding<double>(*name, OptionsOf(cfg, *name), *shape);
  LoadModelWeights(run_file, enc->Parameters(), /*part=*/true);  // the encoding's weights only
  return enc;
}

}  // namespace lexp
