#include "pe/patterns.h"

#include "nn/check.h"

namespace lexp {

const std::vector<std::string>& PatternNames() {
  static const std::vector<std::string> k = {"full",          "sliding_window", "bca",
                                             "lambda",        "dilated",        "shifted_sparse",
                                             "sinks",         "recurrence",     "self_extend",
                                             "string",        "anchor"};
  return k;
}

bool PatternRemapsDistances(const std::string& name) {
  return name == "lambda" || name == "sinks" || name == "self_extend" || name == "string";
}

void DilatedHeadPattern::KeyBounds(int i, int, int* b, int* e) const {
  *b = i;
  for (size_t a = 0; a < w_.size(); ++a) *b = std::min(*b, (i / w_[a]) * w_[a]);
  *e = i + 1;
}

int DilatedHeadPattern::Sets(int i, int j) const {
  if (j > i) return 0;
  int n = 0;
  for (size_t a = 0; a < w_.size(); ++a) {
    const int start = (i / w_[a]) * w_[a], g = head_ % r_[a];
    n += j >= start && (i - start) % r_[a] == g && (j - start) % r_[a] == g;
  }
  return n;
}

double DilatedHeadPattern::LogitOffset(int i, int j, int) const {
  return std::log(static_cast<double>(std::max(1, Sets(i, j))));
}

DilatedPattern::DilatedPattern(const std::vector<int>& segments, const std::vector<int>& dilations,
                               int heads)
    : AttentionPattern(true) {
  for (int h = 0; h < heads; ++h) heads_.emplace_back(segments, dilations, h);
}

std::unique_ptr<AttentionPattern> CreatePattern(const PatternConfig& c) {
  if (c.name == "full") return nullptr;
  if (c.name == "dilated") {
    LEXP_INPUT_CHECK(!c.segments.empty() && c.segments.size() == c.dilations.size(),
                     "pattern 'dilated' needs as many segment lengths as dilations (one or more)");
    bool dense = false;
    for (size_t a = 0; a < c.segments.size(); ++a) {
      LEXP_INPUT_CHECK(c.segments[a] >= 1 && c.dilations[a] >= 1 && c.dilations[a] <= c.segments[a],
                       "pattern 'dilated' needs 1 <= dilation <= segment length");
      dense = dense || c.dilations[a] == 1;
    }
    LEXP_INPUT_CHECK(dense,
                     "pattern 'dilated' needs one dilation of 1, or some queries see no key");
    return std::make_unique<DilatedPattern>(c.segments, c.dilations, c.heads);
  }
  if (c.name == "shifted_sparse") {
    LEXP_INPUT_CHECK(c.ratio > 0 && c.ratio <= 1, "pattern 'shifted_sparse' needs 0 < ratio <= 1");
    return std::make_unique<ShiftedSparsePattern>(c.ratio);
  }
  LEXP_INPUT_CHECK(c.window >= 1, "pattern '" + c.name + "' needs a window >= 1");
  if (c.name == "sinks") {
    LEXP_INPUT_CHECK(c.global >= 0, "pattern 'sinks' needs n_sink >= 0");
    return std::make_unique<SinksPattern>(c.global, c.window);
  }
  if (c.name == "sliding_window") return std::make_unique<SlidingWindowPattern>(c.window);
  if (c.name == "bca") {
    LEXP_INPUT_CHECK(c.window >= 2 && c.window % 2 == 0,
                     "pattern 'bca' needs an even block size >= 2");
    return std::make_unique<BlockwiseCausalPattern>(c.window);
  }
  if (c.name == "recurrence") {
    LEXP_INPUT_CHECK(c.memory >= 0, "pattern 'recurrence' needs a memory >= 0 tokens");
    return std::make_unique<RecurrencePattern>(c.window, c.memory > 0 ? c.memory : c.window);
  }
  if (c.name == "self_extend") {
    LEXP_INPUT_CHECK(c.group >= 1,
                     "pattern 'self_extend' needs a group size G >= 1 (model.pattern_group; "
                     "1 = plain distances)");
    return std::make_unique<SelfExtendPattern>(c.group, c.window);
  }
  if (c.name == "string") {
    LEXP_INPUT_CHECK(c.shift > c.window,
                     "pattern 'string' needs a shift S greater than its local window W "
                     "(model.pattern_shift > model.pattern_window; the paper's S = L/3, W = 128), "
                     "got S = " + std::to_string(c.shift) + ", W = " + std::to_string(c.window));
    return std::make_unique<StringPattern>(c.shift, c.window);
  }
  if (c.name == "anchor") return std::make_unique<AnchorPattern>(c.window);
  if (c.name == "lambda") {
    LEXP_INPUT_CHECK(c.global >= 0, "pattern 'lambda' needs n_global >= 0");
    return std::make_unique<LambdaPattern>(c.global, c.window, c.limit > 0 ? c.limit : c.window);
  }
  std::string known;
  for (const auto& n : PatternNames()) known += (known.empty() ? "" : ", ") + n;
  FailInput("unknown pattern '" + c.name + "'; patterns: " + known);
}

}  // namespace lexp
