#include "pe/abacus.h"

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
Abacus<S>::Abacus(const EncodingShape& shape, const EncodingOptions& opt)
    : digits_(shape.digits), max_k_(opt.Int("max_k")), init_std_(opt.Double("init_std")) {
  LEXP_INPUT_CHECK(digits_ > 0,
                   "encoding 'abacus' numbers the digits of each number: it needs a task whose "
                   "symbols are digits (addition_reversed, multiplication_reversed)");
  LEXP_INPUT_CHECK(shape.causal,
                   "encoding 'abacus' numbers the digits the model reads; in the encoder layout "
                   "the answer's slots are blanks it cannot number (use model.layout = \"decoder\")");
  LEXP_INPUT_CHECK(max_k_ >= 0, "encoding 'abacus': max_k must be >= 0, got " + opt.Text("max_k"));
  LEXP_INPUT_CHECK(init_std_ >= 0,
                   "encoding 'abacus': init_std must be >= 0, got " + opt.Text("init_std"));
  const long rows = opt.Int("rows");
  LEXP_INPUT_CHECK(rows > max_k_ + 1, "encoding 'abacus': rows must be > max_k + 1, got " +
                                          opt.Text("rows") + " with max_k = " + opt.Text("max_k"));
  // A run of digits is at most the longest sequence a batch can carry (0: unknown).
  LEXP_INPUT_CHECK(shape.max_length <= 0 || rows > max_k_ + shape.max_length,
                   fmt::format("encoding 'abacus': rows = {} cannot hold the places of this run's "
                               "longest sequence ({} tokens) after an offset of up to max_k = {}; "
                               "set rows to at least {}",
                               rows, shape.max_length, max_k_, max_k_ + shape.max_length + 1));
  table_.setZero(rows, shape.d_model);
  d_table_.setZero(rows, shape.d_model);
}

template <typename S>
void Abacus<S>::PositionIds(int T, bool training, Rng& rng, std::vector<double>& pos) const {
  const long k = training && max_k_ > 0 ? rng.UniformInt(0, max_k_) : 0;
  pos.resize(T);
  for (int t = 0; t < T; ++t) pos[t] = static_cast<double>(k + t);
}

template <typename S>
void Abacus<S>::Prepare(const std::vector<double>& pos, double /*max_distance*/) {
  offset_ = pos.empty() ? 0 : std::lround(pos[0]);
  for (size_t t = 1; t < pos.size(); ++t)
    LEXP_CHECK(pos[t] == pos[0] + static_cast<double>(t),
               "encoding 'abacus': position ids are not its own (k..k+T-1)");
}

template <typename S>
void Abacus<S>::Init(Rng& rng) {
  for (long i = 0; i < table_.size(); ++i)
    table_.data()[i] = static_cast<S>(init_std_ * rng.Normal());
}

template <typename S>
const std::vector<int>& Abacus<S>::Rows(const std::vector<int>& tokens, int B) {
  const int T = static_cast<int>(tokens.size()) / B;
  rows_.resize(tokens.size());
  for (int b = 0; b < B; ++b) {
    const std::vector<int> r = DigitPlaces(tokens.data() + static_cast<long>(b) * T, T, digits_);
    for (int t = 0; t < T; ++t) {
      const long row = r[t] == 0 ? 0 : offset_ + r[t];
      LEXP_INPUT_CHECK(row >= 0 && row < table_.rows(),
                       fmt::format("encoding 'abacus': a digit at place {} with offset {} is past "
                                   "its table of {} rows (numbers that long need a larger "
                                   "encoding_options.abacus.rows)",
                                   r[t], offset_, table_.rows()));
      rows_[static_cast<size_t>(b) * T + t] = static_cast<int>(row);
    }
  }
  return rows_;
}

// Forward: x[b,t] += P[row(b,t)].
template <typename S>
void Abacus<S>::AddEmbedding(const std::vector<double>& /*pos*/, const std::vector<int>& tokens,
                             int B, Mat<S>& x) {
  const std::vector<int>& rows = Rows(tokens, B);
  for (size_t i = 0; i < rows.size(); ++i) x.row(static_cast<long>(i)) += table_.row(rows[i]);
}

// Backward: d_P[row(b,t)] += d_x[b,t], rows in batch order (bit-identical at any thread count).
template <typename S>
void Abacus<S>::EmbeddingBackward(const std::vector<double>& /*pos*/,
                                  const std::vector<int>& tokens, int B, Mat<S>& d_x) {
  const std::vector<int>& rows = Rows(tokens, B);
  for (size_t i = 0; i < rows.size(); ++i) d_table_.row(rows[i]) += d_x.row(static_cast<long>(i));
}

template <typename S>
std::vector<ParamRef<S>> Abacus<S>::Parameters() {
  return {{"pe.abacus.table", table_, d_table_, "digit_place,channel"}};
}

template class Abacus<float>;
template class Abacus<double>;

}  // namespace lexp
