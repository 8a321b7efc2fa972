// Sandwich: a parameter-free bias from the inner product of sinusoidal embeddings,
// b_h(d) = (sum_{k=1}^{D/2} cos(d 10000^(-2k/D)) - D/2) / (8h/H), h = 1..H (Chi, Fan, Rudnicky &
// Ramadge 2023, arXiv:2212.10356; the NeMo reference form of formulas.md 2.6, not the older copy
// without the cosine, pitfall 21). D is the head dimension. b_h(0) = 0 and b_h <= 0 everywhere.
#pragma once

#include "pe/distance_bias.h"
#include "pe/options.h"

namespace lexp {

template <typename S>
class Sandwich final : public DistanceBias<S> {
 public:
  Sandwich(const EncodingShape& shape, const EncodingOptions& opt);
  std::string Name() const override { return "sandwich"; }
  double Bias(int h, double d) const override;

 private:
  int D_;
  double base_;
};

}  // namespace lexp
