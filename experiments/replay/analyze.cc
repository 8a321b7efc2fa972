#include "experiments/replay/analyze.h"

#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <regex>

#include "analysis/rope_theory.h"
#include "experiments/core/analysis_selection.h"
#include "experiments/core/assembled_model.h"
#include "experiments/core/run_file.h"
#include "experiments/replay/empirical_expectation.h"
#include "experiments/replay/entropy_variants.h"
#include "experiments/replay/position_probes.h"
#include "experiments/replay/position_scores.h"
#include "experiments/replay/position_shift.h"
#include "experiments/replay/probe_geometry.h"
#include "experiments/replay/receptive_field.h"
#include "experiments/replay/rotary_pairs.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "pe/rope.h"

namespace lexp {

std::vector<std::string> ReferenceCandidates(const std::string& run_file,
                                             const std::string& encoding, const std::string& label,
                                             const std::string& sweep_key) {
  if (encoding == "nope" || label.rfind(encoding, 0) != 0) return {};
  const std::filesystem::path dir = std::filesystem::path(run_file).parent_path();
  // <sweep part><-seedN>; an evaluation's label adds +<rule or overrides> (lexp eval), whose
  // reference is still the trained NoPE beside it.
  std::string suffix = label.substr(encoding.size());
  suffix = suffix.substr(0, suffix.find('+'));
  std::smatch seed;
  std::regex_search(suffix, seed, std::regex("-seed[0-9]+$"));
  const std::string seed_part = seed.empty() ? "" : seed.str();
  std::vector<std::string> out = {(dir / ("nope" + suffix + ".h5")).string()};
  if (suffix != seed_part && !sweep_key.empty() && !SweepKeyChanges(sweep_key, "nope"))
    out.push_back((dir / ("nope" + seed_part + ".h5")).string());
  return out;
}

std::string AnalyzeRunFile(const std::string& path, const std::string& reference_given,
                           const AnalysisSelection& chosen, bool finish) {
  std::string report, reference = reference_given;
  const RunFileHead head = ReadRunFileHead(path);
  LEXP_INPUT_CHECK(HasFinalWeights(head.state), "'" + path + "' did not complete (" +
                                                    RunStateName(head.state) +
                                                    "); there is nothing to analyze");
  const std::string encoding = head.encoding, label = head.label;
  // No reference given: the NoPE run beside this one, when it is there and completed (the
  // geometry's JS divergence is its only reader).
  auto state_of = [](const std::string& file) -> std::optional<RunState> {
    try {
      return ReadRunFileHead(file).state;
    } catch (const InputError&) {  // not a run file, or a damaged one: no reference
      return std::nullopt;
    }
  };
  if (chosen.geometry)
    for (const std::string& candidate : ReferenceCandidates(path, encoding, label, head.sweep_key))
      if (reference.empty() && std::filesystem::exists(candidate) &&
          state_of(candidate) == RunState::kCompleted) {
        reference = candidate;
        report += "reference for the JS divergence: " + reference + " (found beside the run)\n";
      }
  if (!reference.empty()) {
    const auto state = state_of(reference);
    LEXP_INPUT_CHECK(state && HasFinalWeights(*state),
                     "reference '" + reference + "' is not a completed lexp run file");
  }
  // Replays of the trained model (before the file is opened for update). The geometry is forward
  // passes of the probe only, so it runs even when probe.replay = 0 skips the costly replays.
  std::optional<GeometryAnalysis> geometry;
  std::optional<EntropyVariants> entropy;
  std::optional<EmpiricalExpectation> expectation;
  std::optional<RotaryPairAnalysis> rotary;
  std::optional<PositionScores> positions;
  std::optional<PositionProbes> probes;
  std::optional<ReceptiveField> field;
  std::optional<PositionShift> shift;
  const bool rotates = IsRopeEncoding(encoding);
  if (chosen.geometry) geometry = MeasureGeometry(path, reference);
  if (chosen.entropy_variants) entropy = EntropyUnderVariants(path);
  if (chosen.expectation) expectation = MeasureExpectation(path);
  if (chosen.position_scores) positions = MeasurePositionScores(path);
  if (chosen.position_probes) probes = MeasurePositionProbes(path);
  if (chosen.receptive_field) field = MeasureReceptiveField(path);
  if (chosen.rotary && rotates) rotary = AnalyzeRotaryPairs(path);
  if (chosen.position_shift) shift = MeasurePositionShift(path);
  h5::Writer w(path, h5::Writer::Mode::kUpdate);
  h5::Group analysis = w.root().CreateGroup("analysis");
  if (geometry) report += WriteGeometry(*geometry, analysis);
  if (encoding == "nope" && reference.empty() && geometry)
    report += "(this NoPE run is the usual reference of the others)\n";
  if (entropy) report += WriteEntropyVariants(*entropy, analysis);
  if (expectation) report += WriteEmpiricalExpectation(*expectation, analysis);
  if (positions) report += WritePositionScores(*positions, analysis);
  if (probes) report += WritePositionProbes(*probes, analysis);
  if (field) report += WriteReceptiveField(*field, analysis);
  if (rotary) report += WriteRotaryPairs(*rotary, analysis);
  if (shift) report += WritePositionShift(*shift, analysis);
  if (chosen.rotary && !rotates)
    report += "rotary pair analysis: not applicable: '" + encoding + "' does not rotate\n";
  // What was left out, by name, and how to have it. A group not chosen is left as an earlier
  // analysis wrote it (lexp collect refreshes the geometry alone); rotary is removed where it
  // does not apply.
  if (chosen.rotary && !rotates) analysis.Remove("rotary");
  std::string skipped;
  for (const std::string& name : AnalysisNames())
    if (!chosen.Has(name) && (name != "rotary" || rotates))
      skipped += (skipped.empty() ? "" : ", ") + name;
  if (!skipped.empty())
    report += "analyses not run: " + skipped + " (chosen: " + chosen.Names() +
              "; probe.analyses and probe.replay choose them); lexp analyze " + path +
              " writes every one\n";
  if (finish) w.root().OpenGroup("status").SetAttr("state", "completed");
  w.Commit();
  return report;
}

}  // namespace lexp
