// `lexp bench`'s speed ratio (experiments/bench/bench.h): the headline is each side's best median
// against the other's, and each round's own ratio is printed beside it, so one invocation shows how
// far the headline moves between rounds.
#include <gtest/gtest.h>

#include <vector>

#include "experiments/bench/bench.h"

namespace lexp {
namespace {

BenchResult Timed(double median_s, double tokens_per_s) {
  BenchResult r;
  r.median_s = median_s;
  r.tokens_per_s = tokens_per_s;
  return r;
}

TEST(BenchRatio, HeadlineIsBestAgainstBestAndEachRoundIsItsOwnPair) {
  // Round 0: lexp 280 tok/s, torch 100 (2.8x); round 1: lexp 300, torch 50 (6x). Each side's
  // best is in a different round: the headline pairs them (300 against 100: 3x), neither round's
  // own ratio, nor the ratio of the round where lexp was fastest.
  const std::vector<BenchResult> lexp = {Timed(1.0 / 280, 280), Timed(1.0 / 300, 300)};
  const std::vector<BenchResult> torch = {Timed(1.0 / 100, 100), Timed(1.0 / 50, 50)};
  const SpeedRatio r = CompareRounds(lexp, torch);
  EXPECT_DOUBLE_EQ(r.best, 3.0);
  ASSERT_EQ(r.per_round.size(), 2u);
  EXPECT_DOUBLE_EQ(r.per_round[0], 2.8);
  EXPECT_DOUBLE_EQ(r.per_round[1], 6.0);
  EXPECT_EQ(FormatRatio(r), "3.00x (rounds 2.80x 6.00x)");
}

TEST(BenchRatio, OneRoundPrintsTheRatioAlone) {
  const SpeedRatio r = CompareRounds({Timed(0.5, 2)}, {Timed(1.0, 1)});
  EXPECT_EQ(FormatRatio(r), "2.00x");
}

TEST(BenchRatio, SidesWithDifferentRoundsAreRefused) {
  EXPECT_ANY_THROW(CompareRounds({Timed(0.5, 2)}, {Timed(1.0, 1), Timed(1.0, 1)}));
  EXPECT_ANY_THROW(CompareRounds({}, {}));
}

}  // namespace
}  // namespace lexp
