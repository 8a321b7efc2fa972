// ALiBi: a per-head linear distance penalty -m_h (i - j) added after the 1/sqrt(D) scaling
// (Press, Smith & Lewis 2022, arXiv:2108.12409; slope rule of the reference fairseq code including
// non-power-of-two head counts). The bias is built explicitly from
// the effective distance, never with the row-constant trick (pitfall 9). Bidirectional attention
// uses the symmetric -m |i - j|.
#pragma once

#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Slopes of the reference rule, head h gets slopes[h].
std::vector<double> AlibiSlopes(int heads);

template <typename S>
class Alibi final : public PositionEncoding<S> {
 public:
  using Options = NoOptions;
  Alibi(const EncodingShape& shape, const NoOptions& opt);
  std::string Name() const override { return "alibi"; }
  unsigned Sites() const override { return kSiteLogitTerm; }
  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* scores, long lds) const override;
  bool LogitTermIsConstant() const override { return true; }  // fixed slopes, no q or k
  double Slope(int h) const { return slopes_[h]; }

 private:
  std::vector<double> slopes_;
};

}  // namespace lexp
