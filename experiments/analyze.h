// `lexp analyze RUN_FILE...`: the attention-geometry metrics of analysis/attention_geometry.h and
// analysis/attention_stats.h over the attention stored on a run's probe batch, plus the rotary
// pair periods of rope runs, written into the run file's /analysis/geometry (replacing an earlier
// analysis; the file is rewritten through a temporary copy). Training runs call it at the end.
// Metrics that do not apply to the run's encoding are named with the reason.
#pragma once

#include <string>

namespace lexp {

// reference: optional run file (typically NoPE) trained on the same probe data; its attention rows
// give the Jensen-Shannon divergence per layer and head. Returns the report lines.
std::string AnalyzeRunFile(const std::string& run_file, const std::string& reference = "");

}  // namespace lexp
