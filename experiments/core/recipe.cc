#include "experiments/core/recipe.h"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"
#include "nn/model/capture_sites.h"
#include "pe/options.h"
#include "pe/registry.h"
#include "pe/rope.h"

namespace lexp {

std::string WithSeed(const std::string& pattern, const std::string& seed) {
  const std::string placeholder = "{seed}";
  std::string filled;
  size_t from = 0;
  for (size_t at; (at = pattern.find(placeholder, from)) != std::string::npos;
       from = at + placeholder.size())
    filled.append(pattern, from, at - from).append(seed);
  return filled.append(pattern, from, std::string::npos);
}

std::vector<int> RecipeConfig::EvalEveryLengths() const {
  if (!eval_every_lengths.empty()) return eval_every_lengths;
  const std::vector<int> ev = EvalLengths();
  return {*std::max_element(ev.begin(), ev.end())};
}

std::vector<int> RecipeConfig::EvalLengths() const {
  if (!eval_lengths.empty()) return eval_lengths;
  const int N = train_max_length, M = eval_max_factor * train_max_length;
  std::vector<int> out;
  // Every length up to 2N, then a geometric grid (about 8 points per doubling) up to M.
  for (int n = 1; n <= std::min(M, 2 * N); ++n) out.push_back(n);
  double x = 2.0 * N;
  while (true) {
    x *= 1.0905077326652577;  // 2^(1/8)
    const int n = std::min(M, static_cast<int>(std::lround(x)));
    if (n > out.back()) out.push_back(n);
    if (n >= M) break;
  }
  return out;
}

AnalysisSelection RecipeConfig::Analyses() const {
  return SelectAnalyses(probe_analyses, probe_replay == 1, "probe.analyses");
}

std::vector<int> RecipeConfig::ProbeLengths() const {
  if (!probe_lengths.empty()) return probe_lengths;
  const std::vector<int> ev = EvalLengths();
  const int M = *std::max_element(ev.begin(), ev.end());
  std::vector<int> out;
  for (int f : {1, 2, 4, 8})
    if (f * train_max_length <= M) out.push_back(f * train_max_length);
  if (out.empty()) out.push_back(M);
  return out;
}

int RecipeConfig::PositionsMax() const {
  if (positions_max > 0) return positions_max;
  if (positions == "pose" || positions == "shift") return MaxSequenceTokens();
  return std::max(2048, 2 * MaxSequenceTokens());
}

bool IsPlainFileName(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name[0] == '-') return false;
  for (char ch : name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-' ||
          ch == '+'))
      return false;
  return true;
}

RecipeConfig::Variant ParseNamedVariant(const std::string& text) {
  auto trim = [](std::string s) {
    const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  const size_t colon = text.find(':');
  RecipeConfig::Variant v;
  v.value = trim(text.substr(0, colon));
  v.suffix = "-" + v.value;
  if (colon == std::string::npos) return v;
  const std::string rest = text.substr(colon + 1);
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t end = std::min(rest.find(';', start), rest.size());
    const std::string one = trim(rest.substr(start, end - start));
    if (!one.empty()) v.sets.push_back(one);
    start = end + 1;
  }
  return v;
}

std::vector<RecipeConfig::Variant> RecipeConfig::Variants() const {
  if (!variants.empty()) {
    std::vector<Variant> out;
    for (const auto& text : variants) out.push_back(ParseNamedVariant(text));
    return out;
  }
  if (sweep_key.empty()) return {Variant{}};
  const std::string last = sweep_key.substr(sweep_key.rfind('.') + 1);
  std::vector<Variant> out;
  for (const auto& v : sweep_values) {
    // The value becomes part of a file name: anything but letters, digits and . _ + - becomes _
    // (a path such as ../x must not lead outside the output directory).
    std::string suffix = "-" + last;
    for (char ch : v)
      suffix += std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' ||
                        ch == '-' || ch == '+'
                    ? ch
                    : '_';
    out.push_back({{sweep_key + "=" + v}, suffix, v});
  }
  return out;
}

bool SweepKeyChanges(const std::string& sweep_key, const std::string& encoding) {
  if (sweep_key.empty()) return false;
  const std::string prefix = "encoding_options.";
  if (sweep_key.rfind(prefix, 0) != 0) return true;
  const std::string rest = sweep_key.substr(prefix.size());
  return rest.substr(0, rest.find('.')) == encoding;
}

std::vector<std::string> RecipeConfig::ModelLabels() const {
  std::vector<std::string> out;
  const std::vector<Variant> all = Variants();
  for (size_t v = 0; v < all.size(); ++v)
    for (const auto& e : encodings) {
      if (SweepChanges(e))
        out.push_back(e + all[v].suffix);
      else if (v == 0)
        out.push_back(e);
    }
  return out;
}

PatternConfig RecipeConfig::PatternFor(int train_tokens) const {
  PatternConfig pc;
  pc.name = pattern;
  pc.window = pattern_window > 0 ? pattern_window : train_tokens;
  pc.global = pattern_global;
  pc.limit = pattern_limit;
  pc.group = pattern_group;
  pc.shift = pattern_shift;
  pc.memory = pattern_memory;
  pc.heads = model.n_heads;
  pc.segments = pattern_segments;
  pc.dilations = pattern_dilations;
  pc.ratio = pattern_ratio;
  return pc;
}

ModelConfig RecipeConfig::Model(int vocab) const {
  ModelConfig mc = model;
  mc.vocab = vocab;
  mc.pre_ln = norm == "pre";
  mc.knn.softmax_merge = knn_merge == "softmax";
  mc.knn.memory_gradient = knn_memory_gradient != 0;
  mc.landmark_remap = landmark_remap != 0;
  mc.causal = layout == "decoder";
  mc.precision = Precision();
  return mc;
}

PrecisionPolicy RecipeConfig::Precision() const {
  PrecisionPolicy p;
  p.matmul = ParsePrecision(precision, "model.precision");
  p.rotary = precision_rotary.empty() ? p.matmul
                                      : ParsePrecision(precision_rotary, "model.precision_rotary");
  p.logits = precision_logits.empty() ? p.matmul
                                      : ParsePrecision(precision_logits, "model.precision_logits");
  return p;
}

std::vector<RecipeConfig::LengthPhase> RecipeConfig::LengthSchedule() const {
  std::vector<LengthPhase> out;
  for (const std::string& e : length_schedule) {
    const auto colon = e.find(':');
    long step = -1, length = -1;
    bool whole = colon != std::string::npos;
    try {
      size_t used = 0;
      step = std::stol(e.substr(0, colon), &used);
      whole = whole && used == colon;
      length = std::stol(e.substr(colon + 1), &used);
      whole = whole && used == e.size() - colon - 1;
    } catch (const std::exception&) {
      whole = false;
    }
    LEXP_INPUT_CHECK(whole && length <= std::numeric_limits<int>::max(),
                     KeyLocation(source_name, "train.length_schedule") + ": '" + e +
                         "' is not STEP:LENGTH (two integers, e.g. \"0:4\")");
    out.push_back({step, static_cast<int>(length)});
  }
  return out;
}

RecipeConfig::TrainingPhase RecipeConfig::PhaseAt(long step,
                                                  const std::vector<LengthPhase>& schedule) const {
  TrainingPhase p{train_max_length, batch_size};
  for (const LengthPhase& phase : schedule) {
    if (phase.from_step > step) break;
    p.max_length = phase.max_length;
    // Tokens per step grow with the longest length: the batch shrinks as the length grows.
    p.batch_size = std::max(1, static_cast<int>(std::lround(static_cast<double>(batch_size) *
                                                            train_max_length / p.max_length)));
  }
  return p;
}

AdamWConfig RecipeConfig::Optimizer() const {
  AdamWConfig o = optimizer;
  o.total_steps = steps;
  return o;
}

int RecipeConfig::MaxPositionId() const {
  if (positions == "identity") return MaxSequenceTokens();
  if (positions == "shift") return PositionsMax() + MaxSequenceTokens();
  return std::max(MaxSequenceTokens(), PositionsMax());
}

Decoding RecipeConfig::DecodingFor(const Task& t) const {
  if (eval_decoding == "greedy") return Decoding::kGreedy;
  if (eval_decoding == "teacher_forced" || layout != "decoder" || !t.HasAnswer())
    return Decoding::kTeacherForced;
  return t.SourceDecoding();
}

int RecipeConfig::MaxSequenceTokens() const {
  // The longest requested length M gives the longest sequence (every task's sequences grow with
  // n): its layout's length, at least 4M + 1 (an answer of up to 2n, a separator and an end token;
  // the bound absolute tables are sized by). MQAR, whose answer slots are twice its 2n input,
  // needs more.
  int M = train_max_length;
  for (int n : EvalLengths()) M = std::max(M, n);
  for (int n : ProbeLengths()) M = std::max(M, n);
  int tokens = 4 * M + 1;
  const auto t = CreateTask(task, TaskOpts());
  const SequenceLayout lay(*t, layout == "encoder" ? Layout::kEncoder : Layout::kDecoder);
  try {
    tokens = std::max(tokens, lay.SequenceLengthFor(M));
    // Greedy decoding writes up to twice the answer after the prompt: longer sequences.
    if (layout == "decoder" && DecodingFor(*t) == Decoding::kGreedy)
      tokens = std::max(tokens, lay.GreedyCapacityFor(M));
  } catch (const InputError&) {
    // A length the task cannot make: the recipe check names it (ValidateOneTask).
  }
  return tokens;
}

}  // namespace lexp
