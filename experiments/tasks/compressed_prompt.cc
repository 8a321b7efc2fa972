#include "experiments/tasks/compressed_prompt.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>

#include "nn/check.h"

namespace lexp {

std::vector<int> KeptInput(const std::vector<double>& surprisal, int query, double ratio) {
  const int n = static_cast<int>(surprisal.size()), C = std::max(0, n - query);
  const int K = C - static_cast<int>(std::lround(ratio * C));
  std::vector<int> order(C);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return surprisal[a] > surprisal[b]; });
  std::vector<int> kept(order.begin(), order.begin() + K);
  std::sort(kept.begin(), kept.end());
  for (int t = C; t < n; ++t) kept.push_back(t);
  return kept;
}

namespace {

class CompressedPromptTask final : public Task {
 public:
  CompressedPromptTask(std::unique_ptr<Task> base, double ratio, InputSurprisal surprisal)
      : base_(std::move(base)), ratio_(ratio), surprisal_(std::move(surprisal)) {}
  std::string Name() const override { return base_->Name(); }
  int InputAlphabet() const override { return base_->InputAlphabet(); }
  int OutputAlphabet() const override { return base_->OutputAlphabet(); }
  bool SharedAlphabet() const override { return base_->SharedAlphabet(); }
  bool HasAnswer() const override { return base_->HasAnswer(); }
  bool SupportsEncoder() const override { return base_->SupportsEncoder(); }
  int MinLength() const override { return base_->MinLength(); }
  int MaxLength() const override { return base_->MaxLength(); }
  Decoding SourceDecoding() const override { return base_->SourceDecoding(); }
  bool HasDepth() const override { return base_->HasDepth(); }
  int QueryTokens() const override { return base_->QueryTokens(); }
  Example Sample(int n, Rng& rng) const override { return Compress(base_->Sample(n, rng)); }
  Example SampleAtDepth(int n, double depth, Rng& rng) const override {
    return Compress(base_->SampleAtDepth(n, depth, rng));
  }

 private:
  Example Compress(Example e) const {
    const std::vector<double> s = surprisal_(e.input);
    LEXP_CHECK(s.size() == e.input.size(), "prompt compression: one surprisal per input symbol");
    std::vector<int> input;
    for (int t : KeptInput(s, base_->QueryTokens(), ratio_)) input.push_back(e.input[t]);
    e.input = std::move(input);
    return e;
  }

  std::unique_ptr<Task> base_;
  double ratio_;
  InputSurprisal surprisal_;
};

}  // namespace

std::unique_ptr<Task> WithCompressedPrompt(std::unique_ptr<Task> base, double ratio,
                                           InputSurprisal surprisal) {
  LEXP_INPUT_CHECK(ratio >= 0 && ratio < 1,
                   "a compression ratio is the fraction of the context dropped, in [0, 1); got " +
                       std::to_string(ratio));
  LEXP_INPUT_CHECK(base->HasAnswer(), "prompt compression needs a task with an answer to the "
                                      "prompt; '" + base->Name() + "' has none");
  return std::make_unique<CompressedPromptTask>(std::move(base), ratio, std::move(surprisal));
}

}  // namespace lexp
