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
  // Round 0: lexp 300 tok/s, torch 100 (3x); round 1: lexp 280, torch 50 (5.6x): the best
  // medians (300 against 100) give 3x, not the 5.6x of the slow reference round.
  const std::vector<BenchResult> lexp = {Timed(1.0 / 300, 300), Timed(1.0 / 280, 280)};
  const std::vector<BenchResult> torch = {Timed(1.0 / 100, 100), Timed(1.0 / 50, 50)};
  const SpeedRatio r = CompareRounds(lexp, torch);
  EXPECT_DOUBLE_EQ(r.best, 3.0);
  ASSERT_EQ(r.per_round.size(), 2u);
  EXPECT_DOUBLE_EQ(r.per_round[0], 3.0);
  EXPECT_DOUBLE_EQ(r.per_round[1], 5.6);
  EXPECT_EQ(FormatRatio(r), "3.00x (rounds 3.00x 5.60x)");
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
