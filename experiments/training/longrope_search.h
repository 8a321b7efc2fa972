// LongRoPE's search for non-uniform rotary rescale factors (Ding et al. 2024, "LongRoPE: extending
// LLM context window beyond 2 million tokens", arXiv:2402.13753, sec. 3.2 and Algorithm 1; the
// authors' microsoft/LongRoPE evolution/algorithms/genetic_base.py and dim_mono.py): an evolution
// over one factor lambda_k >= 1 per rotary pair, non-decreasing from the fastest pair to the slowest,
// and the number n-hat of initial positions left unscaled, scored by a trained model's loss at the
// target length. `lexp eval` runs it when a recipe sets encoding_options.rope.long_factors =
// "search" (EvaluateRunFile): the factors found become the evaluation's own recipe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "experiments/core/assembled_model.h"

namespace lexp {

// The evolution's settings: the reference's defaults (dim_mono_llama.json: population 64, 40
// iterations, 32 parents, 16 mutations and 16 crossovers per iteration, 20 crossover tries, step
// 0.01) and the paper's search space (lambda in [1, 1.25 s], n-hat in {0, 1, 2, 4, 8, 12, 16, 20, 24,
// 28, 32, 64, 128, 256}).
struct LongropeSearchSettings {
  double factor = 1;  // s, the extension; the factors range over [1, 1.25 s] in steps of 0.01
  int population = 64, iterations = 40, parents = 32, mutations = 16, crossovers = 16;
  int crossover_tries = 20;
  std::vector<int> start_token_choices = {0, 1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 64, 128, 256};
  uint64_t seed = 1;
};

// One candidate: factors in hundredths (lambda_k = units[k] / 100, exact on the search's grid) and
// n-hat; loss = its score.
struct LongropeCandidate {
  std::vector<int> units;
  int start_tokens = 0;
  double loss = 0;
  std::vector<double> Factors() const;
  // "1.00, 1.25, ..." as rope's long_factors option reads it.
  std::string FactorText() const;
};

struct LongropeSearchResult {
  LongropeCandidate best;
  std::vector<LongropeCandidate> initial;  // the seeded individuals as scored (PI, NTK, YaRN, ...)
  std::vector<double> best_loss;           // the best loss before each iteration, then at the end
  int evaluated = 0;                       // candidates scored
};

// The evolution alone, over any objective (loss of factors and n-hat; lower is better). `initial`
// holds the seeded factor vectors (each clamped to the grid and made non-decreasing, n-hat 0); the
// first population is they and mutations of them. Deterministic for a seed.
LongropeSearchResult EvolveLongropeFactors(
    const std::vector<std::vector<double>>& initial, const LongropeSearchSettings& settings,
    const std::function<double(const std::vector<double>& factors, int start_tokens)>& loss,
    const std::function<void(const std::string&)>& progress = nullptr);

// What `long_factors = "search[:key=value,...]"` asks for: the target length (task length; 0 =
// s x train.max_length), the sequences scored per candidate, the iterations and the population.
struct LongropeSearchRequest {
  int length = 0, samples = 16, iterations = 40, population = 64;
};
// True when the text asks for a search ("search" or "search:..."); *request receives its settings.
// Input errors name the key and the allowed ones.
bool ParseLongropeSearch(const std::string& long_factors, LongropeSearchRequest* request);

// The search on a trained RoPE run: `cfg` is the evaluation's recipe (the run's, with its overrides;
// rope's scaling longrope and factor s > 1), every candidate scored by the run's weights on
// `request.samples` sequences of the training data (the task's own, never the held-out data the
// evaluation reads) drawn once from a stream of the run's seed; seeded with PI (lambda = s), NTK
// and YaRN's factors. Writes the result's factors and n-hat into cfg's rope options.
LongropeSearchResult SearchLongropeFactors(const TrainedRun& run, RecipeConfig& cfg,
                                           const LongropeSearchRequest& request,
                                           const std::function<void(const std::string&)>& progress);

}  // namespace lexp
