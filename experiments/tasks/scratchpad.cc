#include "experiments/tasks/scratchpad.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "nn/check.h"

namespace lexp {

namespace {

constexpr char kComponents[] = "icovr";

// The markers after the task's answer symbols.
enum Marker { kStep, kInput, kComputation, kOutput, kVariable, kRemaining, kPlus, kAnswer, kCount };

// One step of a left-to-right pass, each component's symbols (markers excluded; `computation`
// holds its operands, PLUS written between them).
struct Step {
  std::vector<int> input, operands, remaining;
  int output = 0, variable = 0;
};

struct Pass {
  std::vector<Step> steps;
  std::vector<int> answer;
  bool plus_between_operands = true;  // arithmetic computations: a PLUS b; others as they are
};

Pass SummationPass(const Example& e) {
  std::vector<int> v;
  for (size_t t = 0; t < e.input.size(); t += 2) v.push_back(e.input[t]);  // v, '+', v, ...
  Pass p;
  int s = 0;
  for (size_t k = 0; k < v.size(); ++k) {
    const int next = (s + v[k]) % 10;
    p.steps.push_back({{v[k]}, {s, v[k]}, {v.begin() + k + 1, v.end()}, next, next});
    s = next;
  }
  p.answer = e.output;
  return p;
}

Pass ParityPass(const Example& e) {
  Pass p;
  int parity = 0;
  for (size_t k = 0; k < e.input.size(); ++k) {
    const int b = e.input[k], next = parity ^ b;
    p.steps.push_back({{b}, {parity, b}, {e.input.begin() + k + 1, e.input.end()}, next, next});
    parity = next;
  }
  p.answer = e.output;
  return p;
}

// Digits from the least significant: a_j b_j and the carry in; the step's sum digit is the output,
// the carry out the variable; the digits not yet added (both operands' prefixes) remain.
Pass AdditionPass(const Example& e) {
  const int n = static_cast<int>(e.input.size() - 1) / 2;
  const std::vector<int> a(e.input.begin(), e.input.begin() + n),
      b(e.input.begin() + n + 1, e.input.end());
  Pass p;
  int carry = 0;
  for (int j = n - 1; j >= 0; --j) {
    const int t = a[j] + b[j] + carry;
    Step st{{a[j], b[j]}, {a[j], b[j], carry}, {a.begin(), a.begin() + j}, t % 10, t / 10};
    st.remaining.insert(st.remaining.end(), b.begin(), b.begin() + j);
    p.steps.push_back(std::move(st));
    carry = t / 10;
  }
  p.answer = e.output;
  return p;
}

// Selection sort, as the paper's sort scratchpad: step k takes the front of the unsorted portion,
// finds the portion's minimum (the first, on ties), writes it and swaps it to the front; the
// remaining input is the unsorted portion after the swap. No variable.
Pass SortPass(const Example& e) {
  std::vector<int> u = e.input;
  Pass p;
  for (size_t k = 0; k < u.size(); ++k) {
    const size_t m = static_cast<size_t>(std::min_element(u.begin() + k, u.end()) - u.begin());
    const int front = u[k];
    std::swap(u[k], u[m]);
    p.steps.push_back({{front}, {}, {u.begin() + k + 1, u.end()}, u[k], 0});
  }
  p.answer = e.output;
  return p;
}

// LEGO (kazemnejad.h's clauses "x_0 s ONE", "x_i s x_{i-1}", then QUERY x_q), resolved in chain
// order as the paper's scratchpad: step i names x_i, computes s_i x_{i-1} = s_i value(x_{i-1}) (nothing
// for x_0, whose right side is the constant), writes value(x_i), and leaves the clauses not yet
// resolved. Steps use the answer symbols 0 (-1) and 1 (+1), then the input's variables, signs and
// ONE (kLegoSymbols after the two answer symbols). Deviation: every clause is resolved, not only
// those up to the queried variable, so that every example of one n has one length.
constexpr int kLegoVars = 26, kLegoPlus = 26, kLegoOne = 28, kLegoSymbols = 29;
Pass LegoPass(const Example& e) {
  const int n = static_cast<int>(e.input.size() - 2) / 3;
  auto sym = [](int input_symbol) { return 2 + input_symbol; };  // into the step alphabet
  std::vector<int> value(n);
  Pass p;
  p.plus_between_operands = false;
  for (int i = 0; i < n; ++i) {
    const int x = e.input[3 * i], sign = e.input[3 * i + 1];
    const int before = i == 0 ? 1 : value[i - 1];
    value[i] = sign == kLegoPlus ? before : 1 - before;
    Step st{{sym(x)}, {}, {}, value[i], 0};
    if (i > 0) st.operands = {sym(sign), sym(e.input[3 * i - 3]), sym(sign), before};
    for (int t = 3 * (i + 1); t < 3 * n; ++t) st.remaining.push_back(sym(e.input[t]));
    p.steps.push_back(std::move(st));
  }
  p.answer = e.output;
  return p;
}

// The tasks a scratchpad is defined for, each with its pass, the components it has and the
// symbols its steps add to the task's answer alphabet: the one list the check, the message and
// the steps read.
using PassOf = Pass (*)(const Example&);
struct ScratchpadKind {
  const char* task;
  PassOf pass;
  const char* components;  // of "icovr"
  int extra_symbols;
};
constexpr ScratchpadKind kKinds[] = {{"addition", AdditionPass, "icovr", 0},
                                     {"summation", SummationPass, "icovr", 0},
                                     {"parity", ParityPass, "icovr", 0},
                                     {"sort", SortPass, "icor", 0},
                                     {"lego", LegoPass, "icor", kLegoSymbols}};

class ScratchpadTask final : public Task {
 public:
  ScratchpadTask(std::unique_ptr<Task> base, std::string components, const ScratchpadKind& kind)
      : base_(std::move(base)),
        components_(std::move(components)),
        pass_(kind.pass),
        markers_at_(base_->OutputAlphabet() + kind.extra_symbols) {}
  std::string Name() const override { return base_->Name(); }
  // A task whose input and answer share their symbols (sort) keeps sharing them: the markers
  // join both alphabets.
  int InputAlphabet() const override {
    return base_->SharedAlphabet() ? OutputAlphabet() : base_->InputAlphabet();
  }
  bool SharedAlphabet() const override { return base_->SharedAlphabet(); }
  int OutputAlphabet() const override { return markers_at_ + kCount; }
  bool SupportsEncoder() const override { return base_->SupportsEncoder(); }
  int MinLength() const override { return base_->MinLength(); }
  int MaxLength() const override { return base_->MaxLength(); }
  Decoding SourceDecoding() const override { return base_->SourceDecoding(); }
  Example Sample(int n, Rng& rng) const override { return WithSteps(base_->Sample(n, rng)); }

 private:
  Example WithSteps(const Example& e) const {
    const Pass p = pass_(e);
    auto mark = [&](Marker m) { return markers_at_ + m; };
    Example out;
    out.input = e.input;
    auto put = [&](Marker m, const std::vector<int>& symbols) {
      out.output.push_back(mark(m));
      out.output.insert(out.output.end(), symbols.begin(), symbols.end());
    };
    for (const Step& st : p.steps) {
      out.output.push_back(mark(kStep));
      for (char c : components_) {
        switch (c) {
          case 'i':
            put(kInput, st.input);
            break;
          case 'c': {
            out.output.push_back(mark(kComputation));
            for (size_t k = 0; k < st.operands.size(); ++k) {
              if (k && p.plus_between_operands) out.output.push_back(mark(kPlus));
              out.output.push_back(st.operands[k]);
            }
            break;
          }
          case 'o':
            put(kOutput, {st.output});
            break;
          case 'v':
            put(kVariable, {st.variable});
            break;
          case 'r':
            put(kRemaining, st.remaining);
            break;
        }
      }
    }
    const size_t answer_at = out.output.size() + 1;
    put(kAnswer, p.answer);
    out.output_scored.assign(out.output.size(), 1);
    out.output_graded.assign(out.output.size(), 0);
    // The answer is graded (the end token after it by the layout).
    std::fill(out.output_graded.begin() + answer_at, out.output_graded.end(), 1);
    return out;
  }

  std::unique_ptr<Task> base_;
  std::string components_;
  PassOf pass_;
  int markers_at_;  // the first marker symbol, after the answer and step symbols
};

}  // namespace

std::string ScratchpadTasks() {
  std::string names;
  for (const ScratchpadKind& k : kKinds) names += (names.empty() ? "" : ", ") + std::string(k.task);
  return names;
}

bool ValidScratchpadComponents(const std::string& components) {
  if (components.empty()) return false;
  size_t at = 0;
  for (char c : components) {
    const size_t where = std::string(kComponents).find(c, at);
    if (where == std::string::npos) return false;
    at = where + 1;
  }
  return true;
}

std::unique_ptr<Task> WithScratchpad(std::unique_ptr<Task> base, const std::string& components) {
  LEXP_INPUT_CHECK(ValidScratchpadComponents(components),
                   "task.scratchpad = \"" + components +
                       "\": the components are a subset of i (input), c (computation), o "
                       "(output), v (variable update), r (remaining input), in that order, e.g. "
                       "\"icovr\" or \"cv\"");
  for (const ScratchpadKind& k : kKinds)
    if (base->Name() == k.task) {
      for (char c : components)
        LEXP_INPUT_CHECK(std::string(k.components).find(c) != std::string::npos,
                         "task.scratchpad = \"" + components + "\": task '" + k.task +
                             "' has no variable to update ('" + std::string(1, c) +
                             "'); its components are " + k.components);
      return std::make_unique<ScratchpadTask>(std::move(base), components, k);
    }
  FailInput("task.scratchpad: task '" + base->Name() + "' has no scratchpad; it is defined for " +
            ScratchpadTasks());
}

}  // namespace lexp
