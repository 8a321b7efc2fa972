#include "experiments/tasks/kazemnejad.h"

#include <algorithm>
#include <numeric>

#include "nn/check.h"

namespace lexp::kazemnejad {
namespace {

std::vector<int> Uniform(int n, int alphabet, Rng& rng) {
  std::vector<int> s(n);
  for (int& x : s) x = static_cast<int>(rng.UniformInt(0, alphabet - 1));
  return s;
}

Example AllScored(std::vector<int> in, std::vector<int> out) {
  Example e{std::move(in), std::move(out), {}, {}};
  e.output_scored.assign(e.output.size(), 1);
  return e;
}

std::vector<int> Concat(std::vector<int> a, int sep, const std::vector<int>& b) {
  a.push_back(sep);
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class CopyVariant final : public Task {
 public:
  Decoding SourceDecoding() const override { return Decoding::kGreedy; }
  CopyVariant(std::string name, int vocab) : name_(std::move(name)), v_(vocab > 0 ? vocab : 100) {}
  std::string Name() const override { return name_; }
  int InputAlphabet() const override { return v_ + 1; }  // + NEXT (output only)
  int OutputAlphabet() const override { return v_ + 1; }
  bool SharedAlphabet() const override { return true; }
  Example Sample(int n, Rng& rng) const override {
    const int next = v_;
    if (name_ == "copy_rsc" || name_ == "copy_rsc2x") {
      const std::vector<int> in(n, static_cast<int>(rng.UniformInt(0, v_ - 1)));
      std::vector<int> out = in;
      if (name_ == "copy_rsc2x") out.insert(out.end(), in.begin(), in.end());
      return AllScored(in, out);
    }
    if (name_ == "copy_rdc") {
      const int a = static_cast<int>(rng.UniformInt(0, v_ - 1));
      int b = static_cast<int>(rng.UniformInt(0, v_ - 2));
      b += b >= a;  // B != A
      return AllScored(std::vector<int>(n, a), std::vector<int>(n, b));
    }
    const std::vector<int> src = Uniform(n, v_, rng);
    const std::vector<int> rev(src.rbegin(), src.rend());
    if (name_ == "copy_cmc2x") return AllScored(src, Concat(src, next, src));
    if (name_ == "reverse_mc") return AllScored(src, rev);
    if (name_ == "reverse_mc2x") return AllScored(src, Concat(rev, next, rev));
    LEXP_CHECK(name_ == "reverse_mcrv", "kazemnejad: unknown copy variant");
    return AllScored(src, Concat(rev, next, src));
  }

 private:
  std::string name_;
  int v_;
};

class Addition final : public Task {
 public:
  Decoding SourceDecoding() const override { return Decoding::kGreedy; }
  std::string Name() const override { return "addition"; }
  int InputAlphabet() const override { return 11; }
  int OutputAlphabet() const override { return 10; }
  Example Sample(int n, Rng& rng) const override {
    // a: exactly n digits (first digit 1-9, or any digit when n = 1); b: 1..n digits.
    std::vector<int> a(n, 0), b(n, 0);  // most significant first, zero-padded to n
    for (int i = 0; i < n; ++i) a[i] = static_cast<int>(rng.UniformInt(i == 0 && n > 1 ? 1 : 0, 9));
    const int lb = static_cast<int>(rng.UniformInt(1, n));
    for (int i = n - lb; i < n; ++i)
      b[i] = static_cast<int>(rng.UniformInt(i == n - lb && lb > 1 ? 1 : 0, 9));
    if (rng.UniformInt(0, 1)) std::swap(a, b);
    std::vector<int> sum(n + 1, 0);
    int carry = 0;
    for (int i = n - 1; i >= 0; --i) {
      const int t = a[i] + b[i] + carry;
      sum[i + 1] = t % 10;
      carry = t / 10;
    }
    sum[0] = carry;
    return AllScored(Concat(a, 10, b), sum);
  }
};

class Summation final : public Task {
 public:
  Decoding SourceDecoding() const override { return Decoding::kGreedy; }
  std::string Name() const override { return "summation"; }
  int InputAlphabet() const override { return 11; }
  int OutputAlphabet() const override { return 10; }
  Example Sample(int n, Rng& rng) const override {
    std::vector<int> in;
    int sum = 0;
    for (int i = 0; i < n; ++i) {
      if (i) in.push_back(10);
      const int v = static_cast<int>(rng.UniformInt(1, 9));
      in.push_back(v);
      sum += v;
    }
    return AllScored(std::move(in), {sum % 10});
  }
};

class Parity final : public Task {
 public:
  Decoding SourceDecoding() const override { return Decoding::kGreedy; }
  std::string Name() const override { return "parity"; }
  int InputAlphabet() const override { return 2; }
  int OutputAlphabet() const override { return 2; }
  Example Sample(int n, Rng& rng) const override {
    std::vector<int> in = Uniform(n, 2, rng);
    const long ones = std::count(in.begin(), in.end(), 1);
    return AllScored(std::move(in), {ones % 2 == 0 ? 1 : 0});
  }
};

class Sort final : public Task {
 public:
  Decoding SourceDecoding() const override { return Decoding::kGreedy; }
  explicit Sort(int vocab) : v_(vocab > 0 ? vocab : 50) {}
  std::string Name() const override { return "sort"; }
  int InputAlphabet() const override { return v_; }
  int OutputAlphabet() const override { return v_; }
  bool SharedAlphabet() const override { return true; }
  Example Sample(int n, Rng& rng) const override {
    std::vector<int> in = Uniform(n, v_, rng), out = in;
    std::sort(out.begin(), out.end());
    return AllScored(std::move(in), std::move(out));
  }

 private:
  int v_;
};

class Lego final : public Task {
 public:
  Decoding SourceDecoding() const override { return Decoding::kGreedy; }
  static constexpr int kVars = 26, kPlus = 26, kMinus = 27, kOne = 28, kQuery = 29;
  std::string Name() const override { return "lego"; }
  int InputAlphabet() const override { return 30; }
  int OutputAlphabet() const override { return 2; }
  int MaxLength() const override { return kVars; }
  Example Sample(int n, Rng& rng) const override {
    std::vector<int> names(kVars);
    std::iota(names.begin(), names.end(), 0);
    for (int i = 0; i < n; ++i)  // partial Fisher-Yates: n distinct variable tokens
      std::swap(names[i], names[static_cast<size_t>(rng.UniformInt(i, kVars - 1))]);
    std::vector<int> in, value(n);
    for (int i = 0; i < n; ++i) {
      const bool plus = rng.UniformInt(0, 1) == 1;
      value[i] = (i == 0 ? 1 : value[i - 1]) * (plus ? 1 : -1);
      in.insert(in.end(), {names[i], plus ? kPlus : kMinus, i == 0 ? kOne : names[i - 1]});
    }
    const int q = static_cast<int>(rng.UniformInt(n / 2, n - 1));
    in.insert(in.end(), {kQuery, names[q]});
    return AllScored(std::move(in), {value[q] > 0 ? 1 : 0});
  }
};

}  // namespace

std::unique_ptr<Task> Create(const std::string& name, const TaskOptions& o) {
  for (const char* v : {"copy_rsc", "copy_rsc2x", "copy_rdc", "copy_cmc2x", "reverse_mc",
                        "reverse_mc2x", "reverse_mcrv"})
    if (name == v) {
      LEXP_INPUT_CHECK(o.vocab == 0 || o.vocab >= 2, "task '" + name + "' needs vocab >= 2");
      return std::make_unique<CopyVariant>(name, o.vocab);
    }
  if (name == "sort") return std::make_unique<Sort>(o.vocab);
  std::unique_ptr<Task> t;
  if (name == "addition") t = std::make_unique<Addition>();
  if (name == "summation") t = std::make_unique<Summation>();
  if (name == "parity") t = std::make_unique<Parity>();
  if (name == "lego") t = std::make_unique<Lego>();
  if (t)
    LEXP_INPUT_CHECK(o.vocab == 0,
                     "task '" + name + "' has a fixed alphabet; leave task.vocab at 0");
  return t;
}

}  // namespace lexp::kazemnejad
