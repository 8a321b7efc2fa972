#include "pe/digit_places.h"

#include <cmath>
#include <string>

#include "fmt/format.h"

namespace lexp {

std::vector<int> DigitPlaces(const int* tokens, int T, int digits) {
  std::vector<int> r(T, 0);
  int run = 0;
  for (int t = 0; t < T; ++t) {
    const bool digit = tokens[t] >= 0 && tokens[t] < digits;
    run = digit ? run + 1 : 0;
    r[t] = run;
  }
  return r;
}

template <typename S>
DigitPlaceEmbedding<S>::DigitPlaceEmbedding(const EncodingShape& shape,
                                            const DigitPlaceOptions& opt)
    : rule_(opt.rule),
      name_(opt.rule == DigitPlaceRule::kAbacus ? "abacus" : "position_coupling"),
      offset_key_(opt.rule == DigitPlaceRule::kAbacus ? "max_k" : "max_start"),
      digits_(shape.digits),
      max_offset_(opt.max_offset),
      init_std_(opt.init_std) {
  LEXP_INPUT_CHECK(digits_ > 0,
                   fmt::format("encoding '{}' numbers the digits of each number: it needs a task "
                               "whose symbols are digits (addition_reversed, "
                               "multiplication_reversed)",
                               name_));
  LEXP_INPUT_CHECK(shape.causal,
                   fmt::format("encoding '{}' numbers the digits the model reads; in the encoder "
                               "layout the answer's slots are blanks it cannot number (use "
                               "model.layout = \"decoder\")",
                               name_));
  const long rows = opt.rows;
  LEXP_INPUT_CHECK(rows > max_offset_ + 1,
                   fmt::format("encoding '{}': rows must be > {} + 1, got {} with {} = {}", name_,
                               offset_key_, rows, offset_key_, max_offset_));
  // A run of digits is at most the longest sequence a batch can carry (0: unknown).
  LEXP_INPUT_CHECK(shape.max_length <= 0 || rows > max_offset_ + shape.max_length,
                   fmt::format("encoding '{}': rows = {} cannot hold the places of this run's "
                               "longest sequence ({} tokens) after an offset of up to {} = {}; "
                               "set rows to at least {}",
                               name_, rows, shape.max_length, offset_key_, max_offset_,
                               max_offset_ + shape.max_length + 1));
  table_.setZero(rows, shape.d_model);
  d_table_.setZero(rows, shape.d_model);
}

template <typename S>
void DigitPlaceEmbedding<S>::PositionIds(int T, bool training, Rng& rng,
                                         std::vector<double>& pos) const {
  const long k = training && max_offset_ > 0 ? rng.UniformInt(0, max_offset_) : 0;
  pos.resize(T);
  for (int t = 0; t < T; ++t) pos[t] = static_cast<double>(k + t);
}

template <typename S>
void DigitPlaceEmbedding<S>::Prepare(const std::vector<double>& pos, double /*max_distance*/) {
  offset_ = pos.empty() ? 0 : std::lround(pos[0]);
  for (size_t t = 1; t < pos.size(); ++t)
    LEXP_CHECK(pos[t] == pos[0] + static_cast<double>(t),
               "encoding '" + name_ + "': position ids are not its own (k..k+T-1)");
}

template <typename S>
void DigitPlaceEmbedding<S>::Init(Rng& rng) {
  for (long i = 0; i < table_.size(); ++i)
    table_.data()[i] = static_cast<S>(init_std_ * rng.Normal());
}

template <typename S>
const std::vector<int>& DigitPlaceEmbedding<S>::Rows(const std::vector<int>& tokens, int B) {
  const int T = static_cast<int>(tokens.size()) / B;
  rows_.resize(tokens.size());
  for (int b = 0; b < B; ++b) {
    const std::vector<int> r = DigitPlaces(tokens.data() + static_cast<long>(b) * T, T, digits_);
    for (int t = 0; t < T; ++t) {
      const long row = r[t] == 0 && rule_ == DigitPlaceRule::kAbacus ? 0 : offset_ + r[t];
      LEXP_INPUT_CHECK(row >= 0 && row < table_.rows(),
                       fmt::format("encoding '{}': a digit at place {} with offset {} is past its "
                                   "table of {} rows (numbers that long need a larger "
                                   "encoding_options.{}.rows)",
                                   name_, r[t], offset_, table_.rows(), name_));
      rows_[static_cast<size_t>(b) * T + t] = static_cast<int>(row);
    }
  }
  return rows_;
}

// Forward: x[b,t] += P[row(b,t)].
template <typename S>
void DigitPlaceEmbedding<S>::AddEmbedding(const std::vector<double>& /*pos*/,
                                          const std::vector<int>& tokens, int B, Mat<S>& x) {
  const std::vector<int>& rows = Rows(tokens, B);
  for (size_t i = 0; i < rows.size(); ++i) x.row(static_cast<long>(i)) += table_.row(rows[i]);
}

// Backward: d_P[row(b,t)] += d_x[b,t], rows in batch order (bit-identical at any thread count).
template <typename S>
void DigitPlaceEmbedding<S>::EmbeddingBackward(const std::vector<double>& /*pos*/,
                                               const std::vector<int>& tokens, int B,
                                               Mat<S>& d_x) {
  const std::vector<int>& rows = Rows(tokens, B);
  for (size_t i = 0; i < rows.size(); ++i) d_table_.row(rows[i]) += d_x.row(static_cast<long>(i));
}

template <typename S>
std::vector<ParamRef<S>> DigitPlaceEmbedding<S>::Parameters() {
  return {{"pe." + name_ + ".table", table_, d_table_, "digit_place,channel"}};
}

template class DigitPlaceEmbedding<float>;
template class DigitPlaceEmbedding<double>;

}  // namespace lexp
