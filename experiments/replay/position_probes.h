// Linear probes for position in a trained model's hidden states (the residual stream entering each
// block, and the last block's output), fitted where training showed the model and tested beyond
// it: do hidden states carry position in a way that helps (NoPE's implicit position,
// Kazemnejad et al. 2023, Theorem 1: a causal layer can recover absolute position), and do they
// leave their training distribution? From the run's evaluation stream (replayed, teacher-forced
// inputs): the fit set is min(eval.samples, 64) sequences at the training length N; the test set
// min(eval.samples, 64) sequences at the longest evaluation length, positions t < T_N ("in range")
// and t >= T_N ("beyond"). Per layer:
//  * absolute index t: ridge regression on standardised states (analysis/linear_probe.h: lambda =
//    1e-3 x rows, intercept unpenalised) fitted on the training-length positions; RMSE in tokens in
//    range and beyond, and the mean prediction at the last position against its true index;
//  * signed distance to the separator (decoder tasks with a prompt): the same, NaN without one;
//  * "beyond the training length": a least-squares classifier on +-1 labels fitted on half of the
//    long sequences and tested on the other half (balanced accuracy; 0.5 = no linear signal);
//  * out of distribution: the fraction of positions whose squared Mahalanobis distance to the
//    training-length states exceeds the 99th percentile of held-out training-length states
//    (analysis/linear_probe.h; covariance from the even sequences, cut from the odd ones), in range
//    and beyond: 0.01 expected for states like the training ones.
#pragma once

#include <string>
#include <vector>

#include "nn/io/hdf5.h"

namespace lexp {

struct PositionProbes {
  int train_length = 0, train_tokens = 0, long_length = 0, long_tokens = 0, samples = 0;
  bool has_separator = false;
  std::vector<double> index_rmse_fit, index_rmse_in_range, index_rmse_beyond;  // [L+1]
  std::vector<double> index_last_predicted;                                    // [L+1]
  std::vector<double> separator_rmse_in_range, separator_rmse_beyond;          // [L+1]
  std::vector<double> beyond_accuracy;                                         // [L+1]
  std::vector<double> ood_in_range, ood_beyond;                                // [L+1]
};

PositionProbes MeasurePositionProbes(const std::string& run_file);

// Writes /analysis/position_probes (replacing an earlier one); returns report lines.
std::string WritePositionProbes(const PositionProbes& p, const h5::Group& analysis);

}  // namespace lexp
