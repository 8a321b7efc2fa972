// `lexp analyze RUN_FILE...`: every analysis that applies to a completed run, written into the run
// file (replacing an earlier analysis; the file is rewritten through a temporary copy). Training
// runs call it at the end. Metrics that do not apply to the run's encoding are named with the
// reason.
//  * /analysis/geometry: attention geometry over every probe sequence at the training length and
//    every probe length, with the spread across sequences (experiments/replay/probe_geometry.h):
//    logit explosion, entropy, attended distance, sink and local mass, the empirical expectation
//    and its resolution, positional and content parts of the logits and what leaves the trained
//    range, head classes, and the JS divergence of every head against every head of a reference
//    run;
//  * /analysis/expectation: mean and spread of the logit by distance, and its resolution, at every
//    evaluation length (experiments/replay/empirical_expectation.h);
//  * /analysis/entropy_variants: entropy under log-n, YaRN and the Lambda mask
//    (experiments/replay/entropy_variants.h);
//  * /analysis/position_scores: loss and accuracy by absolute position, and the last window scored
//    with the whole sequence, alone, and alone at its original positions, at every evaluation
//    length (experiments/replay/position_scores.h);
//  * /analysis/position_probes: linear probes of the hidden states for position fitted at the
//    training length and tested beyond it, and their distance from the training states
//    (experiments/replay/position_probes.h);
//  * /analysis/receptive_field: the gradient receptive field of the scored rows (a task's answer
//    tokens) and the distances holding 50% and 90% of it, at every evaluation length
//    (experiments/replay/receptive_field.h);
//  * /analysis/rotary (rope, rope_partial): pair angle ranges, contributions, logit supremum and
//    the post-critical ablation (experiments/replay/rotary_pairs.h).
//  * /analysis/position_shift: how far attention rows move when every position id is shifted,
//    and the first key's part of it (experiments/replay/position_shift.h).
#pragma once

#include <string>
#include <vector>

#include "experiments/core/analysis_selection.h"

namespace lexp {

// reference: optional run file (typically NoPE) trained on the same probe data; its attention rows
// give the Jensen-Shannon divergence per layer, head and reference head. Without one, the NoPE run
// beside the file (nope<suffix>.h5 for a run labelled <encoding><suffix>) is used when it exists
// and completed. Returns the report lines, which name the analyses not chosen. chosen: the
// analyses to write (the recipe's probe.analyses at the end of training; a group not chosen is
// left as an earlier analysis wrote it). finish = true (the
// trainer's call) also turns the file's state from "analyzing" into "completed" in the same write,
// so a file is marked completed only once its analysis is in it.
// Where a run's analysis looks for its JS reference when none is given, first found first: the
// NoPE run of the same directory and sweep point, nope<suffix>.h5 beside a run labelled
// <encoding><suffix>; then, when the suffix holds a key sweep's part, the NoPE run of the same
// seed without it (a sweep of another encoding's option trains NoPE once: nope-seed3.h5 beside
// rope-base500-seed3.h5). Empty for a NoPE run or a label that does not start with its encoding.
// sweep_key: the key sweep the run belongs to ("" for none); the NoPE run without the sweep part is
// a candidate only when that key leaves NoPE alone (SweepKeyChanges).
std::vector<std::string> ReferenceCandidates(const std::string& run_file,
                                             const std::string& encoding, const std::string& label,
                                             const std::string& sweep_key);

std::string AnalyzeRunFile(const std::string& run_file, const std::string& reference = "",
                           const AnalysisSelection& chosen = AnalysisSelection::Everything(),
                           bool finish = false);

}  // namespace lexp
