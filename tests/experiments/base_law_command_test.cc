// `lexp base-law`: a key sweep over the RoPE base gives one row per base, predicted T_extra from
// the run's own rotary width and training length, and the measured limit from its evaluation
// losses.
#include "experiments/base_law_command.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "analysis/rope_theory.h"
#include "experiments/sweep.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

TEST(BaseLawCommand, TabulatesMeasuredAgainstPredictedLimitsPerBase) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"task.name=markov_lm", "task.vocab=0", "model.encodings=rope", "model.n_layers=1",
       "run.sweep=encoding_options.rope.base", "run.sweep_values=100,10000,100000",
       "train.steps=20", "eval.lengths=2,5,10,20"});
  ValidateRecipe(c);
  const auto dir = testing::FreshTempDir("base_law");
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  ASSERT_EQ(RunRecipe(c, so).size(), 3u);
  const std::string table = WriteBaseLaw(dir.string(), 0.1);
  EXPECT_NE(table.find("rope-base100 "), std::string::npos) << table;
  EXPECT_NE(table.find("(b < 1e4)"), std::string::npos) << table;
  h5::Reader r((dir / "base_law.h5").string());
  EXPECT_EQ(r.root().AttrString("runs"), "rope-base100,rope-base10000,rope-base100000");
  const auto pred = r.root().ReadDoubles("predicted_limit");
  const auto meas = r.root().ReadDoubles("measured_limit");
  ASSERT_EQ(pred.size(), 3u);
  EXPECT_TRUE(std::isnan(pred[0]));
  // Head width 8 (d_model 16, 2 heads), training sequences of 5 tokens (decoder, markov_lm).
  const int d_extra = theory::CriticalDim(8, 5, 1e4).d_extra;
  EXPECT_NEAR(pred[1], theory::ExtrapolationLimit(1e4, d_extra, 8), 1e-9);
  EXPECT_NEAR(pred[2], theory::ExtrapolationLimit(1e5, d_extra, 8), 1e-9);
  for (double m : meas) EXPECT_TRUE(m == 0 || m == 2 || m == 5 || m == 10 || m == 20) << m;
  // The run's own critical dimension: T = 5 tokens, d = 8. Base 100: ratio 4 ln(5/2pi)/ln 100 < 0,
  // so no pair completes a period (d_extra 0) and the first pair (period 2 pi) is the limit.
  const auto own = r.root().ReadDoubles("predicted_limit_own");
  for (int i = 0; i < 3; ++i) {
    const double b = i == 0 ? 100 : i == 1 ? 1e4 : 1e5;
    EXPECT_NEAR(own[i], theory::ExtrapolationLimit(b, theory::CriticalDim(8, 5, b).d_extra, 8),
                1e-9);
  }
  EXPECT_NEAR(r.root().AttrDouble("full_period_base"), theory::FullPeriodBase(5, 8), 1e-12);
  EXPECT_EQ(r.root().ReadInts("learnt").size(), 3u);
  const auto png = DrawBaseLaw((dir / "base_law.h5").string());
  EXPECT_TRUE(std::filesystem::exists(png));
  EXPECT_TRUE(std::filesystem::exists(dir / "figures" / "base_law.dat"));
  EXPECT_THROW(WriteBaseLaw((dir / "figures").string(), 0.1), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
