// FIRE: functional interpolation for relative positions. The bias is a small MLP of the normalised
// log distance, b_h(i, j) = f_theta(u)_h with u = psi(d) / (psi(max(L, p_i)) + eps),
// psi(x) = ln(|c x| + 1), d the (effective) distance, p_i the query position (Li et al. 2023,
// arXiv:2310.04418). As the public replications: MLP
// Linear(1, 32) -> ReLU -> Linear(32, H), c learnable (init 0.1), L = |m * init_L| with a learnable
// multiplier m (init 1) and init_L fixed, eps = 1e-6; the threshold uses max(L, p_i), never min
// (pitfall 19): that is the progressive interpolation. The replications' init_L = 512 is a quarter
// of the 2048-token training sequences of the paper's language models (recalled): queries past L
// see normalised distances already in training. At lexp's 16-64 training tokens L = 512 would
// normalise every query by psi(512), a fixed scale, and switch the mechanism off, so init_L = 0
// (the default) keeps the ratio: a quarter of the run's longest training sequence. Defined for
// causal attention: in the encoder layout an early query's keys ahead lie farther than its
// normaliser, outside the [0, 1] the MLP learns. One module per layer (per_layer = true, the
// default) or one shared by all layers.
#pragma once

#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// The normalised distance u for distance d >= 0 seen by the query at position p.
double FireNormalizedDistance(double d, double p, double c, double L, double eps);

// Options of `fire` (recipe [encoding_options.fire]; pe/options.h).
struct FireOptions {
  double init_c = 0.1;
  double init_L = 0;
  double eps = 1e-6;
  bool per_layer = true;
  std::vector<OptionField> Fields() {
    return {{.name = "init_c", .help = "initial c of psi(x) = ln(|c x| + 1)", .value = &init_c,
             .lo = 0, .lo_open = true},
            {.name = "init_L",
             .help = "fixed threshold scale; L = |multiplier * init_L|, multiplier learnable; 0 = a "
                     "quarter of the longest training sequence, the replications' 512 to the "
                     "paper's 2048 training tokens (decoder layout only)",
             .value = &init_L, .lo = 0},
            {.name = "eps", .help = "added to the normaliser", .value = &eps, .lo = 0,
             .lo_open = true},
            {.name = "per_layer", .help = "one FIRE module per layer (false: shared by all layers)",
             .value = &per_layer}};
  }
};

template <typename S>
class Fire final : public PositionEncoding<S> {
 public:
  using Options = FireOptions;
  Fire(const EncodingShape& shape, const FireOptions& opt);
  std::string Name() const override { return "fire"; }
  unsigned Sites() const override { return kSiteLogitTerm; }
  void Init(Rng& rng) override;
  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* scores, long lds) const override;
  void BeginBackward(int tasks) override;
  void LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const HeadQK<S>& qk, S* d_scores, long lds, const HeadQKGrad<S>& grad,
                         int task) override;
  void EndBackward() override;
  std::vector<ParamRef<S>> Parameters() override;
  // init_L as resolved, and per module the learned threshold L = |m init_L| and c.
  std::map<std::string, std::vector<double>> Describe() const override;

 private:
  static constexpr int kWidth = 32;
  int Row(int layer) const { return per_layer_ ? layer : 0; }
  int H_;
  bool per_layer_;
  double init_L_, eps_;
  // One row per layer (or one): w1, b1 [*, 32]; w2 [*, 32*H] (k-major: w2[k*H + h]); b2 [*, H];
  // c, m [*, 1].
  Mat<S> w1_, b1_, w2_, b2_, c_, m_;
  Mat<S> dw1_, db1_, dw2_, db2_, dc_, dm_;
  std::vector<double> slots_;  // [tasks, kSlot]
  int slot_layer_ = 0, tasks_ = 0;
  static constexpr int kSlot = 3 * kWidth + 3;  // dw1, db1, dw2[:, h], db2[h], dc, dm
};

}  // namespace lexp
