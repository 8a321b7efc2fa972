// `lexp base-law`: a key sweep over the RoPE base gives one row per base, predicted T_extra from
// the run's own rotary width and training length, and the measured limit from its evaluation
// losses.
#include "experiments/replay/base_law_command.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/training/sweep.h"
#include "experiments/training/trainer.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

// Head width d = 8 (d_model 16, 2 heads, every dimension rotates) and training sequences of T = 64
// tokens (markov_lm in the decoder layout: n tokens, no separator or end token). The critical
// dimension d_extra = 2 ceil((d/2) log_b(T / 2 pi)) (Liu et al. 2023, critical dimension) and
// T_extra = 2 pi b^(d_extra/d), computed by hand (python3, double precision):
//   T / 2 pi = 10.18591636;  (d/2) log_b(T / 2 pi) = 4 ln(10.18591636) / ln b
//   b = 100:  2.01600021 -> d_extra 6, 2 pi 100^(6/8) = 198.691765315922
//   b = 1e4:  1.00800011 -> d_extra 4, 2 pi 1e4^(4/8) = 628.3185307179587
//   b = 1e5:  0.80640008 -> d_extra 2, 2 pi 1e5^(2/8) = 111.73259061216542
// The law's prediction takes d_extra of base 1e4 (4) at every base >= 1e4:
//   b = 1e4: 628.3185307179587;  b = 1e5: 2 pi 1e5^(4/8) = 1986.9176531592204.
// Every pair completes a period in training for b <= (T / 2 pi)^(d / (d - 2)) = 22.08005449037645.
TEST(BaseLawCommand, TabulatesMeasuredAgainstPredictedLimitsPerBase) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"task.name=markov_lm", "task.vocab=0", "model.encodings=rope", "model.n_layers=1",
       "run.sweep=encoding_options.rope.base", "run.sweep_values=100,10000,100000",
       "train.steps=20", "train.max_length=64", "eval.lengths=16,64,128,256"});
  ValidateRecipe(c);
  const auto dir = testing::FreshTempDir("base_law");
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  ASSERT_EQ(RunRecipe(c, so).size(), 3u);
  const double tolerance = 0.1;
  const std::string table = WriteBaseLaw(dir.string(), tolerance);
  EXPECT_NE(table.find("rope-base100 "), std::string::npos) << table;
  EXPECT_NE(table.find("(b < 1e4)"), std::string::npos) << table;
  h5::Reader r((dir / "base_law.h5").string());
  const std::vector<std::string> runs = {"rope-base100", "rope-base10000", "rope-base100000"};
  EXPECT_EQ(r.root().AttrString("runs"), "rope-base100,rope-base10000,rope-base100000");
  EXPECT_EQ(r.root().AttrString("criteria"), "loss,loss,loss") << "a source is read by its loss";
  EXPECT_NE(table.find("  loss\n"), std::string::npos) << table;
  EXPECT_EQ(r.root().AttrInt("rotary_dims"), 8);
  EXPECT_EQ(r.root().AttrInt("train_tokens"), 64);
  EXPECT_EQ(r.root().AttrInt("d_extra"), 4);
  const auto pred = r.root().ReadDoubles("predicted_limit");
  ASSERT_EQ(pred.size(), 3u);
  EXPECT_TRUE(std::isnan(pred[0])) << "the law is stated for bases >= 1e4";
  EXPECT_NEAR(pred[1], 628.3185307179587, 1e-9);
  EXPECT_NEAR(pred[2], 1986.9176531592204, 1e-9);
  EXPECT_EQ(r.root().ReadDoubles("d_extra_own"), (std::vector<double>{6, 4, 2}));
  const auto own = r.root().ReadDoubles("predicted_limit_own");
  ASSERT_EQ(own.size(), 3u);
  EXPECT_NEAR(own[0], 198.691765315922, 1e-9);
  EXPECT_NEAR(own[1], 628.3185307179587, 1e-9);
  EXPECT_NEAR(own[2], 111.73259061216542, 1e-9);
  EXPECT_NEAR(r.root().AttrDouble("full_period_base"), 22.08005449037645, 1e-11);
  // The measured limit, from each run's evaluation losses by its definition (analysis/base_law.h):
  // the reference is the loss at the longest evaluated length within training (64); the limit is
  // the longest evaluated sequence up to which every longer one stays within (1 + tolerance) times
  // it, or the reference length itself when the first longer one already fails. Censored: the
  // limit is the longest evaluated sequence. Learnt: the reference loss is below 0.95 times the
  // loss at the shortest length.
  const auto meas = r.root().ReadDoubles("measured_limit");
  const auto lo = r.root().ReadDoubles("limit_lo"), hi = r.root().ReadDoubles("limit_hi");
  const auto immediate = r.root().ReadInts("immediate_failure");
  const auto censored = r.root().ReadInts("censored");
  const auto learnt = r.root().ReadInts("learnt");
  ASSERT_EQ(meas.size(), 3u);
  ASSERT_EQ(censored.size(), 3u);
  ASSERT_EQ(learnt.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    h5::Reader run(RunFilePath(dir.string(), runs[i]));
    const auto tokens = run.root().OpenGroup("eval").ReadInts("sequence_length");
    const auto loss = run.root().OpenGroup("eval").ReadDoubles("loss");
    ASSERT_EQ(tokens, (std::vector<int64_t>{16, 64, 128, 256})) << runs[i];
    double limit = 64;
    int e = 2;
    for (; e < 4 && loss[e] <= (1 + tolerance) * loss[1]; ++e) limit = tokens[e];
    EXPECT_EQ(meas[i], limit) << runs[i];
    // The interval the grid gives: [last passing, first failing); an immediate failure is only
    // known to lie below 128, a censored limit only to reach 256.
    EXPECT_EQ(immediate[i], e == 2 ? 1 : 0) << runs[i];
    EXPECT_EQ(lo[i], e == 2 ? 0.0 : limit) << runs[i];
    EXPECT_EQ(hi[i], e < 4 ? static_cast<double>(tokens[e]) : INFINITY) << runs[i];
    EXPECT_EQ(censored[i], limit == 256 ? 1 : 0) << runs[i];
    EXPECT_EQ(learnt[i], loss[1] < 0.95 * loss[0] ? 1 : 0) << runs[i];
  }
  // Two bases >= 1e4 are too few for a fit: it says so and writes NaN, with the counts.
  EXPECT_EQ(r.root().AttrInt("fit_scratch_runs"), 3);
  EXPECT_EQ(r.root().AttrInt("fit_scratch_below_1e4") + r.root().AttrInt("fit_scratch_not_learnt") +
                r.root().AttrInt("fit_scratch_points"),
            3);
  EXPECT_TRUE(std::isnan(r.root().AttrDouble("fit_scratch_exponent")));
  EXPECT_TRUE(std::isnan(r.root().AttrDouble("fit_scratch_exponent_lo")));
  EXPECT_FALSE(r.root().HasAttr("fit_fine_tuned_runs")) << "no run here was fine-tuned";
  EXPECT_NE(table.find("no fit: fewer than 3 points"), std::string::npos) << table;
  // From scratch the prediction is the slope of the runs' own ln T_extra over the learnt bases
  // >= 1e4: (ln 111.73 - ln 628.32) / (ln 1e5 - ln 1e4) = -0.75 when both are learnt, NaN when
  // fewer than two are.
  const double predicted = r.root().AttrDouble("fit_scratch_predicted_exponent");
  if (learnt[1] && learnt[2])
    EXPECT_NEAR(predicted,
                (std::log(111.73259061216542) - std::log(628.3185307179587)) / std::log(10.0),
                1e-9);
  else
    EXPECT_TRUE(std::isnan(predicted));
  EXPECT_EQ(r.root().AttrDouble("train_span"), 64) << "consecutive positions: the token count";
  const auto png = DrawBaseLaw((dir / "base_law.h5").string());
  EXPECT_TRUE(std::filesystem::exists(png));
  EXPECT_TRUE(std::filesystem::exists(dir / "figures" / "base_law.dat"));
  EXPECT_THROW(WriteBaseLaw((dir / "figures").string(), 0.1), Error);
  std::filesystem::remove_all(dir);
}

// Copy at three bases >= 1e4: the loss at the training length is near 0, so by loss every run is
// "not learnt" (its loss at N is not below 0.95 x its loss at the shortest length) and nothing is
// fitted; read by token accuracy (the default for a task with an answer), every run is learnt, its
// limit lies between two evaluated lengths, and the exponent is fitted with its interval. Each row
// says which criterion it used.
TEST(BaseLawCommand, CopyRunsAreReadByTokenAccuracyAndFitALine) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"model.encodings=rope", "model.d_model=32", "run.sweep=encoding_options.rope.base",
       "run.sweep_values=10000,100000,1000000", "train.max_length=8", "train.steps=1000",
       "train.batch_size=16", "train.lr=3e-3", "train.warmup_steps=20",
       "eval.lengths=4,8,9,10,11,12,14,16,20", "eval.samples=32", "eval.decoding=teacher_forced",
       "probe.lengths=8", "probe.samples=1", "probe.replay=0"});
  const auto dir = testing::FreshTempDir("base_law_copy");
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  ASSERT_EQ(RunRecipe(c, so).size(), 3u);
  const std::string by_loss = WriteBaseLaw(dir.string(), 0.3, "loss");
  EXPECT_NE(by_loss.find("no fit: fewer than 3 points"), std::string::npos) << by_loss;
  {
    h5::Reader r((dir / "base_law.h5").string());
    EXPECT_EQ(r.root().ReadInts("learnt"), (std::vector<int64_t>{0, 0, 0}));
  }
  const std::string table = WriteBaseLaw(dir.string(), 0.3);
  EXPECT_NE(table.find("  token_accuracy\n"), std::string::npos) << table;
  h5::Reader r((dir / "base_law.h5").string());
  EXPECT_EQ(r.root().AttrString("criterion_requested"), "auto");
  EXPECT_EQ(r.root().AttrString("criteria"), "token_accuracy,token_accuracy,token_accuracy");
  EXPECT_EQ(r.root().ReadInts("learnt"), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(r.root().AttrInt("fit_scratch_points"), 3);
  EXPECT_TRUE(std::isfinite(r.root().AttrDouble("fit_scratch_exponent"))) << table;
  EXPECT_TRUE(std::isfinite(r.root().AttrDouble("fit_scratch_exponent_lo"))) << table;
  EXPECT_FALSE(r.root().HasAttr("fit_scratch_no_fit")) << table;
  // Each limit from the accuracies by their definition: the last length beyond N = 8 before the
  // token accuracy falls below 0.7 x its value at 8.
  const auto meas = r.root().ReadDoubles("measured_limit");
  int k = 0;
  for (const std::string label : {"rope-base10000", "rope-base100000", "rope-base1000000"}) {
    h5::Reader run(RunFilePath(dir.string(), label));
    const auto tokens = run.root().OpenGroup("eval").ReadInts("sequence_length");
    const auto acc = run.root().OpenGroup("eval").ReadDoubles("token_accuracy");
    double limit = static_cast<double>(tokens[1]);
    for (size_t e = 2; e < acc.size() && acc[e] >= 0.7 * acc[1]; ++e)
      limit = static_cast<double>(tokens[e]);
    EXPECT_EQ(meas[k++], limit) << label;
  }
  EXPECT_THROW(WriteBaseLaw(dir.string(), 0.3, "perplexity"), InputError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
