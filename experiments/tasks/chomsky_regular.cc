// Regular-level Chomsky tasks (the Deletang et al. / Ruoss et al. task code): even_pairs,
// modular_arithmetic, cycle_navigation, and the mod-5 expression evaluator shared with the bracket
// tasks.
#include <algorithm>

#include "experiments/tasks/chomsky.h"
#include "nn/check.h"

namespace lexp::chomsky {
namespace {

constexpr int kPlus = 5, kMinus = 6, kTimes = 7, kOpen = 8, kClose = 9;

int Mod5(long v) { return static_cast<int>(((v % 5) + 5) % 5); }

// Recursive descent: expr := term (+|- term)*;  term := factor (* factor)*;
// factor := digit | - factor | ( expr ).
class Mod5Parser {
 public:
  explicit Mod5Parser(const std::vector<int>& t) : t_(t) {}
  int Parse() {
    const int v = Expr();
    LEXP_CHECK(i_ == t_.size(), "mod-5 expression: trailing symbols");
    return v;
  }

 private:
  int Peek() const { return i_ < t_.size() ? t_[i_] : -1; }
  int Expr() {
    long v = Term();
    while (Peek() == kPlus || Peek() == kMinus) {
      const int op = t_[i_++];
      const int r = Term();
      v = op == kPlus ? v + r : v - r;
    }
    return Mod5(v);
  }
  int Term() {
    long v = Factor();
    while (Peek() == kTimes) {
      ++i_;
      v = Mod5(v * Factor());
    }
    return Mod5(v);
  }
  int Factor() {
    const int s = Peek();
    LEXP_CHECK(s >= 0, "mod-5 expression: unexpected end");
    ++i_;
    if (s < 5) return s;
    if (s == kMinus) return Mod5(-Factor());
    LEXP_CHECK(s == kOpen, "mod-5 expression: unexpected symbol");
    const int v = Expr();
    LEXP_CHECK(Peek() == kClose, "mod-5 expression: missing ')'");
    ++i_;
    return v;
  }
  const std::vector<int>& t_;
  size_t i_ = 0;
};

Example Scored(std::vector<int> in, std::vector<int> out) {
  Example e{std::move(in), std::move(out), {}, {}};
  e.output_scored.assign(e.output.size(), 1);
  return e;
}

}  // namespace

int EvaluateMod5(const std::vector<int>& tokens) { return Mod5Parser(tokens).Parse(); }

Example EvenPairs(int n, Rng& rng) {
  std::vector<int> in(n);
  for (int& b : in) b = static_cast<int>(rng.UniformInt(0, 1));
  int unequal = 0;
  for (int t = 1; t < n; ++t) unequal += in[t] != in[t - 1];
  return Scored(std::move(in), {unequal % 2});
}

// Even n is shortened to n - 1, as the reference does, so the expression alternates digits and
// operators and ends with a digit.
Example ModularArithmetic(int n, Rng& rng) {
  const int m = n % 2 == 0 ? n - 1 : n;
  std::vector<int> in(m);
  for (int t = 0; t < m; ++t)
    in[t] = t % 2 == 0 ? static_cast<int>(rng.UniformInt(0, 4))
                       : static_cast<int>(rng.UniformInt(kPlus, kTimes));
  const int v = EvaluateMod5(in);
  return Scored(std::move(in), {v});
}

Example CycleNavigation(int n, Rng& rng) {
  std::vector<int> in(n);
  long pos = 0;
  for (int& s : in) {
    s = static_cast<int>(rng.UniformInt(0, 2));
    pos += s - 1;
  }
  return Scored(std::move(in), {Mod5(pos)});
}

}  // namespace lexp::chomsky
