// Complex-valued word-order embeddings (Wang et al. 2020, ICLR, arXiv:1912.12333):
// word w at position p has C/2 complex channels
//   f(w, p)_c = r_{w,c} exp(i (omega_{w,c} p + phi_{w,c})),
// fed to the (real) transformer as [Re | Im] halves of the model width. The amplitude r (first
// half) and the initial phase phi (second half) are the model's own token-embedding row, so the
// encoding transforms the token embedding in place and learns only the per-word frequencies omega
// [V, C/2] (initialised to the sinusoidal frequencies 10000^(-2c/C)). f is shift-equivariant: f(w,
// p + d) = f(w, p) * exp(i omega_w d), and |f_c| = |r_c|.
#pragma once

#include <vector>

#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

template <typename S>
class ComplexOrder final : public PositionEncoding<S> {
 public:
  using Options = NoOptions;
  ComplexOrder(const EncodingShape& shape, const NoOptions& opt);
  std::string Name() const override { return "complex_order"; }
  unsigned Sites() const override { return kSiteEmbedding; }
  void Init(Rng& rng) override;
  std::vector<ParamRef<S>> Parameters() override;
  void AddEmbedding(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                    Mat<S>& x) override;
  void EmbeddingBackward(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                         Mat<S>& d_x) override;

 private:
  int C_, half_;
  Mat<S> omega_, d_omega_;  // [V, C/2]
  Mat<S> x_in_;             // the token embeddings of the last forward pass (r | phi)
};

}  // namespace lexp
