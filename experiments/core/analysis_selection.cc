#include "experiments/core/analysis_selection.h"

#include <algorithm>

#include "nn/check.h"

namespace lexp {

namespace {

struct Entry {
  const char* name;
  bool AnalysisSelection::*flag;
  bool replay;
};

const std::vector<Entry>& Entries() {
  static const std::vector<Entry> e = {
      {"geometry", &AnalysisSelection::geometry, false},
      {"expectation", &AnalysisSelection::expectation, true},
      {"entropy_variants", &AnalysisSelection::entropy_variants, true},
      {"position_scores", &AnalysisSelection::position_scores, true},
      {"position_probes", &AnalysisSelection::position_probes, true},
      {"receptive_field", &AnalysisSelection::receptive_field, true},
      {"rotary", &AnalysisSelection::rotary, true},
      {"position_shift", &AnalysisSelection::position_shift, true},
  };
  return e;
}

std::string Allowed() {
  std::string s = "\"all\", \"none\" or a list of";
  for (const Entry& e : Entries()) {
    s += ' ';
    s += e.name;
  }
  return s;
}

}  // namespace

std::string AnalysisSelection::Names() const {
  std::string s;
  for (const Entry& e : Entries())
    if (this->*e.flag) {
      if (!s.empty()) s += ',';
      s += e.name;
    }
  return s.empty() ? "none" : s;
}

bool AnalysisSelection::Has(const std::string& name) const {
  for (const Entry& e : Entries())
    if (name == e.name) return this->*e.flag;
  return false;
}

AnalysisSelection AnalysisSelection::Everything() {
  AnalysisSelection s;
  for (const Entry& e : Entries()) s.*e.flag = true;
  return s;
}

AnalysisSelection AnalysisSelection::GeometryOnly() {
  AnalysisSelection s;
  s.geometry = true;
  return s;
}

const std::vector<std::string>& AnalysisNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Entry& e : Entries()) n.emplace_back(e.name);
    return n;
  }();
  return names;
}

AnalysisSelection SelectAnalyses(const std::vector<std::string>& names, bool replay,
                                 const std::string& where) {
  const bool all = std::find(names.begin(), names.end(), "all") != names.end();
  const bool none = std::find(names.begin(), names.end(), "none") != names.end();
  LEXP_INPUT_CHECK(!names.empty(), where + " is empty; allowed: " + Allowed());
  LEXP_INPUT_CHECK(!(all || none) || names.size() == 1,
                   where + ": \"all\" and \"none\" stand alone; allowed: " + Allowed());
  if (none) return {};
  if (all) return replay ? AnalysisSelection::Everything() : AnalysisSelection::GeometryOnly();
  AnalysisSelection s;
  for (const std::string& n : names) {
    const auto e = std::find_if(Entries().begin(), Entries().end(),
                                [&](const Entry& x) { return n == x.name; });
    LEXP_INPUT_CHECK(e != Entries().end(),
                     where + ": unknown analysis '" + n + "'; allowed: " + Allowed());
    LEXP_INPUT_CHECK(!(s.*e->flag),
                     where + ": '" + n + "' is named twice; allowed: " + Allowed() + ", each once");
    LEXP_INPUT_CHECK(replay || !e->replay,
                     where + ": '" + n +
                         "' replays the trained model, and probe.replay = 0 turns the replays "
                         "off; set probe.replay = 1 or leave '" + n + "' out");
    s.*e->flag = true;
  }
  return s;
}

}  // namespace lexp
