// Figure programs' shared code: read run files (HDF5) of a run directory and draw with gnuplot
// through gnuplot-iostream. Every figure writes into <run_dir>/figures/: NAME.png, NAME.gp (the
// script) and NAME.dat (the data it plots), so a figure can be restyled without rerunning
// anything; NAME.svg and NAME.pdf with --format, NAME.log when gnuplot printed anything. Figures
// read files, never live objects.
#pragma once

#include <string>
#include <vector>

#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_data.h"

namespace lexp {

// Token accuracy (and exact match) vs evaluation length, one line per encoding, training length
// marked. Returns the PNG path.
std::string DrawAccuracyVsLength(const std::string& run_dir);

// Attention entropy (with the uniform ln n reference) and max pre-softmax logit vs probe length,
// one line per encoding. Returns the PNG path.
std::string DrawAttentionVsLength(const std::string& run_dir);

// From the file of `lexp pe-table`: each RoPE scaling rule's per-pair wavelength against the
// original, and each bias family's b(d) for head 0. Writes next to the file in figures/.
std::string DrawPeTable(const std::string& pe_table_file);

// A figure of a run directory: its name, whether the directory's runs hold what it draws, and the
// function (in its numbered program, notebooks_cpp/NN_<name>.cc) that draws it.
struct RunFigure {
  std::string name;
  bool (*applies)(const std::string& run_dir);
  std::string (*draw)(const std::string& run_dir);
};
// Every figure of a run directory, in drawing order (figure_table.cc).
const std::vector<RunFigure>& RunFigures();
// /analysis/prompt_compression of the runs (lexp compress): exact match and prompt length against
// the compression ratio, one line per task length.
bool HasPromptCompression(const std::string& run_dir);
std::string DrawPromptCompression(const std::string& run_dir);
// /diagnosis of the runs (lexp diagnose): the share of the loss gap beyond N each intervention
// closes against length, and the gap.
bool HasDiagnosis(const std::string& run_dir);
std::string DrawDiagnosis(const std::string& run_dir);
// A reproduction's verdict (CLAIM_DIR/verdict.h5 of lexp reproduce): the criterion's metric
// against length, one panel per compared run label, training length and published value marked.
std::string DrawReproduction(const std::string& claim_dir);
// The verdict against training steps (a claim with a [trend]): figures/reproduction_steps.png.
std::string DrawReproductionTrend(const std::string& claim_dir);
// Every figure of RunFigures() that applies to the directory; returns the PNG paths.
std::vector<std::string> DrawAllFigures(const std::string& run_dir);
// Tasks with a depth axis (passkey): exact match per (length, depth) cell, one heat map per run.
std::string DrawDepthHeatmap(const std::string& run_dir);
// The closed-form analyses of `lexp theory`: expectation proxies, decay bound, pair periods with
// the critical dimension. Writes <file's dir>/figures/theory.{png,gp,dat}.
std::string DrawTheory(const std::string& theory_file);
// /analysis/geometry of the runs (lexp analyze): for the longest probe of each run, LM-Infinite's
// logit bound over distance (last query), entropy against visible keys with ln n, mean attended
// distance and the empirical attention expectation (training length marked); over the lengths, the
// best-match JS divergence against the NoPE reference, and the resolution of the expectation over
// the training window and over every distance against a flat curve's.
std::string DrawAttentionGeometry(const std::string& run_dir);
// Language-modelling runs: perplexity vs evaluation length, with exp(source entropy rate).
std::string DrawPerplexityVsLength(const std::string& run_dir);
// Heat map task x encoding of the sweep summary (summary.h5 of a task/seed sweep): max over seeds
// of the Ruoss score, with mean ± sd in each cell. Writes <dir>/figures/score_table.{png,gp,dat}.
std::string DrawScoreTable(const std::string& summary_file);

// /analysis/entropy_variants of the runs (lexp analyze): entropy by query under plain, log-n, YaRN
// and the Lambda mask against ln(visible keys) (ln(i + 1) in the decoder layout, ln T in the
// encoder layout; the keys the Lambda mask leaves under it), one panel per run, training length
// marked.
std::string DrawEntropyVariants(const std::string& run_dir);
// /analysis/position_shift of the runs (lexp analyze): how far attention rows move under each
// shift of every position id against the sequence length (log scale; exact zeros named in the
// title), and at the longest probe the first key's share of the move against its share of the
// attention (Wang et al. 2024, Eq. 4).
std::string DrawPositionShift(const std::string& run_dir);
// /analysis/rotary of rope runs: periods covered per pair in training and at the longest
// evaluation, each pair's mean |contribution| below and beyond the training length, and the
// post-critical ablation's loss beyond training per cut, with the predicted boundary.
std::string DrawRotaryPairs(const std::string& run_dir);
// /analysis/position_scores of the runs (lexp analyze): loss by absolute position at the longest
// evaluation length, and over the evaluation lengths the last window's cost of extra keys (with
// the whole sequence minus alone at its own positions) and of unseen positions (alone at its own
// positions minus alone from 0).
std::string DrawPositionScores(const std::string& run_dir);
// /analysis/geometry of the runs: per head, sink mass, local mass and positional share at the
// training length against the longest probe, and over the probe lengths the fraction of logits,
// positional parts and content parts outside their trained range.
std::string DrawHeads(const std::string& run_dir);
// /analysis/position_probes of the runs: per residual stream, the position probe's error in range
// and beyond, the beyond-training classifier's accuracy, and the out-of-distribution fractions.
std::string DrawPositionProbes(const std::string& run_dir);
// /analysis/receptive_field of the runs: the share of the input gradient by distance from the last
// position at the longest length, and the distances holding 50% and 90% of it against length.
std::string DrawReceptiveField(const std::string& run_dir);
// base_law.h5 of `lexp base-law`: measured limit per run against base with the predictions (law
// with the pre-training d_extra, run's own d_extra), censoring, training length and the full-period
// base. Writes <file's dir>/figures/base_law.{png,gp,dat}.
std::string DrawBaseLaw(const std::string& base_law_file);

// Figure 16: /train/eval_history (train.eval_every) of every run that has one: exact match and loss
// at its longest length against steps, and the last exact match against trainable parameters.
std::string DrawEvalDuringTraining(const std::string& run_dir);
bool HasEvalHistory(const std::string& run_dir);

}  // namespace lexp
