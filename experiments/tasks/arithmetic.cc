#include "experiments/tasks/arithmetic.h"

#include <algorithm>
#include <utility>

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

Example Answered(const std::vector<int>& a, int op, const std::vector<int>& b,
                 std::vector<int> answer) {
  Example e;
  e.input = a;
  e.input.push_back(op);
  e.input.insert(e.input.end(), b.begin(), b.end());
  e.output = std::move(answer);
  e.output_scored.assign(e.output.size(), 1);
  return e;
}

class ReversedArithmetic : public Task {
 public:
  int InputAlphabet() const override { return 12; }
  int OutputAlphabet() const override { return 12; }
  bool SharedAlphabet() const override { return true; }
  int DigitSymbols() const override { return 10; }
  Decoding SourceDecoding() const override { return Decoding::kGreedy; }
  Example Sample(int n, Rng& rng) const override { return SampleShape(n, 0, rng); }
};

class AdditionReversed final : public ReversedArithmetic {
 public:
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
    return Answered(a, kPlus, b, std::move(sum));
  }
};

class MultiplicationReversed final : public ReversedArithmetic {
 public:
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
    return Answered(a, kTimes, b, std::move(product));
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
  if (name == "addition_reversed") return std::make_unique<AdditionReversed>();
  return std::make_unique<MultiplicationReversed>();
}

}  // namespace lexp::arithmetic
