// Every recipe key once: its name, help text, default (the RecipeConfig member it reads and
// writes) and allowed range; parsing, --set, the recipe check, `lexp list keys` and the run file
// all walk this one list (experiments/core/recipe.h).
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

}  // namespace lexp
