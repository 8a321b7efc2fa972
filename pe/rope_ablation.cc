// The post-critical ablation of `lexp analyze` (Liu et al. 2023's critical dimension): rotary
// pairs k >= ablate_from either freeze (theta_k = 0: content kept, position lost) or are removed
// (their q and k components zeroed after rotation).
#include <utility>
#include <vector>

#include "pe/rope.h"

namespace lexp {

// Frozen pairs (ablate_from, freeze) get theta = 0: they keep their content and lose position.
template <typename S>
void Rope<S>::SetFrequencies(std::vector<double> inv_freq) {
  if (ablate_from_ >= 0 && !remove_ablated_)
    for (size_t k = ablate_from_; k < inv_freq.size(); ++k) inv_freq[k] = 0;
  inv_freq_ = std::move(inv_freq);
}

// Removed pairs (ablate_from, remove): their query and key components are zeroed after rotation.
template <typename S>
void Rope<S>::ZeroRemovedPairs(S* x, long ld, int T) const {
  if (ablate_from_ < 0 || !remove_ablated_) return;
  const int P = rot_ / 2, stride = interleaved_ ? 2 : 1, second = interleaved_ ? 1 : P;
  for (int t = 0; t < T; ++t)
    for (int k = ablate_from_; k < P; ++k) {
      x[t * ld + k * stride] = S(0);
      x[t * ld + k * stride + second] = S(0);
    }
}

template void Rope<float>::SetFrequencies(std::vector<double>);
template void Rope<double>::SetFrequencies(std::vector<double>);
template void Rope<float>::ZeroRemovedPairs(float*, long, int) const;
template void Rope<double>::ZeroRemovedPairs(double*, long, int) const;

}  // namespace lexp
