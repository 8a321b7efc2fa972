// NoPE: no positional encoding; order reaches the model only through the causal mask
// (Haviv et al. 2022, arXiv:2203.16634; Kazemnejad et al. 2023, arXiv:2305.19466).
#pragma once

#include "nn/check.h"
#include "nn/position_hooks.h"

namespace lexp {

template <typename S>
class NoPE final : public PositionEncoding<S> {
 public:
  std::string Name() const override { return "nope"; }
  unsigned Sites() const override { return 0; }
};

}  // namespace lexp
