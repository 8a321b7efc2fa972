// Linear probes for position in hidden states, read like with like (Kazemnejad et al. 2023,
// arXiv:2305.19466, Theorem 1: a causal layer can recover absolute position without an encoding;
// probing: Alain & Bengio 2016, arXiv:1610.01644). Rows of hidden states come in two sets: a fit
// set drawn where training showed the model (sequences of several in-distribution lengths, so that
// a sequence's separator sits at several positions) and a test set (longer sequences). Each row
// carries its position t, the position of its sequence's separator (-1: none) and its segment (the
// role of the position: input, separator, or answer/output), because a model's states differ by
// role: on copy, positions 17..32 are answer tokens in training and input tokens at n = 128.
//  * index probe, y = t; separator probe, y = t - separator (only when the fit set holds the
//    separator at two positions or more: otherwise its distance is the index minus a constant and
//    the two probes are one). Ridge on states standardised by the fit set (linear_probe.h). RMSE on
//    the test rows whose target lies within the fit targets' range ("in range": the probe
//    interpolates) and outside it ("beyond": it must extrapolate), each beside the RMSE of the
//    constant fit-set mean on the same rows (the chance level: no linear signal).
//  * held out in distribution: the index probe fitted on the even fit sequences and read on the
//    odd ones (the same lengths, other sequences), beside the even ones' mean on the odd rows:
//    whether the streams carry position where training showed the model, free of what the
//    longer test sequences add (Haviv et al. 2022, arXiv:2203.16634, probe in distribution).
//  * seen / unseen: a test row is "seen" when some fit row has its segment and position.
//  * beyond classifier: within each segment holding both seen and unseen test rows, a ridge
//    classifier on +-1 labels fitted on the even test sequences (thresholded where its balanced
//    accuracy there is highest) and scored on the odd ones;
//    balanced accuracy pooled over those segments (0.5: no linear signal of an unseen position
//    beyond what the segment says; NaN: no segment holds both). Beside it, the same classifier over
//    all segments at once and what the segment alone gives on those rows (the best rule that
//    knows only the segment), so a pooled score can be read against its baseline.
//  * out of distribution: per segment, the squared Mahalanobis distance to that segment's states
//    in the even fit sequences, cut at the 99th percentile over the odd ones (OutlierRate); the
//    fraction of seen and of unseen test rows beyond the cut, pooled over segments (0.01 for
//    states like the training ones). Segments with fewer than kMinSegmentRows rows in either half
//    of the fit set are left out.
#pragma once

#include <Eigen/Dense>
#include <string>
#include <vector>

namespace lexp {

enum class Segment : int { kInput = 0, kSeparator = 1, kAnswer = 2 };
const char* SegmentName(int segment);

struct ProbeRows {
  Eigen::MatrixXd x;           // [rows, C] hidden states
  std::vector<int> position;   // t of each row
  std::vector<int> separator;  // the separator's position in the row's sequence (-1: none)
  std::vector<int> segment;    // Segment of each row
  std::vector<int> sequence;   // the row's sequence within its set (even / odd halves)
};

struct PositionProbeReading {
  static constexpr int kMinSegmentRows = 10;
  double index_rmse_fit = 0;
  double index_rmse_in_range = 0, index_rmse_beyond = 0;      // tokens (NaN: no such row)
  double index_chance_in_range = 0, index_chance_beyond = 0;  // constant predictor, same rows
  double index_last_predicted = 0;  // mean prediction at the test sequences' last position
  double index_rmse_held_out = 0, index_chance_held_out = 0;  // odd fit sequences (NaN: none)
  bool separator_applicable = false;
  std::string separator_note;  // why not, when not
  double separator_rmse_in_range = 0, separator_rmse_beyond = 0;
  double separator_chance_in_range = 0, separator_chance_beyond = 0;
  double beyond_accuracy = 0;  // within segments (0.5: no signal)
  double beyond_accuracy_pooled = 0, beyond_segment_baseline = 0;
  double ood_seen = 0, ood_unseen = 0;  // 0.01 expected for states like the fit set's
  long rows_seen = 0, rows_unseen = 0;
  std::string segments_classified, segments_ood;  // names of the segments each reading used
};

PositionProbeReading ReadPositionProbes(const ProbeRows& fit, const ProbeRows& test);

}  // namespace lexp
