#include "experiments/reproduce/claim.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "experiments/core/recipe.h"
#include "experiments/reproduce/criterion.h"
#include "experiments/reproduce/embedded_files.h"
#include "experiments/replay/diagnosis.h"
#include "experiments/training/eval_command.h"
#include "nn/check.h"

namespace lexp {
namespace {

// Reads one table's keys strictly: every key must be read by the caller through these helpers,
// and Finish() refuses the others, naming them and the allowed ones.
class TableReader {
 public:
  TableReader(const toml::table& t, std::string where, std::vector<std::string> allowed)
      : t_(t), where_(std::move(where)), allowed_(std::move(allowed)) {}

  std::string String(const std::string& key, bool required, const std::string& dflt = "") {
    const toml::node* n = Get(key);
    if (!n) {
      LEXP_INPUT_CHECK(!required, where_ + ": key '" + key + "' is missing (a string)");
      return dflt;
    }
    LEXP_INPUT_CHECK(n->is_string(), where_ + "." + key + " must be a string");
    return std::string(*n->value<std::string>());
  }
  double Number(const std::string& key, double dflt) {
    const toml::node* n = Get(key);
    if (!n) return dflt;
    LEXP_INPUT_CHECK(n->is_number(), where_ + "." + key + " must be a number");
    return *n->value<double>();
  }
  bool Bool(const std::string& key, bool dflt) {
    const toml::node* n = Get(key);
    if (!n) return dflt;
    LEXP_INPUT_CHECK(n->is_boolean(), where_ + "." + key + " must be true or false");
    return *n->value<bool>();
  }
  std::vector<std::string> Strings(const std::string& key) {
    std::vector<std::string> out;
    const toml::node* n = Get(key);
    if (!n) return out;
    const toml::array* a = n->as_array();
    LEXP_INPUT_CHECK(a != nullptr, where_ + "." + key + " must be a list of strings");
    for (const auto& e : *a) {
      LEXP_INPUT_CHECK(e.is_string(), where_ + "." + key + " must be a list of strings");
      out.push_back(std::string(*e.value<std::string>()));
    }
    return out;
  }
  // A list of positive integers (empty when absent).
  std::vector<int> PositiveInts(const std::string& key) {
    std::vector<int> out;
    const toml::node* n = Get(key);
    if (!n) return out;
    const toml::array* a = n->as_array();
    const std::string msg = where_ + "." + key + " must be a list of positive integers";
    LEXP_INPUT_CHECK(a != nullptr, msg);
    for (const auto& e : *a) {
      LEXP_INPUT_CHECK(e.is_integer() && *e.value<int64_t>() >= 1 &&
                           *e.value<int64_t>() <= 100000000,
                       msg);
      out.push_back(static_cast<int>(*e.value<int64_t>()));
    }
    return out;
  }
  // [lo, hi] of positive integers, lo <= hi; {0, 0} when absent.
  std::pair<int, int> Range(const std::string& key) {
    const toml::node* n = Get(key);
    if (!n) return {0, 0};
    const toml::array* a = n->as_array();
    const std::string msg = where_ + "." + key + " must be [LO, HI], two lengths with 1 <= LO <= HI";
    LEXP_INPUT_CHECK(a != nullptr && a->size() == 2 && (*a)[0].is_integer() &&
                         (*a)[1].is_integer(),
                     msg);
    const int lo = static_cast<int>(*(*a)[0].value<int64_t>()),
              hi = static_cast<int>(*(*a)[1].value<int64_t>());
    LEXP_INPUT_CHECK(lo >= 1 && lo <= hi, msg);
    return {lo, hi};
  }
  std::map<std::string, double> NumberTable(const std::string& key) {
    std::map<std::string, double> out;
    const toml::node* n = Get(key);
    if (!n) return out;
    const toml::table* t = n->as_table();
    LEXP_INPUT_CHECK(t != nullptr, where_ + "." + key + " must be a table of numbers by run label");
    for (const auto& [k, v] : *t) {
      LEXP_INPUT_CHECK(v.is_number(), where_ + "." + key + "." + std::string(k.str()) +
                                          " must be a number");
      out[std::string(k.str())] = *v.value<double>();
    }
    return out;
  }
  void Finish() const {
    for (const auto& [k, v] : t_) {
      const std::string key(k.str());
      if (std::find(allowed_.begin(), allowed_.end(), key) != allowed_.end()) continue;
      std::string list;
      for (const auto& a : allowed_) list += (list.empty() ? "" : ", ") + a;
      FailInput(where_ + ": unknown key '" + key + "'; allowed: " + list);
    }
  }

 private:
  const toml::node* Get(const std::string& key) {
    LEXP_CHECK(std::find(allowed_.begin(), allowed_.end(), key) != allowed_.end(),
               "claim reader: key '" + key + "' read but not declared");
    return t_.get(key);
  }
  const toml::table& t_;
  std::string where_;
  std::vector<std::string> allowed_;
};

const toml::table& RequiredTable(const toml::table& root, const std::string& name,
                                 const std::string& source) {
  const toml::node* n = root.get(name);
  LEXP_INPUT_CHECK(n != nullptr, "claim '" + source + "': table [" + name + "] is missing");
  LEXP_INPUT_CHECK(n->is_table(), "claim '" + source + "': " + name + " must be a table [" +
                                      name + "]");
  return *n->as_table();
}

bool IsClaimId(const std::string& id) {
  return id.size() >= 2 && std::isupper(static_cast<unsigned char>(id[0])) &&
         std::all_of(id.begin() + 1, id.end(),
                     [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); });
}

}  // namespace

std::string Comparison::Text() const {
  return (premise ? "requires " : "") + a +
         (equivalent ? " ~ " : greater ? " > " : " < ") + b +
         (equivalent ? fmt::format(" within {}", margin) : "") +
         (lo > 0 ? " at " + std::to_string(lo) + ".." + std::to_string(hi) : "");
}

LabelMetric SplitLabelMetric(const std::string& label, const std::string& criterion_metric) {
  const auto at = label.find('@');
  if (at == std::string::npos) return {label, criterion_metric};
  return {label.substr(0, at), label.substr(at + 1)};
}

namespace {
bool IsLimitMetric(const std::string& m) {
  return m.size() > 6 && m.compare(m.size() - 6, 6, "_limit") == 0;
}
// A compared label: a run label, or LABEL@METRIC (only among the *_limit metrics).
bool IsComparedLabel(const std::string& label) {
  const LabelMetric lm = SplitLabelMetric(label, "");
  return IsPlainFileName(lm.label) && lm.metric.find('@') == std::string::npos &&
         (label.find('@') == std::string::npos || !lm.metric.empty());
}
}  // namespace

Comparison ParseComparison(const std::string& full_text, const std::string& where) {
  Comparison c;
  // A premise's text as Text() writes it (verdict files): "requires A > B".
  c.premise = full_text.rfind("requires ", 0) == 0;
  const std::string text = c.premise ? full_text.substr(9) : full_text;
  std::string body = text;
  if (const auto at = text.rfind(" at "); at != std::string::npos) {
    const std::string span = text.substr(at + 4);
    const auto dots = span.find("..");
    const std::string msg = where + ": '" + text +
                            "': a comparison's own span is \"at LO..HI\", two lengths with "
                            "1 <= LO <= HI";
    LEXP_INPUT_CHECK(dots != std::string::npos, msg);
    try {
      size_t u1 = 0, u2 = 0;
      c.lo = std::stoi(span.substr(0, dots), &u1);
      c.hi = std::stoi(span.substr(dots + 2), &u2);
      LEXP_INPUT_CHECK(u1 == dots && u2 == span.size() - dots - 2, msg);
    } catch (const std::logic_error&) {
      FailInput(msg);
    }
    LEXP_INPUT_CHECK(c.lo >= 1 && c.lo <= c.hi, msg);
    body = text.substr(0, at);
  }
  const auto gt = body.find(" > "), lt = body.find(" < "), eq = body.find(" ~ ");
  LEXP_INPUT_CHECK((gt != std::string::npos) + (lt != std::string::npos) +
                           (eq != std::string::npos) ==
                       1,
                   where + ": '" + text +
                       "' is not a comparison; write \"A > B\" or \"A < B\" with two run labels "
                       "(optionally \"A > B at LO..HI\"), or a control \"A ~ B within D\"");
  const auto at = gt != std::string::npos ? gt : lt != std::string::npos ? lt : eq;
  c.greater = gt != std::string::npos;
  c.equivalent = eq != std::string::npos;
  c.a = body.substr(0, at);
  c.b = body.substr(at + 3);
  if (c.equivalent) {
    const std::string msg = where + ": '" + text +
                            "': a control is \"A ~ B within D\", D a margin > 0 in the metric's "
                            "units (and optionally \"at LO..HI\")";
    const auto within = c.b.find(" within ");
    LEXP_INPUT_CHECK(within != std::string::npos, msg);
    try {
      size_t used = 0;
      const std::string d = c.b.substr(within + 8);
      c.margin = std::stod(d, &used);
      LEXP_INPUT_CHECK(used == d.size() && std::isfinite(c.margin) && c.margin > 0, msg);
    } catch (const std::logic_error&) {
      FailInput(msg);
    }
    c.b = c.b.substr(0, within);
  }
  try {
    size_t used = 0;
    c.b_value = std::stod(c.b, &used);
    c.b_is_number = used == c.b.size() && std::isfinite(c.b_value);
  } catch (const std::exception&) {
    c.b_is_number = false;
  }
  LEXP_INPUT_CHECK(IsComparedLabel(c.a) && (c.b_is_number || IsComparedLabel(c.b)),
                   where + ": '" + text + "': the left side must be a run label (rope, rope-pi, "
                           "nope without its -seed<s>), the right a label or a number");
  return c;
}

Claim ParseClaim(const std::string& toml_text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream s;
    s << "claim '" << source << "' is not valid TOML: " << e.description() << " (line "
      << e.source().begin.line << ", column " << e.source().begin.column << ")";
    FailInput(s.str());
  }
  const std::string where = "claim '" + source + "'";
  for (const auto& [k, v] : root) {
    const std::string key(k.str());
    LEXP_INPUT_CHECK(key == "claim" || key == "stage" || key == "criterion" ||
                         key == "budget" || key == "trend",
                     where + ": unknown table '" + key +
                         "'; allowed: [claim], [[stage]], [criterion], [trend], [budget]");
  }
  Claim c;
  c.file = source;
  {
    TableReader r(RequiredTable(root, "claim", source), where + " [claim]",
                  {"id", "name", "statement", "source", "published", "protocol", "deviations",
                   "testable", "untestable_reason"});
    c.id = r.String("id", true);
    LEXP_INPUT_CHECK(IsClaimId(c.id), where + " [claim].id = '" + c.id +
                                          "' must be a capital letter and a number (P2, X5, M3)");
    c.name = r.String("name", true);
    LEXP_INPUT_CHECK(IsPlainFileName(c.name),
                     where + " [claim].name = '" + c.name +
                         "' must be a plain name (letters, digits, . _ + -)");
    c.statement = r.String("statement", true);
    c.source = r.String("source", true);
    c.published = r.String("published", true);
    c.protocol = r.String("protocol", true);
    c.deviations = r.String("deviations", false);
    c.testable = r.Bool("testable", true);
    c.untestable_reason = r.String("untestable_reason", false);
    LEXP_INPUT_CHECK(c.testable || !c.untestable_reason.empty(),
                     where + " [claim]: testable = false needs untestable_reason");
    r.Finish();
  }
  {
    const toml::node* n = root.get("stage");
    LEXP_INPUT_CHECK(n != nullptr || !c.testable,
                     where + ": no [[stage]]: a testable claim runs at least one recipe");
    if (n) {
      const toml::array* stages = n->as_array();
      LEXP_INPUT_CHECK(stages != nullptr && stages->is_array_of_tables(),
                       where + ": stage must be an array of tables ([[stage]])");
      std::set<std::string> seen;
      for (size_t i = 0; i < stages->size(); ++i) {
        const std::string w = fmt::format("{} [[stage]] {}", where, i + 1);
        TableReader r(*(*stages)[i].as_table(), w,
                      {"name", "recipe", "variants", "set", "smoke", "full", "init_from",
                       "evaluate", "scales", "evaluations", "diagnose"});
        ClaimStage s;
        s.name = r.String("name", true);
        LEXP_INPUT_CHECK(IsPlainFileName(s.name), w + ".name = '" + s.name +
                                                      "' must be a plain name");
        LEXP_INPUT_CHECK(seen.insert(s.name).second, w + ".name = '" + s.name +
                                                         "' is used by an earlier stage");
        s.evaluate = r.String("evaluate", false);
        s.recipe = r.String("recipe", s.evaluate.empty());
        s.set = r.Strings("set");
        s.smoke = r.Strings("smoke");
        s.full = r.Strings("full");
        s.variants = r.Strings("variants");
        s.init_from = r.String("init_from", false);
        s.scales = r.Strings("scales");
        s.evaluations = r.Strings("evaluations");
        s.diagnose = r.Strings("diagnose");
        if (s.EvaluatesOnly()) {
          LEXP_INPUT_CHECK(s.recipe.empty(),
                           w + ": give either recipe (a stage that trains) or evaluate (a stage "
                               "that evaluates an earlier stage's runs again), not both");
          LEXP_INPUT_CHECK(seen.count(s.evaluate) && s.evaluate != s.name,
                           w + ".evaluate = '" + s.evaluate + "' is not an earlier stage's name");
          LEXP_INPUT_CHECK(s.variants.empty() && s.init_from.empty(),
                           w + ": a stage that evaluates (evaluate = '" + s.evaluate +
                               "') takes no variants or init_from: it evaluates every run of "
                               "that stage");
          LEXP_INPUT_CHECK((!s.scales.empty()) + (!s.evaluations.empty()) + s.Diagnoses() <= 1,
                           w + ": give one of scales (RoPE scaling rules), evaluations (named "
                               "overrides) or diagnose (interventions of lexp diagnose)");
          const std::vector<std::string>& known = DiagnosisInterventions();
          LEXP_INPUT_CHECK(!s.Diagnoses() || (s.set.empty() && s.smoke.empty() && s.full.empty()),
                           w + ": a stage that diagnoses takes no set, smoke or full: the "
                               "diagnosis replays each run as it was trained and evaluated");
          for (const auto& d : s.diagnose)
            LEXP_INPUT_CHECK(std::find(known.begin(), known.end(), d) != known.end() &&
                                 std::count(s.diagnose.begin(), s.diagnose.end(), d) == 1,
                             fmt::format("{}.diagnose: '{}' is not an intervention of lexp "
                                         "diagnose, or is named twice; allowed: {}",
                                         w, d, fmt::join(known, ", ")));
          std::set<std::string> names;
          for (const auto& e : s.evaluations) {
            const RecipeConfig::Variant v = ParseNamedVariant(e);
            LEXP_INPUT_CHECK(IsPlainFileName(v.value) && names.insert(v.value).second,
                             w + ".evaluations: '" + e +
                                 "' needs a plain name of its own before its ':' (letters, "
                                 "digits, . _ -)");
          }
          LEXP_INPUT_CHECK(!s.scales.empty() || !s.evaluations.empty() || s.Diagnoses(),
                           w + ".scales is missing: list the RoPE scaling rules to evaluate "
                               "under, e.g. [\"none\", \"pi:factor=4\", \"ntk:factor=4\"] "
                               "(lexp list scalings), or give evaluations, named sets of "
                               "overrides [\"full\", \"window: model.pattern=...\"], or "
                               "diagnose, interventions of lexp diagnose [\"distance_clamp\", "
                               "\"window\"]");
          for (const auto& sc : s.scales) {
            try {
              ParseScaleSpec(sc);
            } catch (const InputError& e) {
              FailInput(w + ".scales: " + e.what());
            }
          }
          LEXP_INPUT_CHECK(
              std::set<std::string>(s.scales.begin(), s.scales.end()).size() == s.scales.size(),
              w + ".scales names a rule twice");
        } else {
          try {
            StageRecipeText(s.recipe);  // refuses an unknown name or file, naming it
          } catch (const InputError& e) {
            FailInput(w + ".recipe: " + e.what());
          }
          LEXP_INPUT_CHECK(s.scales.empty() && s.evaluations.empty() && !s.Diagnoses(),
                           w + ".scales, .evaluations and .diagnose belong to a stage that "
                               "evaluates (evaluate = \"STAGE\"), not to one that trains");
        }
        if (!s.init_from.empty()) {
          const auto slash = s.init_from.find('/');
          LEXP_INPUT_CHECK(slash != std::string::npos &&
                               seen.count(s.init_from.substr(0, slash)) &&
                               s.init_from.substr(0, slash) != s.name &&
                               IsPlainFileName(WithSeed(s.init_from.substr(slash + 1), "1")),
                           w + ".init_from = '" + s.init_from +
                               "' must be EARLIER_STAGE/RUN_FILE (a run file of an earlier stage; "
                               "{seed} in it: the fine-tuning seed's own pre-training)");
        }
        r.Finish();
        c.stages.push_back(std::move(s));
      }
    }
  }
  if (c.testable) {
    LEXP_INPUT_CHECK(!RequiredTable(root, "criterion", source).contains("paired"),
                     where + " [criterion].paired: a claim does not say whether its comparisons "
                             "are paired; they are, exactly when the compared runs of a seed come "
                             "from the same trained model or pre-training (lexp reproduce --help)");
    TableReader r(RequiredTable(root, "criterion", source), where + " [criterion]",
                  {"stage", "task", "metric", "lengths", "relative_to", "seeds", "holds", "requires",
                   "also", "published", "compute", "at_compute", "reach"});
    ClaimCriterion& k = c.criterion;
    k.stage = r.String("stage", false, c.stages.back().name);
    LEXP_INPUT_CHECK(std::any_of(c.stages.begin(), c.stages.end(),
                                 [&](const ClaimStage& s) { return s.name == k.stage; }),
                     where + " [criterion].stage = '" + k.stage + "' is not a stage's name");
    k.task = r.String("task", false);
    k.metric = r.String("metric", true);
    const CriterionMetric& metric = FindCriterionMetric(k.metric, where + " [criterion].metric");
    const bool judges_diagnosis =
        std::find_if(c.stages.begin(), c.stages.end(), [&](const ClaimStage& s) {
          return s.name == k.stage;
        })->Diagnoses();
    LEXP_INPUT_CHECK(judges_diagnosis == (k.metric == "gap_share"),
                     where + " [criterion]: metric 'gap_share' reads /diagnosis, which only a stage "
                             "with diagnose = [...] writes; such a stage is judged by gap_share "
                             "(stage '" + k.stage + "', metric '" + k.metric + "')");
    std::tie(k.length_lo, k.length_hi) = r.Range("lengths");
    LEXP_INPUT_CHECK(k.length_lo > 0, where + " [criterion]: key 'lengths' is missing ([LO, HI])");
    std::tie(k.relative_lo, k.relative_hi) = r.Range("relative_to");
    k.compute = r.String("compute", false);
    k.at_compute = r.Number("at_compute", 0);
    if (!k.compute.empty()) {
      std::string axes;
      for (const auto& [axis, meaning] : ComputeAxes()) axes += (axes.empty() ? "" : ", ") + axis;
      LEXP_INPUT_CHECK(std::any_of(ComputeAxes().begin(), ComputeAxes().end(),
                                   [&](const auto& a) { return a.first == k.compute; }),
                       where + " [criterion].compute = '" + k.compute + "'; allowed: " + axes);
      LEXP_INPUT_CHECK(metric.from_eval, where + " [criterion].compute: metric '" + k.metric +
                                             "' is not evaluated during training; allowed with "
                                             "compute: exact_match, token_accuracy, loss");
      LEXP_INPUT_CHECK(k.relative_lo == 0, where +
                                               " [criterion]: relative_to and compute "
                                               "exclude each other");
    }
    LEXP_INPUT_CHECK(k.at_compute >= 0 && (k.at_compute == 0 || !k.compute.empty()),
                     where + " [criterion].at_compute must be a positive number, with compute");
    k.reach = r.Number("reach", std::numeric_limits<double>::quiet_NaN());
    if (!std::isnan(k.reach)) {
      LEXP_INPUT_CHECK(!k.compute.empty() && k.at_compute == 0,
                       where + " [criterion].reach scores the compute at which the metric "
                               "reaches it: it needs compute and excludes at_compute");
      LEXP_INPUT_CHECK(std::isfinite(k.reach) && (!metric.is_fraction || (k.reach > 0 && k.reach <= 1)),
                       where + " [criterion].reach must be a finite number" +
                           (metric.is_fraction ? std::string(" in (0, 1] for a fraction") : ""));
    }
    k.seeds = r.String("seeds", false, "mean");
    LEXP_INPUT_CHECK(k.seeds == "mean" || k.seeds == "max",
                     where + " [criterion].seeds = '" + k.seeds + "'; allowed: mean, max");
    LEXP_INPUT_CHECK(std::isnan(k.reach) || k.seeds == "mean",
                     where + " [criterion]: reach takes seeds = \"mean\" (a best seed of a "
                             "censored score has no interval)");
    k.holds = r.Strings("holds");
    LEXP_INPUT_CHECK(!k.holds.empty(), where + " [criterion].holds is empty: list the "
                                               "comparisons (\"A > B\") the claim makes");
    for (const auto& h : k.holds)
      LEXP_INPUT_CHECK(!ParseComparison(h, where + " [criterion].holds").equivalent,
                       where + " [criterion].holds: '" + h +
                           "' is a control (A ~ B within D); list it under requires, where a "
                           "control not shown equivalent makes the claim not testable");
    k.premises = r.Strings("requires");
    for (const auto& p : k.premises) ParseComparison(p, where + " [criterion].requires");
    k.also = r.Strings("also");
    for (const auto& a : k.also)
      LEXP_INPUT_CHECK(IsComparedLabel(a), where + " [criterion].also: '" + a +
                                               "' is not a run label");
    k.published = r.NumberTable("published");
    // LABEL@METRIC: another *_limit metric than the criterion's (both lengths).
    std::vector<std::string> compared = k.also;
    for (const auto& list : {k.holds, k.premises})
      for (const auto& h : list) {
        const Comparison cmp = ParseComparison(h, where + " [criterion]");
        compared.push_back(cmp.a);
        if (!cmp.b_is_number) compared.push_back(cmp.b);
      }
    for (const auto& label : compared) {
      if (label.find('@') == std::string::npos) continue;
      const LabelMetric lm = SplitLabelMetric(label, k.metric);
      FindCriterionMetric(lm.metric, where + " [criterion]: '" + label + "': the metric after @");
      LEXP_INPUT_CHECK(IsLimitMetric(lm.metric) && IsLimitMetric(k.metric),
                       where + " [criterion]: '" + label + "' scores " + lm.label + " by " +
                           lm.metric + " under metric '" + k.metric +
                           "'; a label's own metric (LABEL@METRIC) is allowed only among the "
                           "*_limit metrics (loss_limit, exact_match_limit, "
                           "token_accuracy_limit), all in lengths");
    }
    r.Finish();
  }
  if (const toml::node* n = root.get("trend")) {
    LEXP_INPUT_CHECK(n->is_table(), where + ": trend must be a table [trend]");
    TableReader r(*n->as_table(), where + " [trend]", {"stage", "smoke", "full"});
    ClaimTrend& t = c.trend;
    t.stage = r.String("stage", true);
    const auto stage = std::find_if(c.stages.begin(), c.stages.end(),
                                    [&](const ClaimStage& s) { return s.name == t.stage; });
    LEXP_INPUT_CHECK(stage != c.stages.end() && !stage->EvaluatesOnly(),
                     where + " [trend].stage = '" + t.stage +
                         "' must be the name of a stage that trains");
    t.smoke = r.PositiveInts("smoke");
    t.full = r.PositiveInts("full");
    r.Finish();
  }
  if (const toml::node* n = root.get("budget")) {
    LEXP_INPUT_CHECK(n->is_table(), where + ": budget must be a table [budget]");
    TableReader r(*n->as_table(), where + " [budget]", {"smoke_minutes", "full_minutes"});
    c.smoke_minutes = r.Number("smoke_minutes", 0);
    c.full_minutes = r.Number("full_minutes", 0);
    r.Finish();
  }
  return c;
}

std::string BuiltinRecipe(const std::string& name) {
  std::string names;
  for (const auto& f : EmbeddedRecipes()) {
    if (f.name == name) return f.text;
    names += (names.empty() ? "" : ", ") + f.name;
  }
  FailInput("recipe '" + name + "' is not one of experiments/recipes/: " + names);
}

bool IsTomlPath(const std::string& name) {
  return name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0;
}

std::string StageRecipeText(const std::string& recipe) {
  if (!IsTomlPath(recipe)) return BuiltinRecipe(recipe);
  std::ifstream in(recipe);
  LEXP_INPUT_CHECK(in.good(), "cannot read the recipe file '" + recipe + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<Claim> BuiltinClaims() {
  std::vector<Claim> out;
  for (const auto& f : EmbeddedReproductions())
    out.push_back(ParseClaim(f.text, "experiments/reproductions/" + f.name + ".toml"));
  std::sort(out.begin(), out.end(), ClaimBefore);
  return out;
}

bool ClaimBefore(const Claim& a, const Claim& b) {
  auto rank = [](const Claim& c) {
    const std::string order = "PXM";
    const auto at = order.find(c.id[0]);
    return std::make_tuple(at == std::string::npos ? order.size() : at, c.id[0],
                           std::stoi(c.id.substr(1)), c.name);
  };
  return rank(a) < rank(b);
}

}  // namespace lexp
