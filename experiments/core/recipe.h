// The experiment recipe: every field is listed once in Fields(), and that one list drives TOML
// parsing (unknown keys are errors), `--set key=value` overrides, `lexp run --help`, the printed
// configuration and the /config group of every run file. Per-encoding options live in
// [encoding_options.<name>] tables and are validated by the encoding registry.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "experiments/core/analysis_selection.h"
#include "experiments/tasks/task.h"
#include "nn/model/transformer.h"
#include "nn/optim/adamw.h"
#include "pe/patterns.h"

namespace lexp {

// `pattern` with every "{seed}" replaced by `seed` (a run file named for its seed).
std::string WithSeed(const std::string& pattern, const std::string& seed);

// Whether a key sweep over `sweep_key` changes this encoding's model: every encoding, except that
// encoding_options.<e>.<option> changes only e's (and an empty key changes nothing).
bool SweepKeyChanges(const std::string& sweep_key, const std::string& encoding);

struct RecipeConfig {
  // [run]
  std::string name = "default";
  int seed = 1;
  std::vector<int> seeds;  // seed sweep: one model per (encoding, seed); empty = {seed}
  std::string sweep_key;   // key sweep: any recipe key ("encoding_options.rope.base")
  std::vector<std::string> sweep_values;  // its values, one model per (encoding, value)
  // Named variants, each a set of overrides: "NAME: key=value; key=value" (NAME alone: the recipe
  // as it is). One model per (encoding, variant), named <encoding>-<NAME>. Instead of run.sweep.
  std::vector<std::string> variants;
  int threads = 0;
  int jobs = 0;  // models of a sweep trained at once (0: one per thread, as memory allows)
  // [task]
  std::string task = "copy";
  std::vector<std::string> tasks;  // task sweep; empty = {task}
  int task_vocab = 0;
  std::string task_scratchpad;  // components of a scratchpad before the answer ("" = none)
  std::string task_corpus;      // text_lm's corpus ("" = fortunes)
  int task_index_hints = 0;      // arithmetic tasks' index hint symbols (0 = none)
  std::string task_padding = "none";  // arithmetic tasks' operand padding: none | zeros
  int task_copy_tokens = 0;           // selective_copy's tokens to copy (0 = its default, 8)
  int task_needles = 0;               // RULER multi-needle tasks' needles (0 = 4)
  int task_hops = 0;                  // variable_tracking's hops per chain (0 = 4)
  TaskOptions TaskOpts() const {
    TaskOptions o{task_vocab, task_scratchpad, task_corpus};
    o.index_hints = task_index_hints;
    o.zero_pad = task_padding == "zeros";
    o.copy_tokens = task_copy_tokens;
    o.needles = task_needles;
    o.hops = task_hops;
    return o;
  }
  // [model]
  std::string layout = "decoder";
  std::string norm = "pre";
  std::string knn_merge = "gate";  // the memory layer's merge: gate | softmax (model.knn in Model)
  int knn_memory_gradient = 0;     // model.knn_memory_gradient (0/1), into model.knn by Model()
  int landmark_remap = 1;  // model.landmark_remap (0/1), into model.landmark_remap by Model()
  // The engine's shape (d_model, n_heads, n_layers, d_ff); Model() sets its vocabulary from the
  // task and pre_ln, causal from `norm` and `layout`.
  ModelConfig model{.vocab = 0,
                    .d_model = 64,
                    .n_heads = 4,
                    .n_layers = 3,
                    .d_ff = 0,
                    .pre_ln = true,
                    .causal = true,
                    .knn = {},
                    .side = {},
                    .landmark_block = 0,
                    .landmark_top_k = 0,
                    .landmark_remap = true,
                    .precision = {}};
  // model.precision and its per-part keys (nn/precision.h), into model.precision by Model();
  // a part's "" means as model.precision.
  std::string precision = "fp32";
  std::string precision_rotary;
  std::string precision_logits;
  PrecisionPolicy Precision() const;
  std::vector<std::string> encodings = {"nope", "sinusoidal", "alibi", "rope"};
  std::map<std::string, std::map<std::string, std::string>> encoding_options;
  std::string positions = "identity";        // identity | randomized | pose (wraps every encoding)
  int positions_max = 0;                     // randomized: L; pose: target length (0 = default)
  std::string positions_at_eval = "sample";  // randomized: sample | identity
  int log_n = 0;  // 1: the log-n temperature on every encoding's content logits (pe/log_n_scale.h)
  std::string pattern =
      "full";  // full | sliding_window | bca | lambda | dilated | shifted_sparse | sinks
  int pattern_window = 0;  // sliding_window w, bca l, lambda n_local, sinks recent window
                           // (0 = N's sequence)
  int pattern_global = 2;  // lambda n_global, sinks n_sink
  int pattern_limit = 0;   // lambda distance cap (0 = the window)
  int pattern_group = 0;   // self_extend group size G (required for it)
  int pattern_shift = 0;   // string shift S (required for it)
  int pattern_memory = 0;  // recurrence: memory M (0 = the segment length)
  std::vector<int> pattern_segments;   // dilated w_a
  std::vector<int> pattern_dilations;  // dilated r_a
  double pattern_ratio = 0.25;         // shifted_sparse group size / sequence length
  std::string pattern_when = "eval";   // eval (BCA, LM-Infinite, sinks) | train (S2-Attn) | always
  // [train]
  int train_max_length = 16;
  int steps = 4000;
  // At most this many steps, the other step counts shrunk in proportion (experiments/core/
  // steps_cap.h; 0 = no cap): a pipeline check, lexp reproduce's smoke budget.
  int steps_cap = 0;
  int batch_size = 32;
  // AdamW and its schedule (lr, weight_decay, clip_norm, warmup_steps, min_lr_ratio; the betas and
  // eps are the engine's); Optimizer() sets total_steps from `steps`.
  AdamWConfig optimizer{.lr = 3e-3,
                        .beta1 = 0.9,
                        .beta2 = 0.999,
                        .eps = 1e-8,
                        .weight_decay = 0.01,
                        .clip_norm = 1.0,
                        .warmup_steps = 100,
                        .total_steps = 4000,
                        .min_lr_ratio = 0.1};
  std::string init_from;  // run file whose /model weights start training (fine-tuning)
  // LoRA (Hu et al. 2021): rank 0 trains every weight; rank r > 0 freezes them and trains rank-r
  // adapters of the lora_targets (q, k, v, o: attention projections; mlp: both MLP matrices),
  // scaled by lora_alpha / r (lora_alpha 0: = r, a scale of 1).
  // GrowLength (Jin et al. 2023): "STEP:LENGTH" entries, the longest training length from that
  // step on (the first at step 0, the last at train.max_length); empty = train.max_length
  // throughout. Each phase's batch is batch_size * max_length / LENGTH sequences, so the tokens per
  // step stay those of the last phase.
  std::vector<std::string> length_schedule;
  int lora_rank = 0;
  double lora_alpha = 0;
  std::vector<std::string> lora_targets = {"q", "v"};
  // How LoRA's frozen layer matrices are held: float, or nf4 (QLoRA's 4-bit NormalFloat round trip,
  // as LongQLoRA).
  std::string lora_base = "float";
  // Model weights that train beside the adapters (LongLoRA, Chen et al. 2023: embeddings, norms).
  std::vector<std::string> lora_also_train;
  int log_every = 100;
  int checkpoint_every = 500;
  // Evaluation during training: every eval_every steps (0 = only at the end), and before the first,
  // the eval_every_lengths (each one of the evaluation lengths; empty = the longest) are evaluated
  // on the end-of-training evaluation's own sequences and stored in /train/eval_history.
  int eval_every = 0;
  int score_input = 0;  // 1: also train on the input, next token (a language model of prompts)
  std::vector<int> eval_every_lengths;
  // [eval]
  std::vector<int> eval_lengths;  // empty: a grid from 1 to eval_max_factor * train_max_length
  int eval_max_factor = 8;
  std::vector<int> eval_depths = {0, 25, 50, 75, 100};  // percent; tasks with a depth axis only
  int eval_samples = 128;
  int eval_batch_size = 64;
  std::string eval_decoding = "task";  // task | teacher_forced | greedy
  // [probe]
  std::vector<int> probe_lengths;  // empty: N, 2N, 4N, 8N (capped at the longest eval length)
  int probe_samples = 8;
  int probe_stored_samples = 1;
  int probe_replay = 1;                    // 1: end-of-training analysis replays the model
  // Which analyses the end-of-training analysis writes (experiments/core/analysis_selection.h).
  std::vector<std::string> probe_analyses = {"all"};
  std::vector<std::string> probe_capture;  // globs of capture sites (nn/model/capture_sites.h)

  // Not fields: where the recipe came from.
  std::string source_name;  // file path or "<embedded default>"
  std::string source_text;

  std::vector<int> EvalLengths() const;
  std::vector<int> EvalEveryLengths() const;  // train.eval_every_lengths, or {longest eval length}
  std::vector<int> ProbeLengths() const;
  AnalysisSelection Analyses() const;  // probe.analyses read with probe.replay
  int MaxSequenceTokens() const;  // upper bound of the model sequence length over all evaluations
  std::vector<int> Seeds() const { return seeds.empty() ? std::vector<int>{seed} : seeds; }
  std::vector<std::string> Tasks() const {
    return tasks.empty() ? std::vector<std::string>{task} : tasks;
  }
  // One value of the key sweep, or one named variant: its overrides, the suffix it adds to model
  // names ("-base500", "-lora") and the value run files and job lists record (500, lora).
  struct Variant {
    std::vector<std::string> sets;
    std::string suffix, value;
  };
  std::vector<Variant> Variants() const;
  // What the sweep varies: run.sweep's key, "run.variants", or "" (no sweep).
  std::string SweepKey() const { return !variants.empty() ? "run.variants" : sweep_key; }
  // Whether the recipe trains a sweep (tasks, seeds, a key or variants): it then has summary.h5.
  bool IsSweep() const { return !tasks.empty() || !seeds.empty() || !SweepKey().empty(); }
  // Whether the sweep changes this encoding's model: every encoding, except that a key
  // encoding_options.<e>.<option> changes only e's. An encoding the sweep does not change is
  // trained once, without the suffix (nope.h5 beside rope-base500.h5, rope-base10000.h5). Named
  // variants change every encoding.
  bool SweepChanges(const std::string& encoding) const {
    return SweepKeyChanges(SweepKey(), encoding);
  }
  // Model labels of the sweep in summary order: for every variant, every encoding it changes
  // (the encodings it leaves alone once, with the first variant).
  std::vector<std::string> ModelLabels() const;
  // The recipe of one model of the sweep; "{seed}" in train.init_from becomes its seed (one
  // pre-training per seed: fine-tuning seed s starts from pre-training seed s).
  RecipeConfig For(const std::string& task_name, int seed_value) const {
    RecipeConfig c = *this;
    c.init_from = WithSeed(c.init_from, std::to_string(seed_value));
    c.task = task_name;
    c.tasks.clear();
    c.seed = seed_value;
    c.seeds.clear();
    c.sweep_key.clear();
    c.sweep_values.clear();
    c.variants.clear();
    return c;
  }
  // L of `randomized` / target length of `pose`: positions_max, or by default 2048 (Ruoss et al.)
  // but at least twice the longest evaluated sequence (randomized), or that sequence (pose, shift).
  int PositionsMax() const;
  // The pattern of the recipe, with defaults resolved (train_tokens: the longest training
  // sequence).
  PatternConfig PatternFor(int train_tokens) const;
  // The engine's model shape for a vocabulary of `vocab` tokens (the task layout's).
  ModelConfig Model(int vocab) const;
  // train.length_schedule read: the step each phase starts at and its longest length, in order.
  // An entry that is not STEP:LENGTH is an input error naming it (the order and bounds are checked
  // by ValidateRecipe).
  struct LengthPhase {
    long from_step = 0;
    int max_length = 0;
  };
  std::vector<LengthPhase> LengthSchedule() const;
  // The training phase at a step of that schedule (read once by the trainer): its longest length
  // and its batch, batch_size * max_length / its length (the tokens per step of the last phase).
  struct TrainingPhase {
    int max_length = 0, batch_size = 0;
  };
  TrainingPhase PhaseAt(long step, const std::vector<LengthPhase>& schedule) const;
  // The optimizer of a model of this recipe (total_steps = steps).
  AdamWConfig Optimizer() const;
  // Bound on every position id a batch can carry (tables of absolute encodings are this long).
  int MaxPositionId() const;
  // eval.decoding resolved for `task`: "task" is the task's source protocol where the decoder
  // layout can generate its answer, teacher forcing otherwise.
  Decoding DecodingFor(const Task& task) const;
};

// "NAME: key=value; key=value" -> NAME (value), "-NAME" (suffix) and its overrides, spaces around
// each trimmed: a run.variants entry, or a claim's named evaluation.
RecipeConfig::Variant ParseNamedVariant(const std::string& text);

struct Field {
  using Ptr =
      std::variant<int*, double*, std::string*, std::vector<int>*, std::vector<std::string>*>;
  Field(std::string k, std::string h, Ptr v, double lo = 0, double hi = 0,
        std::vector<std::string> allow = {})
      : key(std::move(k)),
        help(std::move(h)),
        value(v),
        min(lo),
        max(hi),
        allowed(std::move(allow)) {}
  std::string key;  // "train.steps"
  std::string help;
  Ptr value;
  double min = 0, max = 0;           // numeric range (inclusive), used when min < max
  std::vector<std::string> allowed;  // allowed strings (empty: any)
};

// Letters, digits and . _ + - only, not empty, not . or .., not starting with - (a name that stays
// inside the directory it is put in).
bool IsPlainFileName(const std::string& name);

std::vector<Field> Fields(RecipeConfig& c);
std::string FieldValueString(const Field& f);
std::string FieldTypeName(const Field& f);

// Parses TOML text; `source` names the file in errors. Unknown keys, wrong types and out-of-range
// values are errors naming the key, the file and what is allowed.
RecipeConfig ParseRecipe(const std::string& toml_text, const std::string& source);
// Applies "key=value" overrides (value in TOML syntax; bare words are strings; a,b,c is a list).
void ApplyOverrides(RecipeConfig& c, const std::vector<std::string>& sets);
// Checks cross-field constraints (encodings exist, options valid, task/layout compatible, ...).
void ValidateRecipe(const RecipeConfig& c);
// Where a key sits, for messages: "recipe 'FILE': KEY", or "--set KEY" for an override.
std::string KeyLocation(const std::string& source, const std::string& key);
// The effective recipe as TOML (after overrides), for the run file and for printing.
std::string RecipeToToml(RecipeConfig& c);

}  // namespace lexp
