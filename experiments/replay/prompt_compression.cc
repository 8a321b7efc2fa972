#include "experiments/replay/prompt_compression.h"

#include <fmt/core.h>

#include <cmath>
#include <limits>
#include <utility>

#include "experiments/replay/model_replay.h"
#include "experiments/tasks/compressed_prompt.h"
#include "nn/check.h"

namespace lexp {

namespace {

// -ln p(x_t | x_<t) of every input symbol under the language model (the first has no context:
// +inf, so it is always kept).
InputSurprisal SurprisalOf(ModelReplay& lm) {
  return [&lm](const std::vector<int>& input) {
    const int T = static_cast<int>(input.size());
    std::vector<double> pos;
    Rng none(0);  // identity position schemes draw nothing
    lm.parts().encoding->PositionIds(T, false, none, pos);
    MatF logits;
    lm.parts().model->Forward(input, 1, T, pos, false, false, logits);
    std::vector<double> s(T, std::numeric_limits<double>::infinity());
    for (int t = 1; t < T; ++t) {
      const auto row = logits.row(t - 1).cast<double>();
      const double mx = row.maxCoeff();
      s[t] = mx + std::log((row.array() - mx).exp().sum()) - row(input[t]);
    }
    return s;
  };
}

}  // namespace

PromptCompression MeasurePromptCompression(const std::string& run_file,
                                           const std::string& lm_file,
                                           const std::vector<double>& ratios,
                                           const std::vector<int>& lengths) {
  LEXP_INPUT_CHECK(!ratios.empty(), "no compression ratio given");
  for (double r : ratios)
    LEXP_INPUT_CHECK(r >= 0 && r < 1, "a compression ratio is the fraction of the context "
                                      "dropped, in [0, 1); got " + std::to_string(r));
  ModelReplay run(run_file), lm(lm_file);
  const RecipeConfig& cfg = run.config();
  LEXP_INPUT_CHECK(lm.config().task == cfg.task && lm.config().task_vocab == cfg.task_vocab,
                   "the language model '" + lm_file + "' was trained on task '" + lm.config().task +
                       "', the run '" + run_file + "' on '" + cfg.task +
                       "': a compressor must know the run's prompts (same task and task.vocab)");
  LEXP_INPUT_CHECK(lm.config().score_input == 1,
                   "'" + lm_file + "' was not trained on its prompts: a compressor is a run with "
                   "train.score_input = 1");
  LEXP_INPUT_CHECK(run.parts().layout->EndsWithEndToken(),
                   "'" + run_file + "': prompt compression needs the decoder layout and a task "
                   "with an answer");
  PromptCompression pc;
  pc.lm_file = lm_file;
  pc.ratios = ratios;
  pc.lengths = lengths.empty() ? cfg.EvalLengths() : lengths;
  pc.train_tokens = cfg.train_max_length;
  const Decoding decoding = cfg.DecodingFor(*run.parts().task);
  pc.decoding = DecodingName(decoding);
  const InputSurprisal surprisal = SurprisalOf(lm);
  AssembledModel& parts = run.parts();
  EvalBuffers buf;
  for (double r : ratios) {
    const std::unique_ptr<Task> task =
        WithCompressedPrompt(CreateTask(cfg.task, cfg.TaskOpts()), r, surprisal);
    auto layout = std::make_unique<SequenceLayout>(*task, Layout::kDecoder);
    LEXP_CHECK(layout->Vocab() == parts.layout->Vocab(), "compressed prompts: another vocabulary");
    std::swap(parts.layout, layout);  // the run's model, reading the compressed prompts
    for (int n : pc.lengths) {
      LengthStreams st = EvalStreams(cfg.seed, n);
      const EvalRow row = EvaluateLength(parts, n, cfg.eval_samples, cfg.eval_batch_size, -1,
                                         st.data, st.positions, buf, decoding);
      pc.exact_match.push_back(row.exact_match);
      pc.token_accuracy.push_back(row.token_accuracy);
      pc.input_tokens.push_back(parts.layout->InputTokensFor(n));
    }
    std::swap(parts.layout, layout);
  }
  return pc;
}

std::string WritePromptCompression(const PromptCompression& pc, const h5::Group& analysis) {
  analysis.Remove("prompt_compression");
  const h5::Group g = analysis.CreateGroup("prompt_compression");
  g.SetAttr("language_model", pc.lm_file);
  g.SetAttr("decoding", pc.decoding);
  g.SetAttr("train_length", static_cast<int64_t>(pc.train_tokens));
  const uint64_t R = pc.ratios.size(), L = pc.lengths.size();
  g.WriteDoubles("ratio", pc.ratios, {R}, "ratio", "fraction of the context dropped");
  g.WriteInts("length", std::vector<int64_t>(pc.lengths.begin(), pc.lengths.end()), {L}, "length",
              "task length");
  g.WriteDoubles("exact_match", pc.exact_match, {R, L}, "ratio,length");
  g.WriteDoubles("token_accuracy", pc.token_accuracy, {R, L}, "ratio,length");
  g.WriteDoubles("input_tokens", pc.input_tokens, {R, L}, "ratio,length", "tokens");
  std::string report = fmt::format("prompt compression ({} decoding, compressor {}): exact match",
                                   pc.decoding, pc.lm_file);
  for (size_t i = 0; i < R; ++i) {
    report += fmt::format("\n  ratio {:.2f}:", pc.ratios[i]);
    for (size_t j = 0; j < L; ++j)
      report += fmt::format(" n={} {:.3f} ({:.0f} input tokens)", pc.lengths[j],
                            pc.exact_match[i * L + j], pc.input_tokens[i * L + j]);
  }
  return report + "\n";
}

}  // namespace lexp
