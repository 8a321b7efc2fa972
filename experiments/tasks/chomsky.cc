// Task objects for the Chomsky-hierarchy sample functions.
#include "experiments/tasks/chomsky.h"

#include <functional>

namespace lexp::chomsky {
namespace {

class ChomskyTask final : public Task {
 public:
  using Sampler = Example (*)(int, Rng&);
  ChomskyTask(std::string name, int in, int out, bool shared, bool padded, Sampler f)
      : name_(std::move(name)), in_(in), out_(out), shared_(shared), padded_(padded), f_(f) {}
  std::string Name() const override { return name_; }
  int InputAlphabet() const override { return in_; }
  int OutputAlphabet() const override { return out_; }
  bool SharedAlphabet() const override { return shared_; }
  // Outputs padded past their end symbol (termination masks) are not answers to generate.
  bool HasAnswer() const override { return !padded_; }
  Example Sample(int n, Rng& rng) const override { return f_(n, rng); }

 private:
  std::string name_;
  int in_, out_;
  bool shared_, padded_;
  Sampler f_;
};

}  // namespace

std::unique_ptr<Task> Create(const std::string& name) {
  struct Entry {
    const char* name;
    int in, out;
    bool shared, padded;
    ChomskyTask::Sampler f;
  };
  static const Entry kTasks[] = {
      {"even_pairs", 2, 2, false, false, EvenPairs},
      {"modular_arithmetic", 9, 5, false, false, ModularArithmetic},
      {"cycle_navigation", 3, 5, false, false, CycleNavigation},
      {"stack_manipulation", 5, 3, false, true, StackManipulation},
      {"modular_arithmetic_brackets", 10, 5, false, false, ModularArithmeticBrackets},
      {"solve_equation", 11, 5, false, false, SolveEquation},
      {"missing_duplicate_string", 4, 2, false, false, MissingDuplicateString},
      {"odds_first", 2, 2, true, false, OddsFirst},
      {"binary_addition", 3, 3, false, true, BinaryAddition},
      {"binary_multiplication", 3, 3, false, true, BinaryMultiplication},
      {"compute_sqrt", 2, 2, false, false, ComputeSqrt},
      {"bucket_sort", 5, 5, true, false, BucketSort},
  };
  for (const auto& t : kTasks)
    if (name == t.name)
      return std::make_unique<ChomskyTask>(t.name, t.in, t.out, t.shared, t.padded, t.f);
  return nullptr;
}

}  // namespace lexp::chomsky
