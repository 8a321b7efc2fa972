// Softmax cross-entropy on the target positions only (a per-token loss mask). The loss is the mean
// over masked tokens; accuracy counts argmax == target on the same tokens.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "nn/check.h"
#include "nn/ops/linear.h"
#include "nn/tensor.h"

namespace lexp {

struct CrossEntropyResult {
  double loss_sum = 0;  // sum over masked tokens of -log p(target)
  long count = 0;       // number of masked tokens
  long correct = 0;     // masked tokens whose argmax equals the target
  double MeanLoss() const { return count > 0 ? loss_sum / count : 0.0; }
};

// logits: [N, V]; targets, mask: [N]. Writes per-row loss and correctness (for per-sequence metrics)
// into row_loss/row_correct when given. d_logits (optional) receives the gradient of the mean loss.
template <typename S>
CrossEntropyResult CrossEntropyForwardBackward(const Mat<S>& logits, const std::vector<int>& targets,
                                               const std::vector<uint8_t>& mask,
                                               Mat<S>* d_logits, std::vector<double>* row_loss,
                                               std::vector<uint8_t>* row_correct) {
  const long N = logits.rows(), V = logits.cols();
  LEXP_CHECK(static_cast<long>(targets.size()) == N && static_cast<long>(mask.size()) == N,
             "cross entropy: targets/mask size differ from logits rows");
  long count = 0;
  for (long r = 0; r < N; ++r) count += mask[r] ? 1 : 0;
  if (d_logits != nullptr) {
    Resize(*d_logits, N, V);
  }
  if (row_loss) row_loss->assign(N, 0.0);
  if (row_correct) row_correct->assign(N, 0);
  std::vector<double> loss(N, 0.0);
  std::vector<uint8_t> correct(N, 0);
  const S inv_count = count > 0 ? S(1) / S(count) : S(0);
  ParallelChunks(N, kRowGrain, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      if (!mask[r]) {
        if (d_logits) d_logits->row(r).setZero();
        continue;
      }
      const int y = targets[r];
      LEXP_CHECK(y >= 0 && y < V, "target out of vocabulary");
      Eigen::Index amax;
      const S mx = logits.row(r).maxCoeff(&amax);
      const S z = (logits.row(r).array() - mx).exp().sum();
      const double lse = static_cast<double>(mx) + std::log(static_cast<double>(z));
      loss[r] = lse - static_cast<double>(logits(r, y));
      correct[r] = (amax == y) ? 1 : 0;
      // Forward: l = lse(z) - z_y.  Backward: d_z = (softmax(z) - onehot(y)) / count.
      if (d_logits) {
        d_logits->row(r) = ((logits.row(r).array() - mx).exp() / z) * inv_count;
        (*d_logits)(r, y) -= inv_count;
      }
    }
  });
  CrossEntropyResult res;
  res.count = count;
  for (long r = 0; r < N; ++r) {
    if (!mask[r]) continue;
    res.loss_sum += loss[r];
    res.correct += correct[r];
  }
  if (row_loss) *row_loss = std::move(loss);
  if (row_correct) *row_correct = std::move(correct);
  return res;
}

}  // namespace lexp
