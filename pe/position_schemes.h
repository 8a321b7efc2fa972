// Training-time position schemes, usable with any encoding that reads position ids (site 1). A
// scheme wraps an encoding and replaces only its position ids; every other site is the wrapped
// encoding's.
//  * randomized: Ruoss et al. 2023 (arXiv:2305.16843, formulas.md 4.1): the T positions of a batch
//    are T distinct integers drawn uniformly from [0, L) and sorted, shared by the whole batch. As
//    in the reference code positions are also sampled at evaluation (`at_eval = "sample"`, pitfall
//    20); `at_eval = "identity"` evaluates with 0..T-1. Differences from the reference, on purpose:
//    one draw per batch for all layers (the reference redraws per layer for RoPE/ALiBi/relative),
//    and relative encodings see differences of sampled positions rather than sampled offsets.
//  * pose: Zhu et al. 2023 (arXiv:2309.10400, formulas.md 4.2), reference code with two chunks:
//    l0 ~ U{1..ceil(T/2)}, skip u ~ U{0..Lt - T}, positions [0, l0) and [l0 + u, T + u); evaluation
//    uses 0..T-1 (PoSE is a training scheme).
//  * shift: SHAPE-style random shift (Kiyono et al. 2021, arXiv:2109.05644): every training batch
//    uses positions k..k+T-1 with k ~ U{0..max_position}; evaluation uses 0..T-1.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/position_hooks.h"

namespace lexp {

struct PositionSchemeConfig {
  std::string name = "identity";  // identity | randomized | pose | shift
  int max_position =
      0;  // randomized: L (positions in [0, L)); pose: target length Lt; shift: max k
  bool sample_at_eval = true;  // randomized only
};

const std::vector<std::string>& PositionSchemes();

// Sorted, distinct, uniform sample of T integers from [0, L) (Knuth's selection sampling).
std::vector<double> SampleSortedPositions(int T, int L, Rng& rng);
// PoSE positions for a window of T tokens and target length Lt (T <= Lt).
std::vector<double> PosePositions(int T, int Lt, Rng& rng);

template <typename S>
class WithPositionScheme final : public PositionEncoding<S> {
 public:
  // name: the wrapped encoding's name unless given (an encoding defined as a scheme, random_shift).
  WithPositionScheme(std::unique_ptr<PositionEncoding<S>> inner, const PositionSchemeConfig& c,
                     std::string name = "");
  std::string Name() const override { return name_.empty() ? inner_->Name() : name_; }
  unsigned Sites() const override { return inner_->Sites() | kSitePositionIds; }
  void PositionIds(int T, bool training, Rng& rng, std::vector<double>& pos) const override;

  void Prepare(const std::vector<double>& pos) override { inner_->Prepare(pos); }
  void AddEmbedding(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                    Mat<S>& x) override {
    inner_->AddEmbedding(pos, tokens, B, x);
  }
  void EmbeddingBackward(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                         Mat<S>& d_x) override {
    inner_->EmbeddingBackward(pos, tokens, B, d_x);
  }
  void TransformQK(const AttentionContext& ctx, bool q, S* x, long ld) const override {
    inner_->TransformQK(ctx, q, x, ld);
  }
  void TransformQKBackward(const AttentionContext& ctx, bool q, S* d, long ld) const override {
    inner_->TransformQKBackward(ctx, q, d, ld);
  }
  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* s, long lds) const override {
    inner_->AddLogitTerm(ctx, i0, i1, j0, j1, qk, s, lds);
  }
  void LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const HeadQK<S>& qk, S* d_s, long lds, const HeadQKGrad<S>& grad,
                         int task) override {
    inner_->LogitTermBackward(ctx, i0, i1, j0, j1, qk, d_s, lds, grad, task);
  }
  void AddValueTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1, const S* p,
                    long ldp, S* out, long ldo) const override {
    inner_->AddValueTerm(ctx, i0, i1, j0, j1, p, ldp, out, ldo);
  }
  void ValueTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1, const S* p,
                         long ldp, const S* d_out, long ldo, S* d_p, long ldd, int task) override {
    inner_->ValueTermBackward(ctx, i0, i1, j0, j1, p, ldp, d_out, ldo, d_p, ldd, task);
  }
  void BeginBackward(int tasks) override { inner_->BeginBackward(tasks); }
  void EndBackward() override { inner_->EndBackward(); }
  S LogitScale(const AttentionContext& ctx, int i) const override {
    return inner_->LogitScale(ctx, i);
  }
  std::vector<ParamRef<S>> Parameters() override { return inner_->Parameters(); }
  void Init(Rng& rng) override { inner_->Init(rng); }
  void AfterOptimizerStep() override { inner_->AfterOptimizerStep(); }

 private:
  std::unique_ptr<PositionEncoding<S>> inner_;
  std::string name_;
  PositionSchemeConfig c_;
};

}  // namespace lexp
