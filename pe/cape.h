// CAPE, continuous augmented positional embeddings (Likhomanenko et al. 2021, arXiv:2106.03143;
// Likhomanenko et al. 2021, following the gcambara/cape CAPE1d port): the interleaved sinusoid of
// continuous positions that are augmented during training only. With p_t = pos_scale * t:
//   normalize:     p_t <- p_t - mean_t p_t
//   training only: p_t <- (p_t + delta + eps_t) * lambda,  delta ~ U(-max_global_shift, +..),
//                  eps_t ~ U(-max_local_shift * pos_scale, +..),  ln lambda ~ U(-ln
//                  max_global_scaling, +..)
//   embedding:     sin(p w_c + (c mod 2) pi / 2),  w_c = freq_scale * 10000^(-2 floor(c/2) / C)
// With the maxima at 0, 0, 1 (and normalize off) it is lexp's sinusoidal encoding; evaluation never
// augments. Differences from the port, on purpose: one augmentation per batch (lexp's position ids
// are shared by the batch), and the content is not multiplied by sqrt(C), as for lexp's sinusoidal.
// Defaults are the port's text settings (5, 0.5, 1.03); keep max_local_shift <= 0.5 so that
// neighbouring tokens never swap.
#pragma once

#include <string>
#include <vector>

#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Options of `cape` (recipe [encoding_options.cape]; pe/options.h).
struct CapeOptions {
  double max_global_shift = 5;
  double max_local_shift = 0.5;
  double max_global_scaling = 1.03;
  bool normalize = false;
  double pos_scale = 1;
  double freq_scale = 1;
  std::vector<OptionField> Fields() {
    return {{.name = "max_global_shift",
             .help = "delta ~ U(-max, max) added to every position (training only)",
             .value = &max_global_shift, .lo = 0},
            {.name = "max_local_shift",
             .help = "eps_t ~ U(-max, max) * pos_scale per token (keep <= 0.5)",
             .value = &max_local_shift, .lo = 0},
            {.name = "max_global_scaling",
             .help = "ln lambda ~ U(-ln max, ln max) multiplies positions",
             .value = &max_global_scaling, .lo = 1},
            {.name = "normalize", .help = "subtract the mean position of the sequence first",
             .value = &normalize},
            {.name = "pos_scale", .help = "positions are pos_scale * t", .value = &pos_scale,
             .lo = 0, .lo_open = true},
            {.name = "freq_scale", .help = "multiplies every sinusoid frequency",
             .value = &freq_scale, .lo = 0, .lo_open = true}};
  }
};

template <typename S>
class Cape final : public PositionEncoding<S> {
 public:
  using Options = CapeOptions;
  Cape(const EncodingShape& shape, const CapeOptions& opt);
  std::string Name() const override { return "cape"; }
  unsigned Sites() const override { return kSitePositionIds | kSiteEmbedding; }
  void PositionIds(int T, bool training, Rng& rng, std::vector<double>& pos) const override;
  void AddEmbedding(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                    Mat<S>& x) override;

 private:
  int C_;
  double global_shift_, local_shift_, global_scaling_, pos_scale_, freq_scale_;
  bool normalize_;
  std::vector<double> row_;
};

}  // namespace lexp
