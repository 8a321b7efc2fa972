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

std::vector<Field> Fields(RecipeConfig& c) {
  const double kBig = 1e9;
  return {
      {"run.name", "name of the run directory under the output folder", &c.name},
      {"run.seed", "seed of every random stream (init, data, positions, eval)", &c.seed, 0, kBig},
      {"run.seeds",
       "seed sweep: one model per encoding and seed, files <encoding>-seed<s>.h5 "
       "(empty = run.seed only)",
       &c.seeds, 0, kBig},
      {"run.sweep",
       "key sweep: a recipe key set to each of run.sweep_values in turn, e.g. "
       "encoding_options.rope.base; files <encoding>-<key><value>.h5",
       &c.sweep_key},
      {"run.sweep_values", "the values of run.sweep (TOML syntax, as --set takes them)",
       &c.sweep_values},
      {"run.variants",
       "named variants instead of run.sweep, each \"NAME: key=value; key=value\" (overrides as "
       "--set takes them; NAME alone: the recipe as it is); every encoding is trained once per "
       "variant, named <encoding>-<NAME>",
       &c.variants},
      {"run.threads", "worker threads (0 = all cores); results do not depend on it", &c.threads, 0,
       1024},
      {"run.jobs",
       "models of the sweep trained at once, each with its share of the threads (the NoPE runs "
       "first, as the JS references of the others); 0 = one model per thread, as many as memory "
       "holds; run files do not depend on it",
       &c.jobs, 0, 64},
      {"task.name", "synthetic task (lexp list tasks)", &c.task},
      {"task.names",
       "task sweep: every task of the list, each in <run dir>/<task>/ (empty = task.name)",
       &c.tasks},
      {"task.scratchpad",
       "scratchpad before the answer (Kazemnejad et al. 2023; addition, summation, parity, sort, "
       "lego): "
       "components among i (input), c (computation), o (output), v (variable update), r (remaining "
       "input), "
       "in that order, e.g. \"icovr\"; trained on, only the answer graded (\"\" = none)",
       &c.task_scratchpad},
      {"task.corpus",
       "text_lm's text: fortunes (Debian's fortune files, records of a few hundred characters), "
       "kjv (the King James Bible by book, package bible-kjv), python (the Python standard "
       "library's sources by file); held out by record or whole document (\"\" = fortunes)",
       &c.task_corpus},
      {"task.vocab", "task alphabet size where the task has one (0 = task default)", &c.task_vocab,
       0, 1e6},
      {"task.index_hints",
       "index hints of the arithmetic tasks (Zhou et al. 2024): every digit written after a hint "
       "symbol naming its significance, hints consecutive from a random start in the set of this "
       "many symbols; the longest number has at most this many digits (0 = none)",
       &c.task_index_hints, 0, 100000},
      {"task.copy_tokens",
       "selective_copy: tokens to copy hidden among blanks in every input, the same at every "
       "length, so lengths start at this value and longer inputs are sparser (0 = 8)",
       &c.task_copy_tokens, 0, 100000},
      {"task.needles",
       "niah_multikey, niah_multivalue, niah_multiquery: needles in every input (RULER's "
       "num_needle_k / num_needle_v / num_needle_q), 2..16; 0 = 4",
       &c.task_needles, 0, 16},
      {"task.hops",
       "variable_tracking: assignments per chain after the first (RULER's num_hops), 1..7; 0 = 4",
       &c.task_hops, 0, 7},
      {"task.padding",
       "operands of the arithmetic tasks: none (each its own digits) or zeros (the shorter "
       "zero-padded to the longer one's digits, as Cho et al. 2024 and Zhou et al. 2024 write them)",
       &c.task_padding,
       0,
       0,
       {"none", "zeros"}},
      {"model.layout",
       "decoder (causal, answer after a separator) or encoder (bidirectional, output slots)",
       &c.layout,
       0,
       0,
       {"decoder", "encoder"}},
      {"model.norm", "LayerNorm placement", &c.norm, 0, 0, {"pre", "post"}},
      {"model.d_model", "model width C", &c.model.d_model, 2, 65536},
      {"model.n_heads", "attention heads H (C must be a multiple)", &c.model.n_heads, 1, 1024},
      {"model.n_layers", "transformer blocks L", &c.model.n_layers, 1, 1024},
      {"model.d_ff", "MLP width (0 = 4 * d_model)", &c.model.d_ff, 0, 1 << 20},
      {"model.precision",
       "numerical precision of the products of the linear layers and of attention, forward and "
       "backward: fp32, or bf16 (bf16 operands, fp32 accumulation and output, fp32 weights and "
       "optimizer state; native on CPUs with AVX512_BF16, emulated elsewhere); products an "
       "encoding or a memory forms itself stay fp32 (nn/precision.h)",
       &c.precision,
       0,
       0,
       {"fp32", "bf16"}},
      {"model.precision_rotary",
       "precision of RoPE's and xPos's rotary transform (inputs, cos/sin tables, products and sums "
       "rounded to bf16 in bf16), as Wang et al. 2024 study it (\"\" = model.precision)",
       &c.precision_rotary,
       0,
       0,
       {"", "fp32", "bf16"}},
      {"model.precision_logits",
       "precision of the attention logits' product q k^T (\"\" = model.precision)",
       &c.precision_logits,
       0,
       0,
       {"", "fp32", "bf16"}},
      {"model.landmark_block",
       "landmark attention (Mohtashami & Jaggi 2023): a landmark token after every this many "
       "tokens and a grouped softmax in every layer (0 = none)",
       &c.model.landmark_block, 0, 1 << 20},
      {"model.landmark_top_k",
       "landmark attention at evaluation: each query keeps its top-k blocks by landmark logit "
       "(0 = every block)",
       &c.model.landmark_top_k, 0, 1 << 20},
      {"model.landmark_remap",
       "landmark attention with landmark_top_k > 0: 1 shows retrieved blocks just before the "
       "query's block, as the paper places them; 0 at their true distances",
       &c.landmark_remap, 0, 1},
      {"model.knn_layer",
       "the layer (0-based) whose attention also reads a retrieved memory of the keys its pattern "
       "no longer shows (Memorizing Transformer, Wu et al. 2022; -1 = none)",
       &c.model.knn.layer, -1, 1023},
      {"model.knn_top_k", "memory keys retrieved per query and head (exact top-k by q.k)",
       &c.model.knn.top_k, 1, 4096},
      {"model.knn_memory",
       "rows before the pattern's first key held in the memory (0 = every earlier row)",
       &c.model.knn.memory, 0, 1 << 24},
      {"model.knn_merge",
       "gate: a learned per-head gate between memory and local attention (Memorizing "
       "Transformer); softmax: one softmax over both (Focused Transformer, Tworkowski et al. 2023)",
       &c.knn_merge,
       0,
       0,
       {"gate", "softmax"}},
      {"model.knn_crossbatch",
       "training only: each query also retrieves from the memories of the d - 1 other sequences of "
       "its group of d in the batch, as negatives (the Focused Transformer's crossbatch; 1 = its "
       "own memory only, as at evaluation)",
       &c.model.knn.crossbatch, 1, 4096},
      {"model.knn_chunk",
       "memory rows retrieved together, each chunk scored by its mean key (LongMem: 4; 1 = every "
       "row alone)",
       &c.model.knn.chunk, 1, 4096},
      {"model.longmem_layers",
       "LongMem (Wang et al. 2023): a side network of this many blocks beside the model, whose "
       "n_layers blocks become a frozen backbone read from train.init_from; side block i starts "
       "as backbone block r i + r - 1 (r = n_layers / longmem_layers) and adds what its r "
       "backbone blocks added to the residual stream; only the side network trains (0 = none)",
       &c.model.side.layers, 0, 1024},
      {"model.longmem_memory_layer",
       "LongMem: the side block (0-based) whose attention also reads a retrieved memory of the "
       "keys and values of the backbone block it copies, which the pattern no longer shows, with "
       "model.knn_top_k, knn_memory, knn_chunk, knn_merge (-1 = none: the side network alone)",
       &c.model.side.memory_layer, -1, 1023},
      {"model.knn_memory_gradient",
       "1: in training, the memory's keys and values get their gradient (the Focused "
       "Transformer trains its memory layer differentiably); 0: read-only, as a stored memory",
       &c.knn_memory_gradient, 0, 1},
      {"model.encodings", "one model is trained per encoding (lexp list encodings)", &c.encodings},
      {"model.positions",
       "position scheme wrapping every encoding: identity, randomized (Ruoss et al.), "
       "pose (Zhu et al.), shift (SHAPE, Kiyono et al.: positions k..k+T-1 with k ~ "
       "U{0..positions_max} in training), clamp (at evaluation only: positions >= positions_max "
       "read as positions_max - 1, a remap of unseen absolute positions; lexp diagnose)",
       &c.positions,
       0,
       0,
       {"identity", "randomized", "pose", "shift", "clamp"}},
      {"model.positions_max",
       "randomized: positions drawn from [0, L); pose: target length; shift: largest k; clamp: "
       "the first position id not seen in training (required) "
       "(0 = default: max(2048, 2x the longest sequence) / the longest sequence / the longest "
       "sequence)",
       &c.positions_max, 0, 1 << 24},
      {"model.log_n",
       "1: the log-n attention temperature on any encoding: the content logit q.k of query i "
       "times max(1, ln(i + 1) / ln L), L the longest training sequence (1 within the training "
       "lengths; Chiang & Cholak 2022); RoPE's own is encoding_options.rope.log_n",
       &c.log_n, 0, 1},
      {"model.positions_at_eval",
       "randomized at evaluation: sample (as the reference code) or identity",
       &c.positions_at_eval,
       0,
       0,
       {"sample", "identity"}},
      {"model.pattern",
       "attention pattern: full, sliding_window, bca (Sun et al.), lambda (LM-Infinite), "
       "dilated (LongNet), shifted_sparse (LongLoRA S2-Attn), sinks (StreamingLLM), recurrence "
       "(Transformer-XL's segments with a cached memory), self_extend (Self-Extend's grouped "
       "distances beyond a neighbour window), string (STRING's far distances shifted down), anchor "
       "(AnchorAttention: token 0 shared by packed documents of pattern_window tokens)",
       &c.pattern, 0, 0, PatternNames()},
      {"model.pattern_window",
       "sliding window w / bca block l / lambda n_local / sinks recent window / recurrence "
       "segment length / anchor document length (0 = the longest training sequence)",
       &c.pattern_window, 0, 1 << 24},
      {"model.pattern_memory",
       "recurrence: memory length M, the keys before its segment a query sees (0 = the segment "
       "length)",
       &c.pattern_memory, 0, 1 << 24},
      {"model.pattern_global",
       "lambda: n_global first tokens always visible; sinks: n_sink first tokens kept",
       &c.pattern_global, 0, 1 << 24},
      {"model.pattern_segments", "dilated: segment lengths w_a (tokens)", &c.pattern_segments, 1,
       1 << 24},
      {"model.pattern_dilations", "dilated: dilations r_a, one per segment length, one of them 1",
       &c.pattern_dilations, 1, 1 << 24},
      {"model.pattern_ratio", "shifted_sparse: group size / sequence length (LongLoRA: 1/4)",
       &c.pattern_ratio, 0.001, 1},
      {"model.pattern_limit", "lambda: distance at which global tokens are seen (0 = the window)",
       &c.pattern_limit, 0, 1 << 24},
      {"model.pattern_group",
       "self_extend: group size G; keys at least the neighbour window (pattern_window) away are "
       "seen at floor(p_i/G) - floor(p_j/G) + W - floor(W/G) (Jin et al. 2024); 1 = plain distances",
       &c.pattern_group, 0, 1 << 24},
      {"model.pattern_shift",
       "string: shift S; keys S or more tokens away are seen at d - S + W, W = pattern_window "
       "(An et al. 2024); S > W required",
       &c.pattern_shift, 0, 1 << 24},
      {"model.pattern_when",
       "apply the pattern at evaluation only (eval), in training only (train) or "
       "always",
       &c.pattern_when,
       0,
       0,
       {"eval", "train", "always"}},
      {"train.max_length", "training lengths are uniform in 1..max_length (N)", &c.train_max_length,
       1, 1 << 20},
      {"train.steps", "optimizer steps", &c.steps, 1, kBig},
      {"train.steps_cap",
       "a pipeline check, not a result: train at most this many steps, a longer recipe's "
       "warmup_steps, log_every, checkpoint_every, eval_every and length schedule shrunk in the "
       "same proportion (the run file records the shrunk values; 0 = no cap; lexp reproduce's "
       "smoke budget sets 30)",
       &c.steps_cap, 0, kBig},
      {"train.batch_size", "sequences per step", &c.batch_size, 1, 1 << 20},
      {"train.lr", "peak learning rate of AdamW", &c.optimizer.lr, 1e-8, 10},
      {"train.weight_decay", "decoupled weight decay", &c.optimizer.weight_decay, 0, 10},
      {"train.clip_norm", "global gradient-norm clip (0 = off)", &c.optimizer.clip_norm, 0, 1e6},
      {"train.warmup_steps", "linear warm-up steps", &c.optimizer.warmup_steps, 0, kBig},
      {"train.min_lr_ratio", "cosine decay ends at min_lr_ratio * lr", &c.optimizer.min_lr_ratio, 0,
       1},
      {"train.log_every", "progress line every this many steps", &c.log_every, 1, kBig},
      {"train.length_schedule",
       "GrowLength (Jin et al. 2023): \"STEP:LENGTH\" entries, the longest training length from "
       "that step on (first at 0, last = train.max_length); each phase trains batch_size * "
       "max_length / LENGTH sequences, the tokens per step of the last (empty = off)",
       &c.length_schedule},
      {"train.lora_rank",
       "LoRA (Hu et al. 2021): 0 trains every weight; r > 0 freezes the model and trains rank-r "
       "adapters W = W0 + (alpha / r) A B of train.lora_targets (with train.init_from: "
       "fine-tuning a trained run)",
       &c.lora_rank, 0, 4096},
      {"train.lora_alpha", "LoRA scale numerator alpha (0 = the rank: a scale of 1)", &c.lora_alpha,
       0, 1e6},
      {"train.lora_targets",
       "weights LoRA adapts in every layer: q, k, v, o (attention projections), mlp (both MLP "
       "matrices); Hu et al.'s main setting is q, v",
       &c.lora_targets},
      {"train.lora_base",
       "with LoRA, the frozen layer matrices: float, or nf4 (QLoRA's 4-bit NormalFloat, blocks "
       "of 64 with their absmax, as LongQLoRA; the numerics only, the floats are kept)",
       &c.lora_base,
       0,
       0,
       {"float", "nf4"}},
      {"train.lora_also_train",
       "with LoRA, model weights trained beside the adapters: embeddings (token embedding), "
       "norms (every LayerNorm); LongLoRA (Chen et al. 2023) trains both, with model.pattern = "
       "shifted_sparse and pattern_when = train",
       &c.lora_also_train},
      {"train.init_from",
       "fine-tuning: start from the trained weights of this completed run file (path relative to "
       "the working directory; empty = random initialisation); {seed} in it is the model's seed, "
       "so that each seed fine-tunes its own pre-training (rope-seed{seed}.h5)",
       &c.init_from},
      {"train.checkpoint_every", "checkpoint every this many steps (resume point)",
       &c.checkpoint_every, 1, kBig},
      {"train.score_input",
       "1: also train on the input tokens, each predicting the next (decoder layout; a language "
       "model of the task's prompts, as lexp compress takes one); evaluation grades the answer "
       "only either way",
       &c.score_input, 0, 1},
      {"train.eval_every",
       "evaluate train.eval_every_lengths before training and every this many steps, into "
       "/train/eval_history (0 = only the end-of-training evaluation)",
       &c.eval_every, 0, kBig},
      {"train.eval_every_lengths",
       "lengths evaluated during training, each one of the evaluation lengths (empty = the "
       "longest)",
       &c.eval_every_lengths},
      {"eval.lengths", "explicit evaluation lengths (empty = grid up to max_factor * N)",
       &c.eval_lengths},
      {"eval.max_factor", "the default grid reaches max_factor * N", &c.eval_max_factor, 1, 4096},
      {"eval.samples", "sequences evaluated per length", &c.eval_samples, 1, 1 << 24},
      {"eval.depths",
       "depths (percent of the input before the hidden item) evaluated at every length, "
       "for tasks with a depth axis (passkey)",
       &c.eval_depths, 0, 100},
      {"eval.batch_size", "sequences per evaluation batch", &c.eval_batch_size, 1, 1 << 20},
      {"eval.decoding",
       "teacher_forced (each answer token predicted from the true ones before it), greedy (the "
       "model writes its answer until its end token or twice the answer's length; exact match "
       "needs the answer and the end) or task (the protocol of the task's source: greedy for "
       "Kazemnejad et al.'s tasks and passkey, teacher forcing otherwise; lexp list tasks)",
       &c.eval_decoding,
       0,
       0,
       {"task", "teacher_forced", "greedy"}},
      {"probe.lengths", "lengths at which attention is captured (empty = N, 2N, 4N, 8N)",
       &c.probe_lengths},
      {"probe.samples", "probe sequences per length used by the analysis", &c.probe_samples, 1,
       4096},
      {"probe.stored_samples", "probe sequences whose full logits/probabilities are stored",
       &c.probe_stored_samples, 0, 4096},
      {"probe.replay",
       "1: the end-of-training analysis also replays the model (entropy under log-n/YaRN/Lambda, "
       "rotary pairs and ablation); 0: only the stored-attention metrics (lexp analyze always "
       "replays)",
       &c.probe_replay, 0, 1},
      {"probe.analyses",
       "the analyses the end-of-training analysis writes: \"all\" (every one that applies; with "
       "probe.replay = 0 the geometry alone), \"none\", or a list of geometry, expectation, "
       "entropy_variants, position_scores, position_probes, receptive_field, rotary, "
       "position_shift (lexp "
       "analyze --help says what each is; lexp analyze FILE writes all of them later)",
       &c.probe_analyses},
      {"probe.capture",
       "capture sites stored for the probe.stored_samples sequences at every probe length, under "
       "/probe/length_<n>/<site>: names or globs such as \"layer*.attn.q\" (lexp list sites)",
       &c.probe_capture},
  };
}

std::string FieldTypeName(const Field& f) {
  switch (f.value.index()) {
    case 0:
      return "integer";
    case 1:
      return "number";
    case 2:
      return "string";
    case 3:
      return "list of integers";
    default:
      return "list of strings";
  }
}

// A TOML basic string of s: quotes, backslashes and control characters escaped.
std::string TomlQuoted(const std::string& s) {
  std::string q = "\"";
  for (const char ch : s) {
    switch (ch) {
      case '"': q += "\\\""; break;
      case '\\': q += "\\\\"; break;
      case '\n': q += "\\n"; break;
      case '\t': q += "\\t"; break;
      case '\r': q += "\\r"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
          q += fmt::format("\\u{:04X}", static_cast<unsigned char>(ch));
        else
          q += ch;
    }
  }
  return q + "\"";
}

std::string FieldValueString(const Field& f) {
  std::ostringstream s;
  std::visit(
      [&](auto* p) {
        using T = std::decay_t<decltype(*p)>;
        if constexpr (std::is_same_v<T, std::string>) {
          s << TomlQuoted(*p);
        } else if constexpr (std::is_same_v<T, std::vector<int>> ||
                             std::is_same_v<T, std::vector<std::string>>) {
          s << "[";
          for (size_t i = 0; i < p->size(); ++i) {
            if (i) s << ", ";
            if constexpr (std::is_same_v<T, std::vector<std::string>>)
              s << TomlQuoted((*p)[i]);
            else
              s << (*p)[i];
          }
          s << "]";
        } else {
          s << *p;
        }
      },
      f.value);
  return s.str();
}

std::string KeyLocation(const std::string& source, const std::string& key) {
  if (source == "--set") return "--set " + key;
  return "recipe '" + source + "': " + key;
}

namespace {

std::string Allowed(const Field& f) {
  if (!f.allowed.empty()) {
    std::string s;
    for (const auto& a : f.allowed) s += (s.empty() ? "" : ", ") + ("\"" + a + "\"");
    return "one of " + s;
  }
  std::string s = FieldTypeName(f);
  if (f.min < f.max) {
    std::ostringstream r;
    r << " in [" << f.min << ", " << f.max << "]";
    s += r.str();
  }
  return s;
}

std::string NodeText(const toml::node& n) {
  std::ostringstream s;
  if (n.is_string())
    s << '"' << n.value<std::string>().value_or("") << '"';
  else if (n.is_table())
    s << "a table";
  else if (n.is_array())
    s << "an array";
  else if (n.is_boolean())
    s << (n.value<bool>().value_or(false) ? "true" : "false");
  else if (n.is_integer())
    s << n.value<int64_t>().value_or(0);
  else if (n.is_floating_point())
    s << n.value<double>().value_or(0);
  else
    s << "a value";
  return s.str();
}

void CheckRange(const Field& f, double v, const std::string& source) {
  // Written so that NaN (every comparison false) is out of range too.
  if (!std::isfinite(v) || (f.min < f.max && !(v >= f.min && v <= f.max))) {
    std::ostringstream s;
    s << KeyLocation(source, f.key) << " = " << v << " is out of range; allowed: " << Allowed(f);
    FailInput(s.str());
  }
}

// Assigns a TOML node to a field, with a clear error on a wrong type or value.
void Assign(const Field& f, const toml::node& n, const std::string& source) {
  const std::string bad = KeyLocation(source, f.key) + " = " + NodeText(n) +
                          " has the wrong type; allowed: " + Allowed(f);
  std::visit(
      [&](auto* p) {
        using T = std::decay_t<decltype(*p)>;
        if constexpr (std::is_same_v<T, int>) {
          auto v = n.value_exact<int64_t>();
          if (!v && n.is_floating_point()) {
            const double d = *n.value<double>();
            if (d == static_cast<double>(static_cast<int64_t>(d))) v = static_cast<int64_t>(d);
          }
          if (!v) FailInput(bad);
          CheckRange(f, static_cast<double>(*v), source);
          *p = static_cast<int>(*v);
        } else if constexpr (std::is_same_v<T, double>) {
          auto v = n.value<double>();
          if (!v || n.is_boolean() || n.is_string()) FailInput(bad);
          CheckRange(f, *v, source);
          *p = *v;
        } else if constexpr (std::is_same_v<T, std::string>) {
          auto v = n.value_exact<std::string>();
          if (!v) FailInput(bad);
          if (!f.allowed.empty() &&
              std::find(f.allowed.begin(), f.allowed.end(), *v) == f.allowed.end())
            FailInput(KeyLocation(source, f.key) + " = \"" + *v +
                      "\" is not allowed; allowed: " + Allowed(f));
          *p = *v;
        } else if constexpr (std::is_same_v<T, std::vector<int>>) {
          const toml::array* a = n.as_array();
          if (!a) FailInput(bad);
          p->clear();
          for (const auto& e : *a) {
            auto v = e.value_exact<int64_t>();
            // Lists hold positive integers unless the field gives its own range.
            const double lo = f.min < f.max ? f.min : 1, hi = f.min < f.max ? f.max : 1e18;
            if (!v || *v < lo || *v > hi)
              FailInput(KeyLocation(source, f.key) + " must hold integers in [" +
                        fmt::format("{:g}", lo) + ", " + fmt::format("{:g}", hi) + "], got " +
                        NodeText(e));
            p->push_back(static_cast<int>(*v));
          }
        } else {
          const toml::array* a = n.as_array();
          if (!a) FailInput(bad);
          p->clear();
          for (const auto& e : *a) {
            auto v = e.value_exact<std::string>();
            // run.sweep_values are override texts: numbers and booleans are taken as written.
            if (!v && f.key == "run.sweep_values" && (e.is_number() || e.is_boolean())) {
              p->push_back(NodeText(e));
              continue;
            }
            if (!v)
              FailInput(KeyLocation(source, f.key) + " must hold strings, got " + NodeText(e));
            p->push_back(*v);
          }
        }
      },
      f.value);
}

std::string OptionValueText(const toml::node& n) {
  if (n.is_string()) return *n.value<std::string>();
  if (n.is_boolean()) return *n.value<bool>() ? "true" : "false";
  if (n.is_integer()) return std::to_string(*n.value<int64_t>());
  if (n.is_floating_point()) {
    std::ostringstream s;
    s.precision(17);
    s << *n.value<double>();
    return s.str();
  }
  if (const toml::array* a = n.as_array()) {  // a list option (rope's long_factors): "x, y, z"
    std::string joined;
    for (const toml::node& e : *a) {
      LEXP_INPUT_CHECK(e.is_value(), "a list option holds numbers, strings or booleans");
      joined += (joined.empty() ? "" : ", ") + OptionValueText(e);
    }
    return joined;
  }
  return "";
}

void LoadEncodingOptions(RecipeConfig& c, const toml::table& t, const std::string& source) {
  for (const auto& [enc_key, node] : t) {
    const std::string enc(enc_key.str());
    const toml::table* opts = node.as_table();
    LEXP_INPUT_CHECK(opts != nullptr, KeyLocation(source, "encoding_options." + enc) +
                                          " must be a table of options");
    FindEncoding(enc);        // unknown encoding names are errors
    c.encoding_options[enc];  // an empty table still names the encoding
    for (const auto& [k, v] : *opts) {
      const std::string key = "encoding_options." + enc + "." + std::string(k.str());
      LEXP_INPUT_CHECK(v.is_value() || v.is_array(),
                       KeyLocation(source, key) +
                           " must be a number, string, boolean or a list of them");
      c.encoding_options[enc][std::string(k.str())] = OptionValueText(v);
    }
  }
}

}  // namespace

RecipeConfig ParseRecipe(const std::string& toml_text, const std::string& source) {
  RecipeConfig c;
  c.source_name = source;
  c.source_text = toml_text;
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream s;
    s << "recipe '" << source << "' is not valid TOML: " << e.description() << " (line "
      << e.source().begin.line << ", column " << e.source().begin.column << ")";
    FailInput(s.str());
  }
  std::vector<Field> fields = Fields(c);
  std::map<std::string, std::vector<std::string>> keys_of_section;
  for (const auto& f : fields) {
    const auto dot = f.key.find('.');
    keys_of_section[f.key.substr(0, dot)].push_back(f.key.substr(dot + 1));
  }
  for (const auto& [sec_key, sec_node] : root) {
    const std::string sec(sec_key.str());
    if (sec == "encoding_options") {
      LEXP_INPUT_CHECK(sec_node.is_table(), KeyLocation(source, sec) + " must be a table");
      LoadEncodingOptions(c, *sec_node.as_table(), source);
      continue;
    }
    if (!keys_of_section.count(sec)) {
      std::string known;
      for (const auto& [s, _] : keys_of_section) known += "[" + s + "] ";
      FailInput(KeyLocation(source, sec) + " is not a known section; sections: " + known +
                "[encoding_options]");
    }
    const toml::table* t = sec_node.as_table();
    LEXP_INPUT_CHECK(t != nullptr, KeyLocation(source, sec) + " must be a table ([" + sec + "])");
    for (const auto& [k, v] : *t) {
      const std::string key = sec + "." + std::string(k.str());
      auto it =
          std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == key; });
      if (it == fields.end()) {
        std::string known;
        for (const auto& n : keys_of_section[sec]) known += (known.empty() ? "" : ", ") + n;
        FailInput(KeyLocation(source, key) + " is not a known key; keys of [" + sec +
                  "]: " + known);
      }
      Assign(*it, v, source);
    }
  }
  return c;
}

void ApplyOverrides(RecipeConfig& c, const std::vector<std::string>& sets) {
  std::vector<Field> fields = Fields(c);
  for (const std::string& s : sets) {
    const auto eq = s.find('=');
    LEXP_INPUT_CHECK(eq != std::string::npos && eq > 0,
                     "--set '" + s + "': expected key=value, e.g. --set train.steps=200");
    const std::string key = s.substr(0, eq), value = s.substr(eq + 1);
    toml::table parsed;
    std::string text = "v = " + value;
    try {
      parsed = toml::parse(text);
    } catch (const toml::parse_error&) {
      // Bare words are strings; a,b,c is a list of bare words or numbers.
      std::string list;
      std::stringstream ss(value);
      std::string item;
      bool any = false;
      while (std::getline(ss, item, ',')) {
        toml::table probe;
        bool number = true;
        try {
          probe = toml::parse("x = " + item);
        } catch (const toml::parse_error&) {
          number = false;
        }
        list += std::string(any ? ", " : "") + (number ? item : "\"" + item + "\"");
        any = true;
      }
      const bool is_list = value.find(',') != std::string::npos;
      parsed = toml::parse("v = " + (is_list ? "[" + list + "]" : "\"" + value + "\""));
    }
    const toml::node& node = *parsed.get("v");
    if (key.rfind("encoding_options.", 0) == 0) {
      const std::string rest = key.substr(17);
      const auto dot = rest.find('.');
      LEXP_INPUT_CHECK(dot != std::string::npos,
                       "--set " + key + ": expected encoding_options.<encoding>.<option>=value");
      const std::string enc = rest.substr(0, dot);
      FindEncoding(enc);
      c.encoding_options[enc][rest.substr(dot + 1)] = OptionValueText(node);
      continue;
    }
    auto it =
        std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == key; });
    if (it == fields.end()) {
      std::string known;
      for (const auto& f : fields) known += (known.empty() ? "" : ", ") + f.key;
      FailInput("--set " + key + ": not a recipe key; keys: " + known);
    }
    // A single value for a list field becomes a one-element list.
    if ((it->value.index() == 3 || it->value.index() == 4) && !node.is_array()) {
      toml::table wrapped = toml::parse(fmt::format(
          "v = [{}]",
          node.is_string() ? TomlQuoted(*node.value<std::string>()) : value));
      Assign(*it, *wrapped.get("v"), "--set");
    } else {
      Assign(*it, node, "--set");
    }
  }
}

std::string RecipeToToml(RecipeConfig& c) {
  std::ostringstream s;
  std::string section;
  for (const Field& f : Fields(c)) {
    const auto dot = f.key.find('.');
    const std::string sec = f.key.substr(0, dot);
    if (sec != section) {
      s << (section.empty() ? "" : "\n") << "[" << sec << "]\n";
      section = sec;
    }
    s << f.key.substr(dot + 1) << " = " << FieldValueString(f) << "\n";
  }
  for (const auto& [enc, opts] : c.encoding_options) {
    s << "\n[encoding_options." << enc << "]\n";
    for (const auto& [k, v] : opts) s << k << " = " << TomlQuoted(v) << "\n";
  }
  return s.str();
}

}  // namespace lexp
