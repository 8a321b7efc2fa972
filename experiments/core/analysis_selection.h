// Which analyses a run's end-of-training (or evaluation's) analysis writes: the recipe key
// probe.analyses, read with probe.replay. Names (experiments/replay/analyze.h says what each is):
// geometry (forward passes of the probe only), and the replays of the trained model expectation,
// entropy_variants, position_scores, position_probes, receptive_field, rotary (rope runs) and
// position_shift.
// "all" is every analysis that applies (the replays only when probe.replay = 1); "none" writes no
// analysis beyond the probe's own attention statistics (lexp analyze FILE adds them later).
#pragma once

#include <string>
#include <vector>

namespace lexp {

struct AnalysisSelection {
  bool geometry = false, expectation = false, entropy_variants = false, position_scores = false,
       position_probes = false, receptive_field = false, rotary = false, position_shift = false;

  bool AnyReplay() const {
    return expectation || entropy_variants || position_scores || position_probes ||
           receptive_field || rotary || position_shift;
  }
  bool Any() const { return geometry || AnyReplay(); }
  bool Has(const std::string& name) const;  // name: one of AnalysisNames()
  // The names chosen, comma-separated ("none" for none).
  std::string Names() const;

  static AnalysisSelection Everything();  // lexp analyze: every analysis that applies
  static AnalysisSelection GeometryOnly();
};

// The analysis names probe.analyses accepts besides "all" and "none", in the order they run.
const std::vector<std::string>& AnalysisNames();

// probe.analyses resolved: names (each once) or one of "all" / "none"; replay = probe.replay == 1
// (with 0, "all" is the geometry alone and a named replay is refused). where names the key in
// messages. An unknown name is an input error that lists the allowed ones.
AnalysisSelection SelectAnalyses(const std::vector<std::string>& names, bool replay,
                                 const std::string& where);

}  // namespace lexp
