// The synthetic language-modelling source: stationary distributions are stationary, the measured
// entropy rate of every chain agrees with its closed form within its standard error, the source is
// the same in every instance, and a run records the rate and draws perplexity against it.
#include "experiments/tasks/markov_lm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "experiments/training/trainer.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

TEST(MarkovLm, MeasuredEntropyRateMatchesTheClosedForm) {
  const MarkovLmTask task(16);
  Rng rng(1);
  double mean_rate = 0;
  for (int k = 0; k < MarkovLmTask::kChains; ++k) {
    const double H = task.ChainEntropyRate(k);
    EXPECT_GT(H, 0.0);
    EXPECT_LT(H, std::log(4.0)) << "at most ln(successors)";
    mean_rate += H / MarkovLmTask::kChains;
    // 200 independent sequences from the stationary start; each one's mean surprisal.
    const int S = 200, T = 400;
    std::vector<double> per_seq;
    for (int s = 0; s < S; ++s) {
      const std::vector<int> x = task.SampleChain(k, T, rng);
      double nll = 0;
      for (int t = 1; t < T; ++t) nll -= std::log(task.Transition(k, x[t - 1], x[t]));
      per_seq.push_back(nll / (T - 1));
    }
    double m = 0, v = 0;
    for (double a : per_seq) m += a / S;
    for (double a : per_seq) v += (a - m) * (a - m) / (S - 1);
    const double se = std::sqrt(v / S);
    EXPECT_LT(std::abs(m - H), 4 * se) << "chain " << k << ": measured " << m << ", closed form "
                                       << H << ", standard error " << se;
  }
  EXPECT_NEAR(task.EntropyRate(), mean_rate, 1e-15);
}

TEST(MarkovLm, IsOneFixedSourceAndScoresEveryToken) {
  const MarkovLmTask a(32), b(32);
  for (int k = 0; k < MarkovLmTask::kChains; ++k)
    for (int i = 0; i < 32; ++i) {
      double row = 0;
      for (int j = 0; j < 32; ++j) {
        EXPECT_EQ(a.Transition(k, i, j), b.Transition(k, i, j));
        row += a.Transition(k, i, j);
      }
      EXPECT_NEAR(row, 1.0, 1e-12);
      EXPECT_GT(a.Transition(k, i, (i + 1) % 32), 0.0) << "irreducible by construction";
    }
  Rng rng(2);
  const Example e = a.Sample(50, rng);
  EXPECT_TRUE(e.input.empty());
  EXPECT_EQ(e.output.size(), 50u);
  EXPECT_EQ(e.output_scored, std::vector<uint8_t>(50, 1));
  EXPECT_FALSE(a.SupportsEncoder());
}

TEST(MarkovLm, RunsRecordTheEntropyRateAndDrawPerplexityAgainstIt) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"task.name=markov_lm", "task.vocab=0", "train.steps=30", "eval.lengths=4,16,40"});
  const auto dir = testing::FreshTempDir("markov_lm");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "alibi", o).state, "completed");
  h5::Reader r(RunFilePath(dir.string(), "alibi"));
  EXPECT_DOUBLE_EQ(r.root().OpenGroup("eval").AttrDouble("source_entropy_rate"),
                   MarkovLmTask(0).EntropyRate());
  EXPECT_TRUE(std::filesystem::exists(DrawPerplexityVsLength(dir.string())));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
