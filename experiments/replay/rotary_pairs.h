// The empirical side of the critical RoPE dimension (Liu et al. 2023, arXiv:2310.05209) on a
// trained rope run, by replaying it (experiments/replay/model_replay.h):
//  * per rotary pair k, the angle range theta_k * distance it saw in training (largest distance
//    the run's position scheme produces at the training length) against each evaluation length;
//  * each pair's contribution to the logits, mean |c_k| over visible (query, key) pairs at a
//    distance below train_span (the span defined below) and at or beyond it, and the supremum of
//    the logits over distances against the largest observed logit (analysis/rotary_pair_probe.h),
//    on the longest probe;
//  * the post-critical ablation: the loss at every evaluation length with pairs k >= c frozen
//    (theta_k = 0) or removed (q, k zeroed), for every cut c = 0..P (c = P: nothing ablated).
// Predicted boundary: d_extra/2, the number of pairs whose period fits in the span of positions
// training showed, train_distance + 1 (the training token count for consecutive positions, as Liu
// et al.'s T_train; far more under randomized, PoSE or shifted positions).
// Measured boundary (analysis/cut_ablation.h), for each ablation: the cut whose loss beyond the
// training length is lowest among the cuts that extrapolate, i.e. whose loss there is below the
// unablated one by a paired 95% interval over the evaluation sequences and below a uniform guess
// (ln V) by its interval; each cut's loss within training is reported as its in-distribution
// cost. If the post-critical pairs are what breaks extrapolation, freezing exactly them restores
// it at no cost in distribution. -1 when no cut helps, or no evaluation length lies beyond
// (or within) the training length.
#pragma once

#include <string>
#include <vector>

#include "analysis/cut_ablation.h"
#include "analysis/rotary_pair_probe.h"
#include "nn/io/hdf5.h"
#include "pe/rope.h"

namespace lexp {

struct RotaryPairAnalysis {
  int pairs = 0, rotary_dims = 0, train_tokens = 0, train_max_length = 0, probe_length = 0;
  double train_distance = 0;             // largest distance seen in training (tokens)
  double train_span = 0;                 // train_distance + 1: positions training showed
  std::vector<double> inv_freq, period;  // [P] radians per token, tokens
  std::vector<double> train_angle;       // [P] theta_k * train_distance (radians)
  std::vector<int> eval_lengths;         // [E] task lengths n
  std::vector<double> eval_distance;     // [E] largest distance at each length (tokens)
  std::vector<double> eval_angle;        // [E, P]
  RotaryPairStats contributions;         // on the longest probe
  std::vector<double> ablation_loss;     // [2, P+1, E]: (freeze, remove) x cut c x length
  std::vector<double> ablation_loss_sd;  // [2, P+1, E]: sd over sequences
  int samples = 0;                       // evaluation sequences per length
  double chance_loss = 0;                // ln V: a uniform guess over the vocabulary
  CutAblationVerdict verdict[2];         // freeze, remove
  int predicted_boundary = 0;            // d_extra / 2
  int measured_boundary[2] = {-1, -1};   // freeze, remove (verdict[m].boundary)
};

class ModelReplay;
// The Rope inside decorators (position schemes, observers); null when the encoding does not rotate.
const Rope<float>* FindRope(const PositionEncoding<float>& e);
// The largest distance p_i - p_j the run's position scheme produced at the training length (over
// 256 training draws; T - 1 for consecutive positions).
double TrainedDistance(ModelReplay& replay);

// For rope and rope_partial runs; throws InputError otherwise.
RotaryPairAnalysis AnalyzeRotaryPairs(const std::string& run_file);

// Writes /analysis/rotary (replacing an earlier one) and returns report lines.
std::string WriteRotaryPairs(const RotaryPairAnalysis& a, const h5::Group& analysis);

}  // namespace lexp
