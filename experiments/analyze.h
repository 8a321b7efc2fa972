// `lexp analyze RUN_FILE...`: every analysis that applies to a completed run, written into the run
// file (replacing an earlier analysis; the file is rewritten through a temporary copy). Training
// runs call it at the end. Metrics that do not apply to the run's encoding are named with the
// reason.
//  * /analysis/geometry: from the attention stored on the probe batch,
//  analysis/attention_geometry.h
//    and attention_stats.h (logit running max, empirical expectation and resolution, entropy by
//    query, attended distances, JS divergence against a reference run);
//  * /analysis/expectation: mean and spread of the logit by distance, and its resolution, at every
//    evaluation length (experiments/empirical_expectation.h);
//  * /analysis/entropy_variants: entropy under log-n, YaRN and the Lambda mask
//  (experiments/entropy_variants.h);
//  * /analysis/rotary (rope, rope_partial): pair angle ranges, contributions, logit supremum and
//  the
//    post-critical ablation (experiments/rotary_pairs.h).
#pragma once

#include <string>

namespace lexp {

// reference: optional run file (typically NoPE) trained on the same probe data; its attention rows
// give the Jensen-Shannon divergence per layer and head. Without one, the NoPE run beside the file
// (nope<suffix>.h5 for a run labelled <encoding><suffix>) is used when it exists and completed.
// Returns the report lines.
// replay = false skips the analyses that replay the model (entropy variants, rotary pairs): the
// end-of-training call of recipes with probe.replay = 0. finish = true (the trainer's call) also
// turns the file's state from "analyzing" into "completed" in the same write, so a file is marked
// completed only once its analysis is in it.
std::string AnalyzeRunFile(const std::string& run_file, const std::string& reference = "",
                           bool replay = true, bool finish = false);

}  // namespace lexp
