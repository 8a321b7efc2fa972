// A published claim that lexp reproduces (experiments/reproductions/<id>_<name>.toml): what the
// paper says, the runs that test it (stages, each a recipe of experiments/recipes/ with overrides
// per budget), and the criterion of the verdict, written down before anything runs.
//
//   [claim]      id, name, statement, source, published, protocol, deviations, testable (bool),
//                untestable_reason
//   [[stage]]    name, recipe, variants = [...], set = [...], smoke = [...], full = [...],
//                init_from = "STAGE/FILE"; or, instead of a recipe, evaluate = "STAGE" with
//                scales = ["none", "pi:factor=4", ...] (once per RoPE scaling rule) or
//                evaluations = ["full", "lambda: model.pattern=\"lambda\"; ..."] (once per named
//                set of overrides): that earlier stage's trained runs evaluated again (lexp eval),
//                with `set` as evaluation overrides; or diagnose = ["distance_clamp", ...]
//                (interventions of lexp diagnose): each run diagnosed (a copy with /diagnosis)
//   [criterion]  see experiments/reproduce/criterion.h
//   [trend]      stage, smoke = [steps...], full = [steps...]: the claim judged again with that
//                stage's train.steps at each value (its own runs under steps<N>/), beside the
//                budget's own number of steps
//   [budget]     full_minutes (measured on 2 cores; the header says on what); smoke_minutes,
//                the smoke overrides' time before the smoke budget capped training at
//                kSmokeSteps (experiments/reproduce/gallery.h), is read but no longer printed
//
// Errors name the file and the key, with what is allowed.
#pragma once

#include <limits>
#include <map>
#include <string>
#include <vector>

namespace lexp {

// One recipe run of a claim. Its runs go to <claim dir>/runs/<name>/.
struct ClaimStage {
  std::string name;    // plain file name: the stage's directory
  std::string recipe;  // a recipe of experiments/recipes/ by name ("kazemnejad"), or a path *.toml
  std::vector<std::string> set;    // overrides at every budget
  std::vector<std::string> smoke;  // overrides of the smoke budget, after `set`
  std::vector<std::string> full;   // overrides of the full budget, after `set`
  std::vector<std::string> variants;  // the recipe's run.variants kept, by NAME (empty: all)
  // "STAGE/FILE": train.init_from is that earlier stage's run file (fine-tuning chains).
  std::string init_from;
  // An evaluation-only stage (no recipe, no training): every run of the earlier stage `evaluate`
  // is evaluated again under each of `scales` (lexp eval --scale; "none" leaves the frequencies
  // unchanged, "none:log_n=true" adds only log-n scaling), with `set`, `smoke` and `full` as the
  // evaluation's overrides. Its files are <label>+<rule>[x<factor>][-<option><value>].h5 (rope+pix4,
  // rope+none, rope+none-log_ntrue), the labels its criterion names.
  // Or under each named set of overrides of `evaluations` ("NAME: key=value; ..."), files
  // <label>+<NAME>.h5: the same trained models measured several ways (attention patterns at
  // evaluation, say), which the verdict then compares paired.
  // Or diagnosed (lexp diagnose, experiments/replay/diagnosis.h) with the interventions of
  // `diagnose`: each run copied to <run file name> of this stage with /diagnosis written into it;
  // its labels are <label>+<intervention> (rope+distance_clamp), scored by metric gap_share.
  std::string evaluate;
  std::vector<std::string> scales;
  std::vector<std::string> evaluations;
  std::vector<std::string> diagnose;
  bool Diagnoses() const { return !diagnose.empty(); }
  bool EvaluatesOnly() const { return !evaluate.empty(); }
};

// What a claim compares (experiments/reproduce/criterion.h says how it is judged).
struct ClaimCriterion {
  std::string stage;    // the stage whose runs are judged (default: the last)
  std::string task;     // in a task sweep, the task whose runs are judged ("" = the only one)
  std::string metric;   // CriterionMetrics(): exact_match | token_accuracy | loss | js_to_reference |
                        // attention_entropy | sink_mass | shift_move | position_probe_error
  int length_lo = 0, length_hi = 0;     // mean over the evaluated lengths in [lo, hi]
  // Judged at equal training compute rather than at the end of training: "tokens", "flops" or
  // "seconds" ("" = off). The metric is then read from /train/eval_history at the lengths in
  // [lo, hi] against the training compute spent before each evaluation, and taken at
  // at_compute (0: the least total compute of any compared run, where every run has a value).
  std::string compute;
  double at_compute = 0;
  // With compute: the score is instead the compute spent when the metric first reaches this value
  // (at or below it for loss, at or above for a fraction), linearly between the evaluations
  // around it (YaRN's "steps to a loss"); a run that never reaches it counts its whole training,
  // a lower bound (censored). NaN: off.
  double reach = std::numeric_limits<double>::quiet_NaN();
  int relative_lo = 0, relative_hi = 0; // optional: divided by the mean over [lo, hi] (0 = none)
  std::string seeds = "mean";           // over seeds: mean | max
  std::vector<std::string> holds;       // "A > B" / "A < B" between run labels
  // The claim's premises ([criterion].requires), in the same form: what must be established for
  // the claim to be tested at all (e.g. a task learnt at the training lengths before its failure
  // beyond them means anything). One not significant in its direction makes the claim "not
  // testable" with that premise as the reason, whatever the holds show.
  std::vector<std::string> premises;
  std::vector<std::string> also;        // labels measured and drawn beside them, not compared
  std::map<std::string, double> published;  // the paper's number per label, drawn as a reference
};

// The verdict against training steps: the literature trains far longer than lexp's budgets, so a
// claim may be judged again at other numbers of steps of one stage (every stage rerun into
// <claim dir>/steps<N>/runs/, the same criterion), to show the trend rather than one point.
struct ClaimTrend {
  std::string stage;               // a stage that trains; empty: no trend
  std::vector<int> smoke, full;    // train.steps values at each budget (beside the budget's own)
};

struct Claim {
  std::string file;  // where it was read from, for messages
  std::string id, name, statement, source, published, protocol, deviations;
  bool testable = true;
  std::string untestable_reason;
  std::vector<ClaimStage> stages;
  ClaimCriterion criterion;
  ClaimTrend trend;
  double smoke_minutes = 0;  // before the smoke budget became a pipeline check; not printed
  double full_minutes = 0;
  // "P2_kazemnejad_copy": the claim's directory under data/reproductions/.
  std::string DirName() const { return id + "_" + name; }
};

// Parses a claim file; `source` names it in errors.
Claim ParseClaim(const std::string& toml_text, const std::string& source);

// One comparison of criterion.holds: "A > B" or "A < B" between two run labels, or between a
// label and a number ("rope-full > 1": a loss ratio that rises); "... at LO..HI" judges it over
// its own span of lengths instead of the criterion's (a claim about short and long lengths).
struct Comparison {
  std::string a, b;
  bool greater = true;   // ">" : A above B
  bool b_is_number = false;
  double b_value = 0;    // B when it is a number
  int lo = 0, hi = 0;    // its own span of lengths (0: the criterion's)
  bool premise = false;  // one of [criterion].requires; its text then starts with "requires "
  // "A ~ B within D": a control, A and B equivalent within the margin D (a premise only: the
  // claim's mechanism absent, its readings must agree), tested by two one-sided tests.
  bool equivalent = false;
  double margin = 0;
  std::string Text() const;
};
Comparison ParseComparison(const std::string& text, const std::string& where);

// A label scored by another metric than the criterion's: "LABEL@METRIC" (rope+text@loss_limit),
// allowed among the *_limit metrics, all lengths (an effective context by one score against
// another's). Without "@": the label and the criterion's metric.
struct LabelMetric {
  std::string label, metric;
};
LabelMetric SplitLabelMetric(const std::string& label, const std::string& criterion_metric);

// The gallery's order: by id, P then X then M then any other letter, numbers in order (then name).
bool ClaimBefore(const Claim& a, const Claim& b);
// The claims built into lexp (experiments/reproductions/*.toml, embedded at build time), in the
// gallery's order.
std::vector<Claim> BuiltinClaims();
// The text of a recipe of experiments/recipes/ by name (embedded); an input error lists the names.
std::string BuiltinRecipe(const std::string& name);
// A name that is a file path: it ends in .toml (a claim or recipe file rather than a built-in).
bool IsTomlPath(const std::string& name);
// A stage's recipe text: the built-in one of that name, or the file when the name ends in .toml.
std::string StageRecipeText(const std::string& recipe);

}  // namespace lexp
