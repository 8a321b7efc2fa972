// The gradient receptive field read on planted models (tests/testing/planted_runs.h) whose answer
// is known: a model whose every row reads the first token has, at each differentiated answer row i,
// its gradient at distance i (the reading is taken at the answer's rows, from each row, and not at
// the last position, whose distance to the first token is T - 1); a model whose output reads only
// the current token (no value path) has all of it at distance 0 (the negative control).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/replay/receptive_field.h"
#include "tests/testing/planted_runs.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

constexpr double kPi = 3.14159265358979323846;

// One layer, one head of width 32, RoPE base 1e4, copy (vocabulary 12 + 3) at lengths 1..5,
// evaluated at 5 and 9 (19 tokens: input 0..8, separator 9, answer 10..18; row 18's target is the
// end token).
RecipeConfig PlantRecipe() {
  return testing::TinyCopyRecipe({"model.encodings=rope", "model.d_model=32", "model.n_heads=1",
                                  "model.n_layers=1", "eval.lengths=5,9", "probe.lengths=5,9",
                                  "probe.replay=0"});
}

// Pair 4 (theta = 0.1) adds -A cos(0.1 d) / sqrt(32): rising in d over every distance of a
// 19-token sequence (0.1 x 18 < pi), so each row attends to its farthest key, the first token.
std::string FirstTokenReader(const std::filesystem::path& dir, const std::string& name,
                             double value_gain) {
  return testing::PlantedRun(PlantRecipe(), "rope", dir, name, [&](testing::PlantedWeights& w) {
    const testing::Plant p{32, 15};
    std::vector<double> amplitude(16, 0.0), phase(16, 0.0);
    amplitude[4] = 3000;
    phase[4] = kPi;
    p.Pattern(w, amplitude, phase);
    p.ReadAttendedToken(w, value_gain, 3.0);
  });
}

TEST(PlantedReceptiveField, AModelReadingTheFirstTokenHasEachRowsGradientAtThatRowsDistance) {
  const auto dir = testing::FreshTempDir("planted_rf");
  const ReceptiveField rf = MeasureReceptiveField(FirstTokenReader(dir, "first", 10.0));
  ASSERT_EQ(rf.lengths, (std::vector<int>{5, 9}));
  const int K = ReceptiveField::kRowsPerSequence;
  const uint64_t M = rf.max_tokens;
  // n = 9: the answer's rows 9..17 (row 18's target is the end token), 8 of them evenly spaced.
  const std::vector<double> rows = {9, 10, 11, 12, 14, 15, 16, 17};
  ASSERT_EQ(std::vector<double>(rf.rows.begin() + K, rf.rows.begin() + 2 * K), rows);
  double on_rows = 0;
  for (double i : rows) {
    const double share = rf.share[M + static_cast<uint64_t>(i)];
    EXPECT_NEAR(share, 1.0 / K, 0.02) << "row " << i << ": its own distance to the first token";
    on_rows += share;
  }
  EXPECT_GT(on_rows, 0.95);
  EXPECT_LT(rf.share[M + 18], 1e-3) << "the last position's distance, where nothing was measured";
  EXPECT_EQ(rf.context50[1], 12) << "half the gradient once four of the eight rows are counted";
  EXPECT_EQ(rf.context90[1], 17);
  std::filesystem::remove_all(dir);
}

TEST(PlantedReceptiveField, AModelWithoutAValuePathHasItsWholeGradientAtDistanceZero) {
  const auto dir = testing::FreshTempDir("planted_rf_none");
  const ReceptiveField rf = MeasureReceptiveField(FirstTokenReader(dir, "own", 0.0));
  const uint64_t M = rf.max_tokens;
  for (size_t x = 0; x < rf.lengths.size(); ++x) {
    EXPECT_NEAR(rf.share[x * M], 1.0, 1e-6) << rf.lengths[x];
    EXPECT_EQ(rf.context50[x], 0);
    EXPECT_EQ(rf.context90[x], 0);
    EXPECT_EQ(rf.share_beyond_window[x], 0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
