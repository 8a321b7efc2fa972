// A decorator base: forwards every hook of PositionEncoding to a wrapped encoding, so a decorator
// (a position scheme, an analysis observer) overrides only the hooks it changes.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/position_hooks.h"

namespace lexp {

template <typename S>
class ForwardingEncoding : public PositionEncoding<S> {
 public:
  explicit ForwardingEncoding(std::unique_ptr<PositionEncoding<S>> inner)
      : inner_(std::move(inner)) {}
  const PositionEncoding<S>& inner() const { return *inner_; }
  std::string Name() const override { return inner_->Name(); }
  unsigned Sites() const override { return inner_->Sites(); }
  void PositionIds(int T, bool training, Rng& rng, std::vector<double>& pos) const override {
    inner_->PositionIds(T, training, rng, pos);
  }
  void Prepare(const std::vector<double>& pos, double max_distance) override {
    inner_->Prepare(pos, max_distance);
  }
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
  // A decorator that adds a site-4 term of its own with a backward must answer false here.
  bool LogitTermIsConstant() const override { return inner_->LogitTermIsConstant(); }
  void AddValueTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1, const S* p,
                    long ldp, S* out, long ldo) const override {
    inner_->AddValueTerm(ctx, i0, i1, j0, j1, p, ldp, out, ldo);
  }
  void ValueTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1, const S* p,
                         long ldp, const S* d_out, long ldo, S* d_p, long ldd, int task) override {
    inner_->ValueTermBackward(ctx, i0, i1, j0, j1, p, ldp, d_out, ldo, d_p, ldd, task);
  }
  void MixHeads(const AttentionContext* heads, int i0, int i1, int j0, int j1,
                const HeadQK<S>* qk, S* const* scores, long lds) const override {
    inner_->MixHeads(heads, i0, i1, j0, j1, qk, scores, lds);
  }
  void MixHeadsBackward(const AttentionContext* heads, int i0, int i1, int j0, int j1,
                        const HeadQK<S>* qk, const S* const* scores, S* const* d_scores, long lds,
                        const HeadQKGrad<S>* grad, int sequence) override {
    inner_->MixHeadsBackward(heads, i0, i1, j0, j1, qk, scores, d_scores, lds, grad, sequence);
  }
  void BeginBackward(int tasks) override { inner_->BeginBackward(tasks); }
  void EndBackward() override { inner_->EndBackward(); }
  S LogitScale(const AttentionContext& ctx, int i) const override {
    return inner_->LogitScale(ctx, i);
  }
  std::vector<ParamRef<S>> Parameters() override { return inner_->Parameters(); }
  void Init(Rng& rng) override { inner_->Init(rng); }
  void AfterOptimizerStep() override { inner_->AfterOptimizerStep(); }
  bool TablesDependOnLength() const override { return inner_->TablesDependOnLength(); }
  bool EmbeddingReadsEarlierTokens() const override {
    return inner_->EmbeddingReadsEarlierTokens();
  }
  bool QKTransformDependsOnOtherPositions() const override {
    return inner_->QKTransformDependsOnOtherPositions();
  }
  std::map<std::string, std::vector<double>> Describe() const override {
    return inner_->Describe();
  }

 private:
  std::unique_ptr<PositionEncoding<S>> inner_;
};

}  // namespace lexp
