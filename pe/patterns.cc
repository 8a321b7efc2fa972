#include "pe/patterns.h"

#include "nn/check.h"

namespace lexp {

const std::vector<std::string>& PatternNames() {
  static const std::vector<std::string> k = {"full", "sliding_window", "bca", "lambda"};
  return k;
}

std::unique_ptr<AttentionPattern> CreatePattern(const PatternConfig& c) {
  if (c.name == "full") return nullptr;
  LEXP_INPUT_CHECK(c.window >= 1, "pattern '" + c.name + "' needs a window >= 1");
  if (c.name == "sliding_window") return std::make_unique<SlidingWindowPattern>(c.window);
  if (c.name == "bca") {
    LEXP_INPUT_CHECK(c.window >= 2 && c.window % 2 == 0,
                     "pattern 'bca' needs an even block size >= 2");
    return std::make_unique<BlockwiseCausalPattern>(c.window);
  }
  if (c.name == "lambda") {
    LEXP_INPUT_CHECK(c.global >= 0, "pattern 'lambda' needs n_global >= 0");
    return std::make_unique<LambdaPattern>(c.global, c.window, c.limit > 0 ? c.limit : c.window);
  }
  std::string known;
  for (const auto& n : PatternNames()) known += (known.empty() ? "" : ", ") + n;
  FailInput("unknown pattern '" + c.name + "'; patterns: " + known);
}

}  // namespace lexp
