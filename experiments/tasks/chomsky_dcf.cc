// Deterministic context-free Chomsky tasks (the Deletang et al. / Ruoss et al. task code):
// stack_manipulation, modular_arithmetic_brackets, solve_equation.
#include <algorithm>

#include "experiments/tasks/chomsky.h"
#include "nn/check.h"

namespace lexp::chomsky {
namespace {

constexpr int kPop = 2, kPush0 = 3, kPush1 = 4, kEnd = 2;
constexpr int kPlus = 5, kMinus = 6, kTimes = 7, kOpen = 8, kClose = 9;

int Digit(Rng& rng) { return static_cast<int>(rng.UniformInt(0, 4)); }

// Bracket expression of exactly n symbols (ids of modular_arithmetic_brackets): n = 1 "d", 2 "-d",
// 3 "(d)", 4 "(-d)", n >= 5 "(L op R)" with |L| ~ U{1..n-4}, |R| = n - |L| - 3.
void Expression(int n, bool with_times, Rng& rng, std::vector<int>& out) {
  switch (n) {
    case 1:
      out.push_back(Digit(rng));
      return;
    case 2:
      out.insert(out.end(), {kMinus, Digit(rng)});
      return;
    case 3:
      out.insert(out.end(), {kOpen, Digit(rng), kClose});
      return;
    case 4:
      out.insert(out.end(), {kOpen, kMinus, Digit(rng), kClose});
      return;
    default:
      break;
  }
  const int left = static_cast<int>(rng.UniformInt(1, n - 4));
  const int right = n - left - 3;
  out.push_back(kOpen);
  Expression(left, with_times, rng, out);
  out.push_back(static_cast<int>(rng.UniformInt(kPlus, with_times ? kTimes : kMinus)));
  Expression(right, with_times, rng, out);
  out.push_back(kClose);
}

}  // namespace

// Stack of k ~ U{1..n-1} random bits (bottom to top), then n - k actions; the output is the final
// stack top to bottom, the end symbol, zeros up to n + 1; scored up to and including the end.
Example StackManipulation(int n, Rng& rng) {
  Example e;
  std::vector<int> stack;
  if (n == 1) {
    const int b = static_cast<int>(rng.UniformInt(0, 1));
    e.input = {b};
    stack = {b};
  } else {
    const int k = static_cast<int>(rng.UniformInt(1, n - 1));
    for (int i = 0; i < k; ++i) e.input.push_back(static_cast<int>(rng.UniformInt(0, 1)));
    stack = e.input;
    for (int i = k; i < n; ++i) {
      const int a = static_cast<int>(rng.UniformInt(kPop, kPush1));
      e.input.push_back(a);
      if (a == kPop) {
        if (!stack.empty()) stack.pop_back();
      } else {
        stack.push_back(a == kPush1 ? 1 : 0);
      }
    }
  }
  e.output.assign(stack.rbegin(), stack.rend());
  e.output.push_back(kEnd);
  e.output_scored.assign(e.output.size(), 1);
  e.output.resize(n + 1, 0);
  e.output_scored.resize(n + 1, 0);
  return e;
}

Example ModularArithmeticBrackets(int n, Rng& rng) {
  Example e;
  Expression(n, true, rng, e.input);
  e.output = {EvaluateMod5(e.input)};
  e.output_scored = {1};
  return e;
}

// An expression of n - 2 symbols without *, one digit replaced by x, then "=" and its value; the
// answer is the hidden digit. Ids: 0-4, 5 +, 6 -, 7 (, 8 ), 9 x, 10 =.
Example SolveEquation(int n, Rng& rng) {
  Example e;
  e.output_scored = {1};
  if (n < 3) {
    e.input.assign(n, 0);
    e.output = {0};
    return e;
  }
  std::vector<int> expr;
  Expression(n - 2, false, rng, expr);
  const int value = EvaluateMod5(expr);
  const int m = static_cast<int>(expr.size());
  int at = static_cast<int>(rng.UniformInt(0, m - 1));
  while (expr[at] > 4) at = (at + 1) % m;  // scan right (wrapping) to a digit
  e.output = {expr[at]};
  for (int t = 0; t < m; ++t) {
    const int s = expr[t];
    e.input.push_back(t == at ? 9 : s == kOpen ? 7 : s == kClose ? 8 : s);
  }
  e.input.push_back(10);
  e.input.push_back(value);
  return e;
}

}  // namespace lexp::chomsky
