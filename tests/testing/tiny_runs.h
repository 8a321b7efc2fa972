// Shared fixtures for tests that train: a fresh temporary directory, and a tiny copy-task recipe
// (seconds to train) that each test adjusts with `--set`-style overrides.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "experiments/core/recipe.h"
#include "pe/registry.h"
#include "nn/check.h"

namespace lexp::testing {

inline std::filesystem::path FreshTempDir(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("lexp_test_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

// 2 layers, d_model 16, 2 heads, copy with 12 tokens at lengths 1..5, 60 steps of 8 sequences,
// evaluated at 2, 5, 9 on 16 sequences, probes at 5 and 9; then `sets` applied and validated.
inline RecipeConfig TinyCopyRecipe(const std::vector<std::string>& sets = {}) {
  RecipeConfig c = ParseRecipe(R"(
[task]
name = "copy"
vocab = 12
[model]
d_model = 16
n_heads = 2
n_layers = 2
encodings = ["t5"]
[train]
max_length = 5
steps = 60
batch_size = 8
warmup_steps = 5
log_every = 1000
checkpoint_every = 1000
[eval]
lengths = [2, 5, 9]
samples = 16
batch_size = 8
[probe]
lengths = [5, 9]
samples = 2
stored_samples = 1
)",
                               "tiny.toml");
  ApplyOverrides(c, sets);
  ValidateRecipe(c);
  return c;
}

// The task settings a registry-wide test adds for `encoding`: an encoding that numbers digits
// (abacus) trains on addition_reversed instead of copy; others need none.
inline std::vector<std::string> TaskSetsFor(const std::string& encoding) {
  if (FindEncoding(encoding).reads_digits) return {"task.name=addition_reversed", "task.vocab=0"};
  return {};
}

// The error TinyCopyRecipe(sets) raises (empty when the recipe is accepted).
inline std::string TinyRecipeError(const std::vector<std::string>& sets) {
  try {
    TinyCopyRecipe(sets);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace lexp::testing
