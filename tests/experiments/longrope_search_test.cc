// LongRoPE's evolution (experiments/training/longrope_search.h) on planted objectives whose best
// factors are known, and its negative control: a flat objective, where nothing is better than the
// seeds, leaves them as found.
#include "experiments/training/longrope_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "nn/check.h"

namespace lexp {
namespace {

// A planted optimum: non-uniform, non-decreasing factors for s = 4 and n-hat = 8 (what the paper
// finds: the fastest pairs barely interpolated, the slowest beyond s).
const std::vector<double> kPlanted = {1.0, 1.0, 1.3, 2.1, 3.4, 4.6, 5.0, 5.0};

double PlantedLoss(const std::vector<double>& f, int start_tokens) {
  double d = 0;
  for (size_t k = 0; k < f.size(); ++k) d += (f[k] - kPlanted[k]) * (f[k] - kPlanted[k]);
  return d + (start_tokens == 8 ? 0.0 : 0.05);
}

LongropeSearchSettings Settings(double s, uint64_t seed) {
  LongropeSearchSettings st;
  st.factor = s;
  st.seed = seed;
  return st;
}

const std::vector<std::vector<double>> kSeeds = {std::vector<double>(8, 4.0),  // PI
                                                 {1.0, 1.2, 1.5, 1.9, 2.4, 3.0, 3.8, 4.8}};

TEST(LongropeSearch, FindsPlantedNonUniformFactorsAndStartTokens) {
  const LongropeSearchResult r = EvolveLongropeFactors(kSeeds, Settings(4, 1), PlantedLoss);
  ASSERT_EQ(r.initial.size(), 2u);
  const double pi_loss = PlantedLoss(kSeeds[0], 0);
  EXPECT_NEAR(r.initial[0].loss, pi_loss, 1e-12);
  EXPECT_EQ(r.best.start_tokens, 8);
  // From PI's 31.7 and the second seed's 5.2 (sums of squares, n-hat 0) to under 0.1, within 0.2 of the
  // planted factor at every pair (the reference's mutation redraws a factor anywhere between its
  // neighbours, a coarse search: 0.04 here).
  EXPECT_LT(r.best.loss, 0.1) << r.best.FactorText();
  const std::vector<double> f = r.best.Factors();
  for (size_t k = 0; k < f.size(); ++k) EXPECT_NEAR(f[k], kPlanted[k], 0.2) << "pair " << k;
  // The best loss never rises from one iteration to the next (parents survive).
  for (size_t i = 1; i < r.best_loss.size(); ++i) EXPECT_LE(r.best_loss[i], r.best_loss[i - 1]);
  EXPECT_EQ(r.evaluated, 64 + 40 * 32);
}

TEST(LongropeSearch, EveryCandidateIsNewOnTheGridNonDecreasingAndInRange) {
  std::set<std::pair<std::vector<long>, int>> seen;
  bool repeated = false, off_grid = false, decreasing = false, out_of_range = false;
  const auto loss = [&](const std::vector<double>& f, int n) {
    std::vector<long> u;
    for (double v : f) {
      u.push_back(std::lround(v * 100));
      off_grid = off_grid || std::abs(v * 100 - std::round(v * 100)) > 1e-9;
      out_of_range = out_of_range || v < 1 || v > 1.25 * 2 + 1e-12;
    }
    decreasing = decreasing || !std::is_sorted(u.begin(), u.end());
    repeated = repeated || !seen.insert({u, n}).second;
    return PlantedLoss(f, n);
  };
  // s = 2: the grid's top is 2.5, below the planted 5.0, so the search presses on the bound.
  const LongropeSearchResult r = EvolveLongropeFactors(kSeeds, Settings(2, 3), loss);
  EXPECT_FALSE(repeated);
  EXPECT_FALSE(off_grid);
  EXPECT_FALSE(decreasing);
  EXPECT_FALSE(out_of_range);
  EXPECT_EQ(r.best.Factors().back(), 2.5);
  // Seeds off the grid are put on it: PI's 4 clamped to 2.5.
  EXPECT_EQ(r.initial[0].FactorText(), "2.50, 2.50, 2.50, 2.50, 2.50, 2.50, 2.50, 2.50");
}

TEST(LongropeSearch, SeedsAreRoundedClampedAndMadeNonDecreasing) {
  const std::vector<std::vector<double>> seeds = {{0.5, 1.234, 1.1, 2.0, 1.9, 9.0, 3.0, 3.0}};
  LongropeSearchSettings st = Settings(4, 1);
  st.iterations = 0;
  const LongropeSearchResult r = EvolveLongropeFactors(seeds, st, PlantedLoss);
  // 0.5 -> 1.00 (the floor), 1.234 -> 1.23, 1.1 -> 1.23 (running maximum), 9 -> 5.00 (1.25 s).
  EXPECT_EQ(r.initial[0].FactorText(), "1.00, 1.23, 1.23, 2.00, 2.00, 5.00, 5.00, 5.00");
  EXPECT_EQ(r.initial[0].start_tokens, 0);
}

TEST(LongropeSearch, SameSeedSameResultOtherSeedOtherPath) {
  const auto a = EvolveLongropeFactors(kSeeds, Settings(4, 5), PlantedLoss);
  const auto b = EvolveLongropeFactors(kSeeds, Settings(4, 5), PlantedLoss);
  const auto c = EvolveLongropeFactors(kSeeds, Settings(4, 6), PlantedLoss);
  EXPECT_EQ(a.best.units, b.best.units);
  EXPECT_EQ(a.best_loss, b.best_loss);
  EXPECT_NE(a.best_loss, c.best_loss);
}

// The negative control: with nothing to find, the search returns its first seed untouched.
TEST(LongropeSearch, FlatObjectiveKeepsTheFirstSeed) {
  const LongropeSearchResult r = EvolveLongropeFactors(
      kSeeds, Settings(4, 1), [](const std::vector<double>&, int) { return 1.0; });
  EXPECT_EQ(r.best.units, r.initial[0].units);
  EXPECT_EQ(r.best.start_tokens, 0);
}

TEST(LongropeSearch, ParsesTheRequestAndNamesWhatIsWrong) {
  LongropeSearchRequest q;
  EXPECT_FALSE(ParseLongropeSearch("1, 1.5, 2", &q));
  ASSERT_TRUE(ParseLongropeSearch("search", &q));
  EXPECT_EQ(q.length, 0);
  EXPECT_EQ(q.samples, 16);
  EXPECT_EQ(q.iterations, 40);
  EXPECT_EQ(q.population, 64);
  ASSERT_TRUE(ParseLongropeSearch("search:length=256, samples=8,iterations=3,population=8", &q));
  EXPECT_EQ(q.length, 256);
  EXPECT_EQ(q.samples, 8);
  EXPECT_EQ(q.iterations, 3);
  EXPECT_EQ(q.population, 8);
  try {
    ParseLongropeSearch("search:iters=3", &q);
    ADD_FAILURE() << "an unknown key was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'iters'; allowed: search[:length=L"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ParseLongropeSearch("search:samples=0", &q), InputError);
  EXPECT_THROW(ParseLongropeSearch("search:length=x", &q), InputError);
  EXPECT_THROW(ParseLongropeSearch("search:population=10", &q), InputError);
  EXPECT_THROW(EvolveLongropeFactors(kSeeds, Settings(1, 1), PlantedLoss), InputError);
}

}  // namespace
}  // namespace lexp
