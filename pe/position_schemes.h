// Training-time position schemes, usable with any encoding that reads position ids (site 1). A
// scheme wraps an encoding and replaces only its position ids; every other site is the wrapped
// encoding's.
//  * randomized: Ruoss et al. 2023 (arXiv:2305.16843): the T positions of a batch
//    are T distinct integers drawn uniformly from [0, L) and sorted, shared by the whole batch. As
//    in the reference code positions are also sampled at evaluation (`at_eval = "sample"`, pitfall
//    20); `at_eval = "identity"` evaluates with 0..T-1. Differences from the reference, on purpose:
//    one draw per batch for all layers (the reference redraws per layer for RoPE/ALiBi/relative),
//    and relative encodings see differences of sampled positions rather than sampled offsets.
//  * pose: Zhu et al. 2023 (arXiv:2309.10400), reference code with two chunks:
//    l0 ~ U{1..ceil(T/2)}, skip u ~ U{0..Lt - T}, positions [0, l0) and [l0 + u, T + u); evaluation
//    uses 0..T-1 (PoSE is a training scheme).
//  * shift: SHAPE-style random shift (Kiyono et al. 2021, arXiv:2109.05644): every training batch
//    uses positions k..k+T-1 with k ~ U{0..max_position}; evaluation uses 0..T-1.
//  * clamp: an evaluation-time remap of unseen absolute positions (lexp diagnose's analogue of
//    ReRoPE for absolute encodings): positions >= max_position are read as max_position - 1, the
//    last one training showed; training uses 0..T-1.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/position_hooks.h"
#include "pe/forwarding_encoding.h"

namespace lexp {

struct PositionSchemeConfig {
  std::string name = "identity";  // identity | randomized | pose | shift | clamp
  int max_position = 0;  // randomized: L (positions in [0, L)); pose: target length Lt; shift:
                         // max k; clamp: the first position not seen in training
  bool sample_at_eval = true;  // randomized only
};

const std::vector<std::string>& PositionSchemes();

// Sorted, distinct, uniform sample of T integers from [0, L) (Knuth's selection sampling).
std::vector<double> SampleSortedPositions(int T, int L, Rng& rng);
// PoSE positions for a window of T tokens and target length Lt (T <= Lt).
std::vector<double> PosePositions(int T, int Lt, Rng& rng);

template <typename S>
class WithPositionScheme final : public ForwardingEncoding<S> {
 public:
  // name: the wrapped encoding's name unless given (an encoding defined as a scheme, random_shift).
  WithPositionScheme(std::unique_ptr<PositionEncoding<S>> inner, const PositionSchemeConfig& c,
                     std::string name = "");
  std::string Name() const override { return name_.empty() ? this->inner().Name() : name_; }
  unsigned Sites() const override { return this->inner().Sites() | kSitePositionIds; }
  void PositionIds(int T, bool training, Rng& rng, std::vector<double>& pos) const override;

 private:
  PositionSchemeConfig c_;
  std::string name_;
};

}  // namespace lexp
