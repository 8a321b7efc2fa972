// Sinusoidal absolute encoding added to the token embedding (Vaswani et al. 2017, arXiv:1706.03762,
// sec. 3.5), paper layout: PE(p, 2k) = sin(p w_k), PE(p, 2k+1) = cos(p w_k), w_k = base^(-2k/C)
// (Vaswani et al. 2017; the fairseq/t2t block layout is a different set of numbers, a known
// pitfall).
#pragma once

#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// The encoding vector of one (possibly non-integer) position; row-independent so tests can call it.
void SinusoidalRow(double pos, int C, double base, double* out);

// Options of `sinusoidal` (recipe [encoding_options.sinusoidal]; pe/options.h).
struct SinusoidalOptions {
  double base = 10000;
  std::vector<OptionField> Fields() {
    return {{.name = "base", .help = "frequency base: w_k = base^(-2k/d_model)", .value = &base,
             .lo = 1, .lo_open = true}};
  }
};

template <typename S>
class Sinusoidal final : public PositionEncoding<S> {
 public:
  using Options = SinusoidalOptions;
  Sinusoidal(const EncodingShape& shape, const SinusoidalOptions& opt);
  std::string Name() const override { return "sinusoidal"; }
  unsigned Sites() const override { return kSiteEmbedding; }
  void AddEmbedding(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                    Mat<S>& x) override;

 private:
  int C_;
  double base_;
  std::vector<double> row_;
};

}  // namespace lexp
