// The figures of a run directory, one row each: what `lexp run`, `collect`, `eval` and `figures`
// draw, in this order, when the directory's runs hold what the figure reads.
#include <cmath>
#include <string>
#include <vector>

#include "nn/io/hdf5.h"
#include "notebooks_cpp/figure_data.h"
#include "notebooks_cpp/figures.h"

namespace lexp {

namespace {

// Whether any run of the directory satisfies has(run file's root group).
template <typename Has>
bool AnyRun(const std::string& run_dir, Has has) {
  for (const auto& path : FindRunFiles(run_dir)) {
    h5::Reader r(path);
    if (has(r.root())) return true;
  }
  return false;
}

// Whether any run holds /analysis/<group> and has(that group).
template <typename Has>
bool AnyAnalysis(const std::string& run_dir, const char* group, Has has) {
  return AnyRun(run_dir, [&](const h5::Group& root) {
    if (!root.Has("analysis") || !root.OpenGroup("analysis").Has(group)) return false;
    return has(root.OpenGroup("analysis").OpenGroup(group));
  });
}

bool HasAnalysis(const std::string& run_dir, const char* group) {
  return AnyAnalysis(run_dir, group, [](const h5::Group&) { return true; });
}

}  // namespace

const std::vector<RunFigure>& RunFigures() {
  static const std::vector<RunFigure> kFigures = {
      {"accuracy_vs_length", [](const std::string&) { return true; }, DrawAccuracyVsLength},
      {"attention_vs_length", [](const std::string&) { return true; }, DrawAttentionVsLength},
      {"accuracy_by_length_and_depth",
       [](const std::string& d) {
         for (const auto& r : ReadRuns(d))
           if (!r.depth_exact.empty()) return true;
         return false;
       },
       DrawDepthHeatmap},
      {"attention_geometry",
       [](const std::string& d) { return AnyAnalysis(d, "geometry", HasCurrentGeometry); },
       DrawAttentionGeometry},
      {"position_scores", [](const std::string& d) { return HasAnalysis(d, "position_scores"); },
       DrawPositionScores},
      {"heads", [](const std::string& d) { return AnyAnalysis(d, "geometry", HasHeadsData); },
       DrawHeads},
      {"position_probes", [](const std::string& d) { return HasAnalysis(d, "position_probes"); },
       DrawPositionProbes},
      {"receptive_field", [](const std::string& d) { return HasAnalysis(d, "receptive_field"); },
       DrawReceptiveField},
      {"entropy_variants", [](const std::string& d) { return HasAnalysis(d, "entropy_variants"); },
       DrawEntropyVariants},
      {"position_shift", [](const std::string& d) { return HasAnalysis(d, "position_shift"); },
       DrawPositionShift},
      {"rotary_pairs",
       [](const std::string& d) {
         return AnyAnalysis(d, "rotary", [](const h5::Group& g) { return g.Has("ablation_loss"); });
       },
       DrawRotaryPairs},
      {"perplexity_vs_length",
       [](const std::string& d) {
         for (const auto& r : ReadRuns(d))
           if (std::isfinite(r.entropy_rate)) return true;
         return false;
       },
       DrawPerplexityVsLength},
      {"eval_during_training", HasEvalHistory, DrawEvalDuringTraining},
      {"prompt_compression", HasPromptCompression, DrawPromptCompression},
      {"diagnosis", HasDiagnosis, DrawDiagnosis},
  };
  return kFigures;
}

std::vector<std::string> DrawAllFigures(const std::string& run_dir) {
  std::vector<std::string> out;
  for (const RunFigure& f : RunFigures())
    if (f.applies(run_dir)) out.push_back(f.draw(run_dir));
  return out;
}

}  // namespace lexp
