#include "experiments/tasks/scratchpad.h"

#include <utility>
#include <vector>

#include "nn/check.h"

namespace lexp {

namespace {

constexpr char kComponents[] = "icovr";

// The markers after the task's answer symbols.
enum Marker { kStep, kInput, kComputation, kOutput, kVariable, kRemaining, kPlus, kAnswer, kCount };

// One left-to-right pass: the operands read from the input, the state before and after each step.
struct Pass {
  std::vector<int> operands;  // v_k or b_k
  std::vector<int> state;     // state[k] = after k steps (state[0] = 0)
  std::vector<int> output;    // the step's output digit
  int answer = 0;
};

Pass SummationPass(const Example& e) {
  Pass p;
  for (size_t t = 0; t < e.input.size(); t += 2) p.operands.push_back(e.input[t]);  // v, '+', v...
  p.state.push_back(0);
  for (int v : p.operands) {
    const int out = (p.state.back() + v) % 10;
    p.output.push_back(out);
    p.state.push_back(out);
  }
  p.answer = e.output.back();
  return p;
}

Pass ParityPass(const Example& e) {
  Pass p;
  p.operands = e.input;
  p.state.push_back(0);
  for (int b : p.operands) {
    p.state.push_back(p.state.back() ^ b);
    p.output.push_back(p.state.back());
  }
  p.answer = e.output.back();
  return p;
}

class ScratchpadTask final : public Task {
 public:
  ScratchpadTask(std::unique_ptr<Task> base, std::string components)
      : base_(std::move(base)), components_(std::move(components)) {}
  std::string Name() const override { return base_->Name(); }
  int InputAlphabet() const override { return base_->InputAlphabet(); }
  int OutputAlphabet() const override { return base_->OutputAlphabet() + kCount; }
  bool SupportsEncoder() const override { return base_->SupportsEncoder(); }
  int MinLength() const override { return base_->MinLength(); }
  int MaxLength() const override { return base_->MaxLength(); }
  Decoding SourceDecoding() const override { return base_->SourceDecoding(); }
  Example Sample(int n, Rng& rng) const override { return WithSteps(base_->Sample(n, rng)); }

 private:
  Example WithSteps(const Example& e) const {
    const Pass p = base_->Name() == "summation" ? SummationPass(e) : ParityPass(e);
    const int base = base_->OutputAlphabet();
    auto mark = [&](Marker m) { return base + m; };
    Example out;
    out.input = e.input;
    const int n = static_cast<int>(p.operands.size());
    for (int k = 0; k < n; ++k) {
      out.output.push_back(mark(kStep));
      for (char c : components_) {
        switch (c) {
          case 'i':
            out.output.insert(out.output.end(), {mark(kInput), p.operands[k]});
            break;
          case 'c':
            out.output.insert(out.output.end(),
                              {mark(kComputation), p.state[k], mark(kPlus), p.operands[k]});
            break;
          case 'o':
            out.output.insert(out.output.end(), {mark(kOutput), p.output[k]});
            break;
          case 'v':
            out.output.insert(out.output.end(), {mark(kVariable), p.state[k + 1]});
            break;
          case 'r':
            out.output.push_back(mark(kRemaining));
            out.output.insert(out.output.end(), p.operands.begin() + k + 1, p.operands.end());
            break;
        }
      }
    }
    out.output.insert(out.output.end(), {mark(kAnswer), p.answer});
    out.output_scored.assign(out.output.size(), 1);
    out.output_graded.assign(out.output.size(), 0);
    out.output_graded.back() = 1;  // the answer (the end token after it is graded by the layout)
    return out;
  }

  std::unique_ptr<Task> base_;
  std::string components_;
};

}  // namespace

const char* ScratchpadTasks() { return "summation, parity"; }

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
  LEXP_INPUT_CHECK(base->Name() == "summation" || base->Name() == "parity",
                   "task.scratchpad: task '" + base->Name() +
                       "' has no scratchpad; it is defined for " + ScratchpadTasks());
  return std::make_unique<ScratchpadTask>(std::move(base), components);
}

}  // namespace lexp
