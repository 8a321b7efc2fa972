#include "experiments/tasks/arithmetic.h"

#include <algorithm>
#include <utility>

#include "fmt/format.h"
#include "nn/check.h"

namespace lexp::arithmetic {
namespace {

constexpr int kPlus = 10, kTimes = 11;

// A number of exactly `digits` digits, least significant first (the top digit non-zero unless the
// number has one digit).
std::vector<int> RandomNumber(int digits, Rng& rng) {
  std::vector<int> d(digits);
  for (int i = 0; i < digits; ++i)
    d[i] = static_cast<int>(rng.UniformInt(i == digits - 1 && digits > 1 ? 1 : 0, 9));
  return d;
}

class ReversedArithmetic : public Task {
 public:
  // hints: the number of index hint symbols (0 = none); the longest number of an example at
  // length n has n + extra digits (its answer).
  ReversedArithmetic(int hints, int extra, bool zero_pad)
      : zero_pad_(zero_pad), hints_(hints), extra_(extra) {}
  int InputAlphabet() const override { return kFirstHint + hints_; }
  int OutputAlphabet() const override { return kFirstHint + hints_; }
  bool SharedAlphabet() const override { return true; }
  int DigitSymbols() const override { return 10; }
  int MaxLength() const override { return hints_ > 0 ? hints_ - extra_ : Task::MaxLength(); }
  Decoding SourceDecoding() const override { return Decoding::kGreedy; }
  Example Sample(int n, Rng& rng) const override { return SampleShape(n, 0, rng); }

 protected:
  // The example a `op` b = answer, each number after its hints when the task has them: hint
  // h_{o+s} before the digit of significance s, one start o ~ U{0..hints - longest} per example.
  Example Answered(std::vector<int> a, int op, std::vector<int> b,
                   const std::vector<int>& answer, Rng& rng) const {
    if (zero_pad_) {  // zeros above the top digit (the end of a reversed number)
      const size_t n = std::max(a.size(), b.size());
      a.resize(n, 0);
      b.resize(n, 0);
    }
    const int longest = static_cast<int>(std::max({a.size(), b.size(), answer.size()}));
    LEXP_CHECK(hints_ == 0 || longest <= hints_, "arithmetic: a number longer than its hints");
    const int start = hints_ > 0 ? static_cast<int>(rng.UniformInt(0, hints_ - longest)) : 0;
    auto written = [&](const std::vector<int>& digits, std::vector<int>& out) {
      for (size_t s = 0; s < digits.size(); ++s) {
        if (hints_ > 0) out.push_back(kFirstHint + start + static_cast<int>(s));
        out.push_back(digits[s]);
      }
    };
    Example e;
    written(a, e.input);
    e.input.push_back(op);
    written(b, e.input);
    written(answer, e.output);
    e.output_scored.assign(e.output.size(), 1);
    return e;
  }

 private:
  static constexpr int kFirstHint = 12;
  bool zero_pad_;
  int hints_, extra_;
};

class AdditionReversed final : public ReversedArithmetic {
 public:
  AdditionReversed(int hints, bool zero_pad) : ReversedArithmetic(hints, 1, zero_pad) {}
  std::string Name() const override { return "addition_reversed"; }
  int Shapes(int n) const override { return n; }
  Example SampleShape(int n, int shape, Rng& rng) const override {
    LEXP_CHECK(shape >= 0 && shape < Shapes(n), "addition_reversed: shape out of range");
    std::vector<int> a = RandomNumber(n, rng), b = RandomNumber(n - shape, rng);
    if (rng.UniformInt(0, 1)) std::swap(a, b);
    std::vector<int> sum(n + 1, 0);
    int carry = 0;
    for (int i = 0; i < n; ++i) {
      const int t = (i < static_cast<int>(a.size()) ? a[i] : 0) +
                    (i < static_cast<int>(b.size()) ? b[i] : 0) + carry;
      sum[i] = t % 10;
      carry = t / 10;
    }
    sum[n] = carry;
    return Answered(a, kPlus, b, sum, rng);
  }
};

class MultiplicationReversed final : public ReversedArithmetic {
 public:
  MultiplicationReversed(int hints, bool zero_pad) : ReversedArithmetic(hints, 3, zero_pad) {}
  std::string Name() const override { return "multiplication_reversed"; }
  int Shapes(int n) const override { return std::min(3, n); }
  Example SampleShape(int n, int shape, Rng& rng) const override {
    LEXP_CHECK(shape >= 0 && shape < Shapes(n), "multiplication_reversed: shape out of range");
    const std::vector<int> a = RandomNumber(n, rng), b = RandomNumber(Shapes(n) - shape, rng);
    std::vector<int> product(a.size() + b.size(), 0);
    for (size_t j = 0; j < b.size(); ++j) {
      int carry = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        const int t = product[i + j] + a[i] * b[j] + carry;
        product[i + j] = t % 10;
        carry = t / 10;
      }
      for (size_t k = j + a.size(); carry > 0; ++k) {
        const int t = product[k] + carry;
        product[k] = t % 10;
        carry = t / 10;
      }
    }
    return Answered(a, kTimes, b, product, rng);
  }
};

}  // namespace

int64_t ValueOfReversed(const std::vector<int>& digits) {
  int64_t v = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) v = 10 * v + *it;
  return v;
}

std::unique_ptr<Task> Create(const std::string& name, const TaskOptions& options) {
  if (name != "addition_reversed" && name != "multiplication_reversed") return nullptr;
  LEXP_INPUT_CHECK(options.vocab == 0,
                   "task '" + name + "' has a fixed alphabet (digits, + and x); leave task.vocab at 0");
  const int fewest = name == "addition_reversed" ? 2 : 4;  // the answer of 1-digit operands
  LEXP_INPUT_CHECK(options.index_hints == 0 || options.index_hints >= fewest,
                   fmt::format("task.index_hints = {}: {} needs at least {} hints to name the "
                               "digits of its shortest answer (0 = none)",
                               options.index_hints, name, fewest));
  if (name == "addition_reversed")
    return std::make_unique<AdditionReversed>(options.index_hints, options.zero_pad);
  return std::make_unique<MultiplicationReversed>(options.index_hints, options.zero_pad);
}

}  // namespace lexp::arithmetic
