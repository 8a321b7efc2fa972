// The checks of a whole recipe, after its keys have been read: what no single key's type or range
// can say (tasks and seeds listed once, sweep values and their file names, lengths the task can
// make, encodings with the layout and pattern, positions and patterns with the lengths, capture
// sites of the model, files it reads). Every error names the key and the recipe.
#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

#include "experiments/core/analysis_selection.h"
#include "experiments/core/recipe.h"
#include "experiments/core/sequence_layout.h"
#include "experiments/core/steps_cap.h"
#include "experiments/tasks/task.h"
#include "fmt/format.h"
#include "nn/check.h"
#include "nn/model/capture_sites.h"
#include "pe/options.h"
#include "pe/registry.h"
#include "pe/rope.h"

namespace lexp {

void ValidateOneTask(const RecipeConfig& c);

void ValidateRecipe(const RecipeConfig& c) {
  std::set<std::string> tasks;
  for (const auto& t : c.Tasks())
    LEXP_INPUT_CHECK(tasks.insert(t).second,
                     KeyLocation(c.source_name, "task.names") + " lists '" + t + "' twice");
  std::set<int> seeds;
  for (int s : c.Seeds())
    LEXP_INPUT_CHECK(seeds.insert(s).second, KeyLocation(c.source_name, "run.seeds") + " lists " +
                                                 std::to_string(s) + " twice");
  LEXP_INPUT_CHECK(c.sweep_key.empty() == c.sweep_values.empty(),
                   KeyLocation(c.source_name, "run.sweep") +
                       " and run.sweep_values go together (a key and its values)");
  LEXP_INPUT_CHECK(c.sweep_key.rfind("run.", 0) != 0,
                   KeyLocation(c.source_name, "run.sweep") + " = \"" + c.sweep_key +
                       "\": run.* keys cannot be swept (use run.seeds for seeds)");
  LEXP_INPUT_CHECK(IsPlainFileName(c.name),
                   KeyLocation(c.source_name, "run.name") + " = \"" + c.name +
                       "\" must be a plain directory name (letters, digits, . _ + -, not . or "
                       "..); it names data/runs/<run.name>");
  std::set<std::string> values, suffixes;
  for (const auto& v : c.sweep_values)
    LEXP_INPUT_CHECK(values.insert(v).second,
                     KeyLocation(c.source_name, "run.sweep_values") + " lists '" + v + "' twice");
  LEXP_INPUT_CHECK(c.variants.empty() || c.sweep_key.empty(),
                   KeyLocation(c.source_name, "run.variants") +
                       " and run.sweep exclude each other (put the swept values in variants)");
  std::set<std::string> names;
  for (const auto& variant : c.Variants()) {
    if (c.variants.empty()) continue;
    LEXP_INPUT_CHECK(IsPlainFileName(variant.value),
                     KeyLocation(c.source_name, "run.variants") + ": variant name '" +
                         variant.value +
                         "' must be letters, digits and . _ + - (\"NAME: key=value; ...\"); it "
                         "names the run files <encoding>-<NAME>.h5");
    LEXP_INPUT_CHECK(
        names.insert(variant.value).second,
        KeyLocation(c.source_name, "run.variants") + " names '" + variant.value + "' twice");
    for (const auto& set : variant.sets) {
      LEXP_INPUT_CHECK(set.rfind("run.", 0) != 0,
                       KeyLocation(c.source_name, "run.variants") + ": variant '" + variant.value +
                           "' sets " + set + ": run.* keys cannot vary between models");
      const std::string key = set.substr(0, set.find_first_of(" =")), allowed =
          ": the task is the sweep's axis, not a model's (sweep tasks with task.names; evaluate a "
          "trained model on another task of its family with lexp eval --set task.name=...)";
      LEXP_INPUT_CHECK(key != "task.name" && key != "task.names",
                       KeyLocation(c.source_name, "run.variants") + ": variant '" + variant.value +
                           "' sets " + key + allowed);
    }
  }
  LEXP_INPUT_CHECK(c.sweep_key != "task.name" && c.sweep_key != "task.names",
                   KeyLocation(c.source_name, "run.sweep") + " = \"" + c.sweep_key +
                       "\": the task is swept by task.names (each task in <run dir>/<task>/), "
                       "not by run.sweep");
  for (const auto& variant : c.Variants())
    LEXP_INPUT_CHECK(suffixes.insert(variant.suffix).second,
                     KeyLocation(c.source_name, "run.sweep_values") +
                         ": two values give the file name "
                         "suffix '" +
                         variant.suffix +
                         "' (characters other than letters, digits "
                         "and . _ + - become _)");
  for (const auto& variant : c.Variants())
    for (const auto& t : c.Tasks()) {
      RecipeConfig one = c.For(t, c.Seeds()[0]);
      const std::string where = c.variants.empty() ? KeyLocation(c.source_name, "run.sweep") + ": "
                                                   : KeyLocation(c.source_name, "run.variants") +
                                                         ": variant '" + variant.value + "': ";
      try {
        ApplyOverrides(one, variant.sets);
      } catch (const InputError& e) {
        FailInput(where + e.what());
      }
      if (c.variants.empty()) {
        ValidateOneTask(one);
        continue;
      }
      try {
        ValidateOneTask(one);
      } catch (const InputError& e) {
        FailInput(where + e.what());
      }
    }
}

void ValidateOneTask(const RecipeConfig& c) {
  const std::string src = c.source_name;
  LEXP_INPUT_CHECK(c.model.d_model % c.model.n_heads == 0,
                   KeyLocation(src, "model.d_model") + " = " + std::to_string(c.model.d_model) +
                       " must be a multiple of model.n_heads = " + std::to_string(c.model.n_heads));
  LEXP_INPUT_CHECK(!c.encodings.empty(),
                   KeyLocation(src, "model.encodings") + " must name at least one encoding");
  // DA's backward recomputes its content logits itself, in fp32 (pe/da.cc): with bf16 logits its
  // gradient would not be the forward's.
  if (c.Precision().logits == Precision::kBf16)
    for (const auto& e : c.encodings)
      LEXP_INPUT_CHECK(e != "da", KeyLocation(src, "model.precision_logits") +
                                      ": encoding 'da' recomputes its logits in fp32 in its "
                                      "backward, so bf16 logits would give it another gradient "
                                      "than its forward's; set model.precision_logits = \"fp32\"");
  std::unique_ptr<Task> task;
  try {
    task = CreateTask(c.task, c.TaskOpts());
  } catch (const InputError& e) {
    FailInput(KeyLocation(src, "task.name") + ": " + e.what());
  }
  const std::string task_range = "task '" + c.task + "' supports lengths " +
                                 std::to_string(task->MinLength()) + ".." +
                                 std::to_string(task->MaxLength());
  LEXP_INPUT_CHECK(
      c.train_max_length >= task->MinLength() && c.train_max_length <= task->MaxLength(),
      KeyLocation(src, "train.max_length") + " = " + std::to_string(c.train_max_length) + ": " +
          task_range);
  // Evaluation samples the held-out part when the task has one (its longest document may be
  // shorter than training's).
  const std::unique_ptr<Task> held_out = task->HeldOut();
  const int eval_max = held_out ? held_out->MaxLength() : task->MaxLength();
  for (int n : c.EvalLengths())
    LEXP_INPUT_CHECK(n >= task->MinLength() && n <= eval_max,
                     KeyLocation(src, "eval") + ": length " + std::to_string(n) +
                         " is outside what " +
                         (held_out ? "the held-out part of task '" + c.task + "' supports: " +
                                         std::to_string(task->MinLength()) + ".." +
                                         std::to_string(eval_max)
                                   : task_range));
  {
    std::set<int> seen;
    for (int n : c.eval_lengths)
      LEXP_INPUT_CHECK(seen.insert(n).second, KeyLocation(src, "eval.lengths") + " lists " +
                                                  std::to_string(n) +
                                                  " twice; each length is evaluated once");
  }
  {
    const std::vector<int> ev = c.EvalLengths();
    for (int n : c.eval_every_lengths)
      LEXP_INPUT_CHECK(std::find(ev.begin(), ev.end(), n) != ev.end(),
                       KeyLocation(src, "train.eval_every_lengths") + ": length " +
                           std::to_string(n) +
                           " is not one of the evaluation lengths (eval.lengths, or the grid "
                           "up to eval.max_factor * train.max_length)");
  }
  LEXP_INPUT_CHECK(c.eval_decoding != "greedy" || (c.layout == "decoder" && task->HasAnswer()),
                   KeyLocation(src, "eval.decoding") +
                       " = \"greedy\" needs the decoder layout and a "
                       "task whose output is an answer to write ('" +
                       c.task + "'" +
                       (task->HasAnswer() ? " with model.layout = \"" + c.layout + "\""
                                          : " is a language-modelling source, a query stream or "
                                            "has padded outputs") +
                       "); use teacher_forced");
  // (Unknown encoding names are reported with the encodings' other checks below.)
  auto reads_digits = [](const std::string& name) {
    for (const auto& info : ListEncodings())
      if (info.name == name) return info.reads_digits;
    return false;
  };
  for (const auto& e : c.encodings)
    LEXP_INPUT_CHECK(!reads_digits(e) || task->DigitSymbols() > 0,
                     KeyLocation(src, "model.encodings") + ": encoding '" + e +
                         "' numbers the digits of each number, and task '" + c.task +
                         "' has no digits; use it with addition_reversed or "
                         "multiplication_reversed");
  for (const auto& e : c.encodings)
    LEXP_INPUT_CHECK(!reads_digits(e) || c.task_index_hints == 0,
                     KeyLocation(src, "model.encodings") + ": encoding '" + e +
                         "' numbers each run of digits, and task.index_hints = " +
                         std::to_string(c.task_index_hints) +
                         " puts a hint before every digit, so every run has one digit; use one "
                         "or the other");
  for (const auto& e : c.encodings)
    LEXP_INPUT_CHECK(!reads_digits(e) || c.positions == "identity",
                     KeyLocation(src, "model.positions") + " = \"" + c.positions +
                         "\" replaces the position ids that carry encoding '" + e +
                         "''s own training offset of the digits' places (its max_k or max_start); use "
                         "\"identity\"");
  const Layout layout = c.layout == "encoder" ? Layout::kEncoder : Layout::kDecoder;
  int train_tokens = 0, vocab = 0;
  try {
    SequenceLayout check(*task, layout);
    train_tokens = check.SequenceLengthFor(c.train_max_length);
    vocab = check.Vocab();
  } catch (const InputError& e) {
    FailInput(KeyLocation(src, "model.layout") + ": " + e.what());
  }
  for (const auto& e : c.encodings) {
    const auto opts = c.encoding_options.find(e);
    auto value = [&](const char* key) {
      return opts == c.encoding_options.end() || !opts->second.count(key) ? std::string()
                                                                           : opts->second.at(key);
    };
    // RoPE's own log-n: true, or auto under the rerope rules.
    const bool own = value("log_n").find("true") != std::string::npos ||
                     (value("scaling").find("rerope") != std::string::npos &&
                      value("log_n").find("false") == std::string::npos);
    LEXP_INPUT_CHECK(c.log_n == 0 || !own,
                     KeyLocation(src, "model.log_n") + " = 1 and encoding_options." + e +
                         ".log_n = true would apply the log-n temperature twice; set one");
  }
  LEXP_INPUT_CHECK(c.positions != "clamp" || c.positions_max > 0,
                   KeyLocation(src, "model.positions") +
                       " = \"clamp\" needs model.positions_max, the first position id training "
                       "did not show (positions >= it are read as positions_max - 1)");
  if (c.positions_max > 0) {
    int longest = c.train_max_length;
    for (int n : c.EvalLengths()) longest = std::max(longest, n);
    for (int n : c.ProbeLengths()) longest = std::max(longest, n);
    const SequenceLayout longest_layout(*task, layout);
    const int longest_tokens = c.DecodingFor(*task) == Decoding::kGreedy
                                   ? longest_layout.GreedyCapacityFor(longest)
                                   : longest_layout.SequenceLengthFor(longest);
    const std::string at =
        KeyLocation(src, "model.positions_max") + " = " + std::to_string(c.positions_max);
    // PoSE's target length must cover the training window it spreads over it.
    LEXP_INPUT_CHECK(c.positions != "pose" || c.positions_max >= train_tokens,
                     at + " is shorter than the longest training sequence (" +
                         std::to_string(train_tokens) +
                         " tokens); PoSE's target length must be at least that");
    // Randomized positions are distinct draws from [0, L): L must hold every sequence drawn.
    const int drawn = c.positions_at_eval == "sample" ? longest_tokens : train_tokens;
    LEXP_INPUT_CHECK(c.positions != "randomized" || c.positions_max >= drawn,
                     at + ": randomized positions draw " + std::to_string(drawn) +
                         " distinct positions from [0, positions_max) for the longest sequence " +
                         (c.positions_at_eval == "sample" ? "evaluated" : "trained") +
                         "; allowed: >= " + std::to_string(drawn) + " (0 = default)");
  }
  for (int n : c.ProbeLengths())
    LEXP_INPUT_CHECK(n >= task->MinLength() && n <= task->MaxLength(),
                     KeyLocation(src, "probe.lengths") + ": length " + std::to_string(n) +
                         " is outside what " + task_range);
  // A learned table too short for the longest sequence would fail only once the run is under way.
  for (const auto& e : c.encodings) {
    if (e != "learned" || c.positions != "identity") continue;
    const auto it = c.encoding_options.find(e);
    if (it == c.encoding_options.end() || !it->second.count("max_len")) continue;
    const auto& o = it->second;
    if (o.count("beyond") && o.at("beyond") == "clamp") continue;
    int longest = c.train_max_length;
    for (int n : c.EvalLengths()) longest = std::max(longest, n);
    for (int n : c.ProbeLengths()) longest = std::max(longest, n);
    const SequenceLayout at(*task, layout);
    const int tokens = c.DecodingFor(*task) == Decoding::kGreedy ? at.GreedyCapacityFor(longest)
                                                                 : at.SequenceLengthFor(longest);
    const int max_len = std::atoi(o.at("max_len").c_str());
    LEXP_INPUT_CHECK(
        max_len == 0 || max_len >= tokens,
        KeyLocation(src, "encoding_options.learned.max_len") + " = " + o.at("max_len") +
            " rows, but the longest sequence of this recipe has " + std::to_string(tokens) +
            " positions; allowed: 0 (as many as needed) or >= " + std::to_string(tokens) +
            ", or beyond = \"clamp\"");
  }
  MatchCaptureSites(c.Model(1), c.probe_capture, KeyLocation(src, "probe.capture"));
  SelectAnalyses(c.probe_analyses, c.probe_replay == 1, KeyLocation(src, "probe.analyses"));
  if (!c.length_schedule.empty()) {
    const std::string at = KeyLocation(src, "train.length_schedule");
    long last_step = -1;
    int last_length = 0;
    const std::vector<RecipeConfig::LengthPhase> schedule = c.LengthSchedule();
    for (size_t k = 0; k < schedule.size(); ++k) {
      const std::string& e = c.length_schedule[k];
      const long step = schedule[k].from_step;
      const int length = schedule[k].max_length;
      LEXP_INPUT_CHECK(last_step < 0 ? step == 0 : step > last_step && step < c.steps,
                       at + ": '" + e +
                           "': the first entry starts at step 0, the others at increasing steps "
                           "below train.steps = " +
                           std::to_string(c.steps));
      LEXP_INPUT_CHECK(length > last_length && length <= c.train_max_length,
                       at + ": '" + e + "': lengths increase up to train.max_length = " +
                           std::to_string(c.train_max_length));
      last_step = step;
      last_length = length;
    }
    LEXP_INPUT_CHECK(last_length == c.train_max_length,
                     at + ": the last length is " + std::to_string(last_length) +
                         "; it must be train.max_length = " + std::to_string(c.train_max_length) +
                         " (the length the run is trained to)");
  }
  LEXP_INPUT_CHECK(c.lora_rank > 0 || c.lora_base == "float",
                   KeyLocation(src, "train.lora_base") + " = \"" + c.lora_base +
                       "\" applies to LoRA's frozen matrices; train.lora_rank is 0 (no LoRA)");
  if (c.lora_rank > 0) {
    LEXP_INPUT_CHECK(!c.lora_targets.empty(), KeyLocation(src, "train.lora_targets") +
                                                  " is empty; allowed: q, k, v, o, mlp");
    std::set<std::string> seen_targets;
    for (const auto& t : c.lora_targets) {
      LEXP_INPUT_CHECK(t == "q" || t == "k" || t == "v" || t == "o" || t == "mlp",
                       KeyLocation(src, "train.lora_targets") + ": '" + t +
                           "' is not a LoRA target; allowed: q, k, v, o, mlp");
      LEXP_INPUT_CHECK(seen_targets.insert(t).second,
                       KeyLocation(src, "train.lora_targets") + " lists '" + t + "' twice");
    }
    for (const auto& t : c.lora_also_train)
      LEXP_INPUT_CHECK(t == "embeddings" || t == "norms",
                       KeyLocation(src, "train.lora_also_train") + ": '" + t +
                           "' is not a weight group; allowed: embeddings, norms");
    LEXP_INPUT_CHECK(c.lora_rank <= c.model.d_model,
                     KeyLocation(src, "train.lora_rank") + " = " + std::to_string(c.lora_rank) +
                         " exceeds model.d_model = " + std::to_string(c.model.d_model));
  }
  LEXP_INPUT_CHECK(c.probe_capture.empty() || c.probe_stored_samples > 0,
                   KeyLocation(src, "probe.capture") +
                       " stores sites of the stored probe sequences; probe.stored_samples is 0");
  LEXP_INPUT_CHECK(c.probe_stored_samples <= c.probe_samples,
                   KeyLocation(src, "probe.stored_samples") + " = " +
                       std::to_string(c.probe_stored_samples) + " exceeds probe.samples = " +
                       std::to_string(c.probe_samples) + " (only probed sequences can be stored)");
  LEXP_INPUT_CHECK(c.score_input == 0 || c.layout == "decoder",
                   KeyLocation(src, "train.score_input") +
                       " = 1 trains next-token prediction on the input, which the encoder layout "
                       "shows at once; model.layout must be \"decoder\"");
  if (c.model.landmark_block > 0) {
    const std::string where = KeyLocation(src, "model.landmark_block");
    LEXP_INPUT_CHECK(c.layout == "decoder",
                     where + ": landmark attention is causal; model.layout must be \"decoder\"");
    LEXP_INPUT_CHECK(c.pattern == "full", where +
                                              " is an attention of its own; model.pattern must "
                                              "be \"full\", not \"" +
                                              c.pattern + "\"");
    LEXP_INPUT_CHECK(!c.model.knn.Active(), where + " and model.knn_layer exclude each other");
    LEXP_INPUT_CHECK(c.positions == "identity",
                     where +
                         " numbers the inner sequence (tokens and landmarks) itself; "
                         "model.positions must be \"identity\"");
    LEXP_INPUT_CHECK(c.probe_capture.empty(),
                     where +
                         ": probe.capture is not available with landmarks (the probes keep "
                         "their attention maps and streams, over the real tokens)");
    if (c.model.landmark_top_k > 0 && c.landmark_remap != 0)
      for (const auto& e : c.encodings)
        LEXP_INPUT_CHECK(FindEncoding(e).cannot_remap.empty(),
                         KeyLocation(src, "model.landmark_remap") +
                             ": retrieved blocks are shown at another distance, which encoding '" +
                             e + "' cannot do: " + FindEncoding(e).cannot_remap +
                             " (set model.landmark_remap = 0)");
    for (const auto& e : c.encodings)
      LEXP_INPUT_CHECK(FindEncoding(e).sites.find("input embedding") == std::string::npos,
                       where + ": encoding '" + e +
                           "' adds positions to the token embeddings, which landmark rows do not "
                           "have; use an encoding that acts inside attention (rope, alibi, t5, "
                           "nope, ...)");
  }
  if (c.model.side.Active()) {
    const std::string where = KeyLocation(src, "model.longmem_layers");
    const int S = c.model.side.layers, L = c.model.n_layers;
    LEXP_INPUT_CHECK(S <= L && L % S == 0,
                     where + " = " + std::to_string(S) + ": model.n_layers = " + std::to_string(L) +
                         " must be a multiple (each side block stands for n_layers / "
                         "longmem_layers backbone blocks)");
    LEXP_INPUT_CHECK(c.layout == "decoder", where +
                                                ": LongMem is a decoder; model.layout must "
                                                "be \"decoder\"");
    LEXP_INPUT_CHECK(!c.init_from.empty(),
                     where +
                         " trains a side network beside a trained backbone; set "
                         "train.init_from to the backbone's run file");
    LEXP_INPUT_CHECK(!c.model.knn.Active(),
                     where +
                         " and model.knn_layer exclude each other (the side network's memory "
                         "is model.longmem_memory_layer)");
    LEXP_INPUT_CHECK(c.lora_rank == 0, where +
                                           " and train.lora_rank exclude each other (the side "
                                           "network is what trains)");
    LEXP_INPUT_CHECK(c.model.landmark_block == 0,
                     where + " and model.landmark_block exclude each other");
    LEXP_INPUT_CHECK(c.model.side.memory_layer < S,
                     KeyLocation(src, "model.longmem_memory_layer") + " = " +
                         std::to_string(c.model.side.memory_layer) +
                         " is not a side block; allowed: -1 (none) or 0.." + std::to_string(S - 1));
  }
  if (c.model.side.memory_layer >= 0) {
    const std::string where = KeyLocation(src, "model.longmem_memory_layer");
    LEXP_INPUT_CHECK(c.model.side.Active(), where +
                                                " is a side block's; set "
                                                "model.longmem_layers too");
    LEXP_INPUT_CHECK(c.pattern != "full",
                     where +
                         " reads the keys that model.pattern no longer shows; with pattern = "
                         "\"full\" there are none (use sliding_window)");
    LEXP_INPUT_CHECK(c.knn_memory_gradient == 0,
                     KeyLocation(src, "model.knn_memory_gradient") +
                         " = 1 cannot train LongMem's memory: it holds the frozen backbone's keys "
                         "and values");
  }
  for (const auto& info : ListEncodings()) {  // CoPE counts every key of a query's row
    const std::string& e = info.name, &why = info.needs_whole_rows;
    if (why.empty() || std::find(c.encodings.begin(), c.encodings.end(), e) == c.encodings.end())
      continue;
    std::string key, what;
    if (c.pattern == "recurrence") key = "model.pattern", what = " = \"recurrence\"";
    if (c.model.landmark_block > 0) key = "model.landmark_block", what = "";
    if (c.model.knn.Active()) key = "model.knn_layer", what = "";
    if (c.model.side.Active()) key = "model.longmem_layers", what = "";
    LEXP_INPUT_CHECK(key.empty(), fmt::format("{}{} splits or extends the keys a query sees, which "
                                              "encoding '{}' cannot follow: {}",
                                              KeyLocation(src, key), what, e, why));
  }
  const bool any_memory = c.model.knn.Active() || c.model.side.memory_layer >= 0;
  LEXP_INPUT_CHECK(c.model.knn.chunk == 1 || any_memory,
                   KeyLocation(src, "model.knn_chunk") + " = " + std::to_string(c.model.knn.chunk) +
                       " groups a memory's rows; set model.knn_layer or "
                       "model.longmem_memory_layer too");
  LEXP_INPUT_CHECK(c.model.knn.chunk <= c.model.knn.top_k,
                   KeyLocation(src, "model.knn_chunk") + " = " + std::to_string(c.model.knn.chunk) +
                       " exceeds model.knn_top_k = " + std::to_string(c.model.knn.top_k) +
                       " (the rows retrieved: whole chunks, top_k / chunk of them)");
  LEXP_INPUT_CHECK(c.model.knn.crossbatch == 1 || c.model.knn.Active(),
                   KeyLocation(src, "model.knn_crossbatch") + " = " +
                       std::to_string(c.model.knn.crossbatch) +
                       " mixes the memories of a memory layer; set model.knn_layer too");
  LEXP_INPUT_CHECK(c.knn_memory_gradient == 0 || c.model.knn.Active(),
                   KeyLocation(src, "model.knn_memory_gradient") +
                       " = 1 trains a memory layer's memory; set model.knn_layer too");
  if (c.model.knn.Active()) {
    LEXP_INPUT_CHECK(c.model.knn.layer < c.model.n_layers,
                     KeyLocation(src, "model.knn_layer") + " = " +
                         std::to_string(c.model.knn.layer) +
                         " is not a layer; allowed: -1 (none) "
                         "or 0.." +
                         std::to_string(c.model.n_layers - 1));
    LEXP_INPUT_CHECK(c.pattern != "full",
                     KeyLocation(src, "model.knn_layer") +
                         " reads the keys that model.pattern no longer shows; with pattern = "
                         "\"full\" there are none (use sliding_window or recurrence)");
  }
  if (c.pattern != "full") {
    LEXP_INPUT_CHECK(c.layout == "decoder",
                     KeyLocation(src, "model.pattern") + " = \"" + c.pattern +
                         "\" is a causal pattern; model.layout must be \"decoder\"");
    try {
      CreatePattern(c.PatternFor(train_tokens));
    } catch (const InputError& err) {
      FailInput(KeyLocation(src, "model.pattern") + ": " + err.what());
    }
    LEXP_INPUT_CHECK(c.pattern_limit <= c.MaxSequenceTokens(),
                     KeyLocation(src, "model.pattern_limit") + " = " +
                         std::to_string(c.pattern_limit) +
                         " lies beyond the longest sequence of this recipe (" +
                         std::to_string(c.MaxSequenceTokens()) +
                         " tokens), farther than any key can be; allowed: 0.." +
                         std::to_string(c.MaxSequenceTokens()) + " (0 = the window)");
    LEXP_INPUT_CHECK(c.pattern != "shifted_sparse" || c.pattern_when != "eval",
                     KeyLocation(src, "model.pattern_when") +
                         " is \"eval\", but shifted_sparse (S2-Attn) is a "
                         "training-time pattern; set pattern_when = \"train\" (or \"always\")");
    if (PatternRemapsDistances(c.pattern)) {
      std::string can;  // the encodings that can, from the registry
      for (const auto& info : ListEncodings())
        if (info.cannot_remap.empty()) can += (can.empty() ? "" : ", ") + info.name;
      for (const auto& e : c.encodings)
        LEXP_INPUT_CHECK(FindEncoding(e).cannot_remap.empty(),
                         KeyLocation(src, "model.pattern") + " = \"" + c.pattern +
                             "\" shows some keys at another distance than their own, which '" + e +
                             "' cannot do: " + FindEncoding(e).cannot_remap +
                             " (the pattern would be a mask only); encodings that can: " + can);
      for (const auto& e : c.encodings) {  // LongRoPE's n-hat makes a logit depend on positions
        const auto it = c.encoding_options.find(e);
        LEXP_INPUT_CHECK(
            it == c.encoding_options.end() || !it->second.count("start_tokens") ||
                it->second.at("start_tokens") == "0",
            KeyLocation(src, "model.pattern") + " = \"" + c.pattern +
                "\" shows some keys at another distance than their own, and encoding_options." +
                e + ".start_tokens rotates the first positions by other frequencies, so a logit "
                "is not a function of the distance alone; use start_tokens = 0 with this pattern");
      }
    }
  } else {
    LEXP_INPUT_CHECK(c.pattern_when == "eval", KeyLocation(src, "model.pattern_when") +
                                                   " is set but model.pattern is \"full\"");
  }
  std::set<std::string> seen;
  for (const auto& e : c.encodings) {
    LEXP_INPUT_CHECK(seen.insert(e).second,
                     KeyLocation(src, "model.encodings") + " lists '" + e + "' twice");
    try {
      FindEncoding(e);
    } catch (const InputError& err) {
      FailInput(KeyLocation(src, "model.encodings") + ": " + err.what());
    }
    try {
      // Building the encoding checks option names and values (ranges, allowed words).
      auto it = c.encoding_options.find(e);
      CreateEncoding<float>(
          e, it == c.encoding_options.end() ? std::map<std::string, std::string>{} : it->second,
          EncodingShape{c.model.d_model, c.model.n_heads, c.model.n_layers, c.layout == "decoder",
                        c.MaxPositionId(), train_tokens, vocab, task->DigitSymbols()});
    } catch (const InputError& err) {
      FailInput(KeyLocation(src, "encoding_options." + e) + ": " + err.what());
    }
  }
  for (const auto& [e, _] : c.encoding_options)
    LEXP_INPUT_CHECK(seen.count(e),
                     KeyLocation(src, "encoding_options." + e) +
                         " configures an encoding that model.encodings does not train");
  // The capped recipe is the one that trains: its shrunk schedule must hold too.
  if (c.steps_cap > 0 && c.steps > c.steps_cap) {
    try {
      ValidateOneTask(WithStepsCap(c));
    } catch (const InputError& err) {
      FailInput(KeyLocation(src, "train.steps_cap") + " = " + std::to_string(c.steps_cap) +
                " shrinks train.steps = " + std::to_string(c.steps) + ": " + err.what());
    }
  }
}

}  // namespace lexp
