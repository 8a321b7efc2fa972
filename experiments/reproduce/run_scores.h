// What a claim's criterion reads from one run file: the metrics it can judge and, for a run, its
// label, seed, origin and the metric's values at each length (or at each evaluation during
// training). Where each metric is read:
//   exact_match, token_accuracy, loss: /eval at every evaluated length (with a compute criterion,
//     /train/eval_history against the compute spent before each evaluation);
//   js_to_reference: /analysis/geometry/length_<n>/js_vs_reference at each probe length, per layer
//     the smallest divergence over pairs of heads, mean over layers (Kazemnejad et al. 2023);
//   attention_entropy: /analysis/entropy_mean at each probe length;
//   sink_mass: /analysis/geometry/length_<n>/head_sink_mass at each probe length, the attention
//     on the first token, mean over layers and heads (StreamingLLM's attention sinks; uniform
//     attention over a causal sequence of T tokens gives (H_T - 1)/(T - 1): 0.059 at 64);
//   gap_share: /diagnosis/share of a diagnosed copy of the run (lexp diagnose), per intervention
//     at each diagnosed length beyond N: the share of the loss gap to the in-distribution
//     reference the intervention closes; the labels are <label>+<intervention>; a length whose
//     gap is not significant has none (within the criterion's lengths the run is unscored);
//   shift_move: /analysis/position_shift/row_l1 at the first shift (16) at each probe length,
//     mean over layers and heads: how far attention moves when every position id is shifted
//     (Wang et al. 2024's Eq. 4 per query row; 0 for an exactly relative encoding);
//   position_probe_error: /analysis/position_probes, one value per run at its training length:
//     the smallest over the residual streams after the first block (1..L) of the index probe's
//     RMSE on held-out sequences of the training lengths over the RMSE of the fitted sequences'
//     mean (index_rmse_held_out / index_chance_held_out; 0: position read exactly, 1: no linear
//     signal) (Haviv et al. 2022);
//   loss_limit, exact_match_limit, token_accuracy_limit: /eval, one value per run at its training
//     length N: `lexp base-law`'s extrapolation limit (Liu et al. 2023), in task lengths, the
//     longest evaluated length beyond N up to which the score stays within a relative 0.1 of its
//     value at the longest length <= N (a loss <= 1.1 x it, an accuracy >= 0.9 x it; that
//     length when the first longer one fails); censored, a lower bound, when every evaluated
//     length passes; a run that did not learn the task (base-law's rule) is not scored, its
//     state "not learnt".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/reproduce/claim.h"

namespace lexp {

// A metric a criterion can judge: where it is read and which way is better.
struct CriterionMetric {
  std::string name;
  std::string meaning;    // for messages, the verdict table and the figure's axis
  bool larger_is_better;  // accuracies; a loss or a divergence: smaller
  bool is_fraction;       // in [0, 1], one success count per sequence (Clopper-Pearson applies)
  bool from_eval;         // an /eval dataset (also in /train/eval_history: compute criteria)
};
const std::vector<CriterionMetric>& CriterionMetrics();
// The metric of that name; an input error naming `where` and the allowed names otherwise.
const CriterionMetric& FindCriterionMetric(const std::string& name, const std::string& where);

// One value a run file gives the criterion: at an evaluated length (x = the length), or at an
// evaluation during training (x = the compute spent before it).
struct RunPoint {
  double x = 0, length = 0, metric = 0, samples = 0;
  int64_t step = 0;
};

struct RunScores {
  std::string label, state;
  std::string origin;  // the trained model or pre-training the run comes from ("" from scratch)
  int seed = 0, train_max_length = 0;
  std::vector<RunPoint> points;
  double total_compute = 0;  // a compute criterion: the whole training's
  bool limit_censored = false;  // a *_limit metric: every evaluated length passed (a lower bound)
};

// The run's scores, when its label is one of `labels` (the values are read only then: a run the
// criterion does not compare may lack them, as the NoPE reference lacks a divergence to itself):
// none, or one; with gap_share, one per intervention of its diagnosis that `labels` names
// (<label>+<intervention>).
std::vector<RunScores> ReadRun(const std::string& path, const ClaimCriterion& k,
                               const std::vector<std::string>& labels);

}  // namespace lexp
