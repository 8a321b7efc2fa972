// DAPE, data-adaptive positional encoding (Zheng et al. 2024, arXiv:2405.14722): a small MLP
// reads every head's attention logit and positional bias at (i, j) and corrects each head's
// logit there,
//   a_h(i, j) = x_h + b_h + f_h(x_1..x_H, b_1..b_H),   f = W2 LeakyReLU(W1 z + c1) + c2,
// with x_h = q_i.k_j / sqrt(D) and b_h(i, j) the static bias of its base encoding (kerple_log,
// alibi or fire), before the mask: as the authors' ParallelKerpleLog_C and AliBi_C
// (chuanyang-Zheng/DAPE, megatron/model/positional_embeddings.py), which return
// x + bias + mlp(cat(x, bias)) with nn.Linear(2H, width), LeakyReLU (slope 0.01), nn.Linear(width,
// H) and PyTorch's default initialisation U(-1/sqrt(fan_in), 1/sqrt(fan_in)); one MLP per layer,
// width 32. The base keeps its own parameters, options at their defaults, and gradients (they
// reach it through b_h both directly and through the MLP). The mix reads every head at once: the
// attention runs per sequence (site 8, nn/ops/attention_head_mix.h).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Options of `dape` (recipe [encoding_options.dape]; pe/options.h).
struct DapeOptions {
  std::string base = "kerple_log";
  int width = 32;
  std::vector<OptionField> Fields() {
    return {{.name = "base",
             .help = "the static bias b_h the MLP reads and corrects (its options at their "
                     "defaults)",
             .value = &base, .allowed = {"kerple_log", "alibi", "fire"}},
            {.name = "width", .help = "hidden width of the MLP 2H -> width -> H (the paper's D_DAPE)",
             .value = &width, .lo = 1}};
  }
};

template <typename S>
class Dape final : public PositionEncoding<S> {
 public:
  using Options = DapeOptions;
  static constexpr double kLeakySlope = 0.01;  // torch.nn.LeakyReLU's default

  Dape(const EncodingShape& shape, const DapeOptions& opt,
       std::unique_ptr<PositionEncoding<S>> base);
  std::string Name() const override { return "dape"; }
  unsigned Sites() const override { return kSiteHeadMix; }
  void Prepare(const std::vector<double>& pos, double max_distance) override {
    base_->Prepare(pos, max_distance);
  }
  void Init(Rng& rng) override;
  void AfterOptimizerStep() override { base_->AfterOptimizerStep(); }
  std::vector<ParamRef<S>> Parameters() override;
  std::map<std::string, std::vector<double>> Describe() const override;

  void MixHeads(const AttentionContext* heads, int i0, int i1, int j0, int j1,
                const HeadQK<S>* qk, S* const* scores, long lds) const override;
  void MixHeadsBackward(const AttentionContext* heads, int i0, int i1, int j0, int j1,
                        const HeadQK<S>* qk, const S* const* scores, S* const* d_scores, long lds,
                        const HeadQKGrad<S>* grad, int sequence) override;
  void BeginBackward(int tasks) override;
  void EndBackward() override;

  PositionEncoding<S>& base() { return *base_; }
  int width() const { return W_; }
  // Layer `layer`'s MLP (tests set it by hand): w1 [2H, W] (inputs x_1..x_H, b_1..b_H), c1 [W],
  // w2 [W, H], c2 [H], row-major.
  S* W1(int layer) { return w1_.data() + static_cast<long>(layer) * 2 * H_ * W_; }
  S* C1(int layer) { return c1_.data() + static_cast<long>(layer) * W_; }
  S* W2(int layer) { return w2_.data() + static_cast<long>(layer) * W_ * H_; }
  S* C2(int layer) { return c2_.data() + static_cast<long>(layer) * H_; }

 private:
  // Every head's bias b_h over the block into bias (head h at bias + h (i1 - i0) lds).
  void Biases(const AttentionContext* heads, int i0, int i1, int j0, int j1, const HeadQK<S>* qk,
              long lds, std::vector<S>& bias) const;
  long SlotSize() const { return static_cast<long>(2 * H_ + 1) * W_ + static_cast<long>(W_ + 1) * H_; }

  std::unique_ptr<PositionEncoding<S>> base_;
  int H_, L_, W_;
  Mat<S> w1_, c1_, w2_, c2_;      // [L * 2H, W], [L, W], [L * W, H], [L, H]
  Mat<S> dw1_, dc1_, dw2_, dc2_;
  std::vector<double> slots_;  // per sequence: w1, c1, w2, c2 gradients of the layer in backward
  int sequences_ = 0;
  std::atomic<int> slot_layer_{0};
};

}  // namespace lexp
