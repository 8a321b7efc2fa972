// The log-n attention temperature for any encoding (Chiang & Cholak 2022, arXiv:2202.12172;
// Su 2021, kexue.fm/archives/8823): query i's content logit q_i.k_j / sqrt(D) is multiplied by
// max(1, ln(p_i + 1) / ln L), L the longest training sequence, so a query beyond L keeps the
// attention entropy of training (site 6; a logit term of site 4, ALiBi's bias say, is not
// scaled). Within the training lengths the factor is 1, so the model trains as without it.
// RoPE's own option (encoding_options.rope.log_n) is the same factor; recipe key model.log_n
// wraps any encoding, and lexp diagnose's log_n intervention uses it.
#pragma once

#include <memory>
#include <utility>

#include "pe/forwarding_encoding.h"
#include "pe/rope_scaling.h"

namespace lexp {

template <typename S>
class WithLogNScale final : public ForwardingEncoding<S> {
 public:
  WithLogNScale(std::unique_ptr<PositionEncoding<S>> inner, int train_tokens)
      : ForwardingEncoding<S>(std::move(inner)), L_(train_tokens) {}
  unsigned Sites() const override { return this->inner().Sites() | kSiteLogitScale; }
  S LogitScale(const AttentionContext& ctx, int i) const override {
    const S own = this->inner().Uses(kSiteLogitScale) ? this->inner().LogitScale(ctx, i) : S(1);
    return own * static_cast<S>(LogNFactor(ctx.pos[i], L_));
  }

 private:
  int L_;
};

}  // namespace lexp
