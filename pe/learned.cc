#include "pe/learned.h"

#include <cmath>

namespace lexp {

template <typename S>
LearnedAbsolute<S>::LearnedAbsolute(const EncodingShape& shape, const LearnedOptions& opt)
    : clamp_(opt.beyond == "clamp"), init_std_(opt.init_std) {
  const int rows = opt.max_len > 0 ? opt.max_len : shape.max_length;
  LEXP_INPUT_CHECK(rows > 0, "encoding 'learned': max_len = 0 takes the run's bound on position "
                             "ids, which this model does not know; set max_len");
  table_.setZero(rows, shape.d_model);
  d_table_.setZero(rows, shape.d_model);
}

template <typename S>
void LearnedAbsolute<S>::Init(Rng& rng) {
  for (long i = 0; i < table_.size(); ++i)
    table_.data()[i] = static_cast<S>(init_std_ * rng.Normal());
}

template <typename S>
int LearnedAbsolute<S>::Row(double pos) const {
  const long p = std::lround(pos);
  LEXP_INPUT_CHECK(p >= 0, "encoding 'learned': negative position");
  if (p < table_.rows()) return static_cast<int>(p);
  LEXP_INPUT_CHECK(clamp_, "encoding 'learned': position " + std::to_string(p) +
                               " is past its table of " + std::to_string(table_.rows()) +
                               " rows; set max_len larger or beyond = \"clamp\"");
  return static_cast<int>(table_.rows() - 1);
}

template <typename S>
void LearnedAbsolute<S>::AddEmbedding(const std::vector<double>& pos,
                                      const std::vector<int>& /*tokens*/, int B, Mat<S>& x) {
  const int T = static_cast<int>(pos.size());
  for (int t = 0; t < T; ++t) {
    const int r = Row(pos[t]);
    for (int b = 0; b < B; ++b) x.row(static_cast<long>(b) * T + t) += table_.row(r);
  }
}

// Forward: x[b,t] += P[pos_t].  Backward: d_P[pos_t] += sum_b d_x[b,t] (batch order).
template <typename S>
void LearnedAbsolute<S>::EmbeddingBackward(const std::vector<double>& pos,
                                           const std::vector<int>& /*tokens*/, int B, Mat<S>& d_x) {
  const int T = static_cast<int>(pos.size());
  for (int t = 0; t < T; ++t) {
    const int r = Row(pos[t]);
    for (int b = 0; b < B; ++b) d_table_.row(r) += d_x.row(static_cast<long>(b) * T + t);
  }
}

template <typename S>
std::vector<ParamRef<S>> LearnedAbsolute<S>::Parameters() {
  return {{"pe.learned.table", table_, d_table_, "position,channel"}};
}

template class LearnedAbsolute<float>;
template class LearnedAbsolute<double>;

}  // namespace lexp
