// The verdict on a claim, from its run files alone (no model is rebuilt): each run label's score,
// its 95% interval, and every comparison of the claim's criterion.
//
// Score of one run, by the criterion's metric (CriterionMetrics):
//   /eval metrics (exact_match, token_accuracy, loss): the mean over the evaluated lengths in
//     [lo, hi]; with relative_to = [lo', hi'] that mean divided by the mean over [lo', hi'] (loss
//     growth: 1 = flat);
//   js_to_reference: the same mean over the probe lengths of /analysis/geometry, where a length's
//     value is Kazemnejad et al.'s distance between two models' attention: per layer the smallest
//     Jensen-Shannon divergence over pairs of heads (this run's, the reference NoPE run's), mean
//     over layers;
//   attention_entropy: the same mean over the probe lengths of /analysis/entropy_mean (attention
//     entropy over the visible keys, mean over queries, probe sequences, layers and heads);
//   sink_mass, shift_move, position_probe_error, *_limit: the same mean over the lengths run_scores.h reads
//     them at (the probe lengths; the training length);
//   with compute = tokens | flops | seconds: the metric of /train/eval_history at the lengths in
//     [lo, hi] (their mean at each evaluation) against the training compute spent before the
//     evaluation, linearly interpolated at one compute C, the same for every run (at_compute, or
//     the least total compute of the compared runs): a comparison at equal compute.
// Runs are grouped by label (the `label` attribute without its "-seed<s>"); only completed runs
// count. Over a group's seeds the score is their mean (seeds = "mean") or the best one
// (seeds = "max": the largest accuracy, the smallest loss), as the claim's source reports.
// A label's interval (95%, shown in the table):
//   mean over n >= 2 seeds: Student-t over the seeds' scores (an accuracy's clipped to [0, 1], a
//     loss's or divergence's at 0);
//   one run of an /eval accuracy without relative_to: Clopper-Pearson of that run's pooled counts
//     (sum over the lengths of score x samples out of the samples); the best of k seeds: the same
//     for the best seed at level 1 - 0.05/k (Bonferroni over the k seeds it was chosen from, so
//     the selection widens the interval);
//   otherwise (a loss of one run, a ratio, a divergence, a value at a compute): none.
// VerdictRules() below states how comparisons are tested and claims decided; a comparison
// "A > B at LO..HI" scores both sides over its own span instead.
#pragma once

#include <string>
#include <vector>

#include "experiments/reproduce/claim.h"
#include "experiments/reproduce/run_scores.h"

namespace lexp {

// The compute axes of a criterion judged at equal compute, with their units.
const std::vector<std::pair<std::string, std::string>>& ComputeAxes();

// The verdict rules in words, for REPRODUCTIONS.md and `lexp reproduce --help`.
std::string VerdictRules();

struct GroupScore {
  std::string label;
  std::vector<int> seeds;           // of the completed runs
  std::vector<double> per_seed;     // their scores, in seed order
  // Per seed: the trained model (weights_from) or the pre-training (train.init_from) its run comes
  // from; "" for a model trained from scratch. Two labels whose runs of a seed share it are the
  // same models (or one pre-training) measured two ways: their comparison is paired.
  std::vector<std::string> origins;
  int incomplete = 0;               // runs of the label that did not complete (diverged, ...)
  int censored = 0;                 // completed runs whose score is a lower bound: with reach,
                                    // never reached it; a *_limit, passed every length
  double score = 0, lo = 0, hi = 0; // over seeds, with its 95% interval
  std::string interval;             // how the interval was made, for the table
  bool has_interval = false;         // false: none (lo = hi = score stand for the point)
  // What the interval is made from, to make it at another level: the mean over seeds, or one
  // run's counts (successes of trials; the best of `candidates` seeds).
  bool by_mean = false;
  long trials = 0, successes = 0;
  int candidates = 1;
  bool is_fraction = false;
  bool signed_score = false;  // may fall below 0 (gap_share): its interval is not cut at 0
  // A *_limit metric: each seed's value is a length of the evaluation grid, so seeds often tie.
  bool grid_readings = false;
  // The metric's curve: at every evaluated length, or with a compute criterion at every
  // evaluation during training against the compute spent before it (x: the mean over the runs);
  // mean, min and max over the completed runs.
  std::vector<double> x, curve_mean, curve_min, curve_max;
};

// A side's score and 95% interval over the comparison's span.
struct SideScore {
  double score = 0, lo = 0, hi = 0;
};

struct ComparisonResult {
  Comparison comparison;
  bool in_direction = false;
  SideScore a, b;  // A's and B's (B a number: the number)
  // A - B (B a number: A - the number) with its 95% interval, and the test that made it: "paired
  // t" (over `paired_seeds` seeds of shared models), "Welch t", "MOVER", "Student-t" or
  // "Clopper-Pearson" against a number, or "none" (a side without an interval: it orders, it
  // cannot be significant).
  SideScore difference;
  std::string test;
  int paired_seeds = 0;
  // Significant at 95% on the claimed side, or against it; and the same at Bonferroni's level
  // over the claim's comparisons (the "some comparison" rules).
  bool significant_for = false, significant_against = false;
  bool family_for = false, family_against = false;
};

struct Verdict {
  std::string verdict;  // reproduced | partly | no effect | contradicted | not testable
  std::string reason;   // one line: why
  std::vector<GroupScore> groups;  // the labels compared (then `also`), in order of appearance
  std::vector<ComparisonResult> comparisons;
  int train_max_length = 0;  // of the judged runs (the largest), for the figure
  double at_compute = 0;     // a compute criterion: the compute C every run was judged at
};

// The run files (recursively) of `runs_dir`: every *.h5 with a lexp-run format attribute that is
// not a summary or checkpoint (evaluations under a rule included: rope-seed1+pix4.h5 groups
// under rope+pix4).
std::vector<std::string> ClaimRunFiles(const std::string& runs_dir);

// Judges `criterion` on these run files (a claim's: the judged stage's plan, of criterion.task);
// `where` names them in messages.
Verdict JudgeCriterion(const ClaimCriterion& criterion, const std::vector<std::string>& run_files,
                       const std::string& where);
// The same on every run file of runs_dir (ClaimRunFiles).
Verdict JudgeCriterion(const ClaimCriterion& criterion, const std::string& runs_dir);

}  // namespace lexp
