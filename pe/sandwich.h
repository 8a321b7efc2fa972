// Sandwich: a parameter-free bias from the inner product of sinusoidal embeddings,
// b_h(d) = (sum_{k=1}^{D'/2} cos(d 10000^(-2k/D')) - D'/2) / (8h/H), h = 1..H (Chi, Fan, Rudnicky &
// Ramadge 2023, arXiv:2212.10356; the NeMo reference form of Chi et al. 2023, not the older copy
// without the cosine, pitfall 21). b_h(0) = 0 and b_h <= 0 everywhere. D' (option dim) is the
// sinusoid's dimension, a hyperparameter of the paper, which uses D' = 128 (recalled); NeMo takes
// the head width. The two differ most where lexp lives: at head width 16 the bias of head 1 of 4
// at distance 16 is -0.9 with D' = 16 and -11 with D' = 128, so the default is the paper's 128
// (dim = 0: the head width, as NeMo).
#pragma once

#include "pe/distance_bias.h"
#include "pe/options.h"

namespace lexp {

// Options of `sandwich` (recipe [encoding_options.sandwich]; pe/options.h).
struct SandwichOptions {
  double base = 10000;
  int dim = 128;
  std::vector<OptionField> Fields() {
    return {{.name = "base", .help = "frequency base of the sinusoids", .value = &base, .lo = 1,
             .lo_open = true},
            {.name = "dim",
             .help = "D', the sinusoids' dimension, even: the paper's 128 (recalled); 0 = the head "
                     "width (NeMo)",
             .value = &dim, .lo = 0}};
  }
};

template <typename S>
class Sandwich final : public DistanceBias<S> {
 public:
  using Options = SandwichOptions;
  Sandwich(const EncodingShape& shape, const SandwichOptions& opt);
  std::string Name() const override { return "sandwich"; }
  double Bias(int h, double d) const override;
  std::map<std::string, std::vector<double>> Describe() const override {
    return {{"dim", {static_cast<double>(D_)}}};
  }

 private:
  int D_;
  double base_;
};

}  // namespace lexp
