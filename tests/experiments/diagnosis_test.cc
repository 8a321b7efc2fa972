// lexp diagnose: each intervention's share of the loss gap beyond N. Planted cause: a RoPE model
// trained under a sliding window of its training length L and evaluated with full attention
// fails beyond N because its queries see more keys, at distances, than training showed; the window
// intervention restores exactly its training view, so it must close the gap (share near 1), and
// the temperature, which changes nothing at the training lengths' attention span, much less.
// Negative control: a NoPE run lists the RoPE-only interventions as not applied, with reasons.
// Planted cause 2: NoPE on passkey is repaired by the log-n temperature, not by a window.
// Planted cause 3: sinusoidal on passkey is repaired by the position remap, not by the temperature.
#include "experiments/replay/diagnosis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "experiments/core/recipe.h"
#include "experiments/replay/model_replay.h"
#include "experiments/training/sweep.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

size_t IndexOf(const Diagnosis& d, const std::string& name) {
  const auto it = std::find(d.interventions.begin(), d.interventions.end(), name);
  return static_cast<size_t>(it - d.interventions.begin());
}

// The interval arithmetic on planted losses: per-sequence losses at n with a known gap and an
// intervention that closes a known share of it. Over 2000 draws the 95% share interval covers the
// true share in 93-97% of them, and a share of a gap that is not there is NaN.
TEST(Diagnosis, TheShareIntervalCoversThePlantedShare) {
  Rng rng(17);
  auto normal = [&]() {  // Box-Muller
    const double u = 1 - rng.Uniform(), v = rng.Uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
  };
  const int m = 64, draws = 2000;
  const double gap = 0.8, share = 0.5;
  int covered = 0, gap_covered = 0;
  for (int k = 0; k < draws; ++k) {
    std::vector<double> in(m), x(m), y(m);
    for (int s = 0; s < m; ++s) {
      in[s] = 1.0 + 0.5 * normal();
      x[s] = 1.0 + gap + 0.5 * normal();  // a sequence's own difficulty
      // Closes half of each sequence's excess over the reference's mean: the improvement is
      // correlated with x, which the covariance term of the delta method accounts for.
      y[s] = x[s] - share * (x[s] - 1.0) + 0.05 * normal();
    }
    const GapShare g = ShareOfGap(x, y, in);
    covered += g.share_lo <= share && share <= g.share_hi;
    gap_covered += g.gap_lo <= gap && gap <= g.gap_hi;
  }
  EXPECT_GE(covered, 0.93 * draws);
  EXPECT_LE(covered, 0.97 * draws);
  EXPECT_GE(gap_covered, 0.93 * draws);
  EXPECT_LE(gap_covered, 0.97 * draws);
  // No gap: the share is not read.
  std::vector<double> same(m), other(m);
  for (int s = 0; s < m; ++s) same[s] = other[s] = 1.0 + 0.5 * normal();
  EXPECT_TRUE(std::isnan(ShareOfGap(same, other, same).share));
}

TEST(Diagnosis, AWindowTrainedModelIsRepairedByItsWindowAndTheReadingIsWritten) {
  const fs::path dir = testing::FreshTempDir("diagnosis");
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  // lookback_lm (each token repeats the one 24 back with probability 0.8) needs a head at distance
  // 24, which a window of L = 64 keys keeps. Seeds 1-3 of this setting: gap 0.9-1.5 nats at 4N,
  // the window closes 1.4-1.7 of it (more than all: at 4N almost every position has its repeat, at
  // N a third has none), log-n -0.02 to -0.05.
  const std::vector<std::string> sets = {
      "task.name=lookback_lm", "task.vocab=0",       "model.d_model=32",
      "model.pattern=sliding_window", "model.pattern_when=train", "train.max_length=64",
      "train.batch_size=16", "eval.lengths=64,256", "eval.samples=32",
      "probe.lengths=64",     "probe.replay=0"};
  std::vector<std::string> rope_sets = sets, nope_sets = sets;
  rope_sets.insert(rope_sets.end(), {"model.encodings=rope", "train.steps=1500"});
  nope_sets.insert(nope_sets.end(), {"model.encodings=nope", "train.steps=10"});
  RunRecipe(testing::TinyCopyRecipe(rope_sets), so);
  RunRecipe(testing::TinyCopyRecipe(nope_sets), so);
  const std::string rope = (dir / "rope.h5").string();
  const Diagnosis d = DiagnoseRun(rope, {});
  ASSERT_EQ(d.lengths, (std::vector<int>{256}));
  EXPECT_EQ(d.reference_length, 64);
  EXPECT_EQ(d.interventions.size(), 7u) << "every intervention but position_remap applies to RoPE";
  EXPECT_GT(d.gap_lo[0], 0) << "full attention at 4N fails the window-trained model";
  const size_t w = IndexOf(d, "window");
  ASSERT_LT(w, d.interventions.size());
  EXPECT_GT(d.share[w], 0.8) << "its own training view closes the gap";
  EXPECT_GT(d.share_lo[w], 0.5);
  const size_t t = IndexOf(d, "log_n");
  ASSERT_LT(t, d.interventions.size());
  EXPECT_LT(std::abs(d.share[t]), 0.2) << "the temperature does not restore the training view";
  // Negative controls at the reference length (its L tokens): the window of L keys, the clamp at
  // L - 1 and log-n change nothing there, so their cost in distribution is 0; the rotary rescalings
  // (factor 1 at L) too.
  ASSERT_EQ(d.reference_loss_with.size(), d.interventions.size());
  for (const char* name : {"window", "distance_clamp", "log_n", "lambda"}) {
    const size_t i = IndexOf(d, name);
    ASSERT_LT(i, d.interventions.size()) << name;
    EXPECT_NEAR(d.reference_loss_with[i], d.reference_loss, 1e-4) << name << ": no cost at N";
  }
  EXPECT_GT(std::abs(d.reference_loss_with[IndexOf(d, "freeze_slow")] - d.reference_loss), 1e-3)
      << "stopping the slow pairs changes the logits at every length";
  // The pooled reading agrees with the per-sequence one (equal graded tokens per sequence).
  for (size_t i = 0; i < d.interventions.size(); ++i)
    EXPECT_NEAR(d.closed[i], d.loss[0] - d.loss_with[i], 1e-9) << d.interventions[i];
  {
    h5::Writer wr(rope, h5::Writer::Mode::kUpdate);
    WriteDiagnosis(d, wr.root());
    wr.Commit();
  }
  h5::Reader r(rope);
  const h5::Group g = r.root().OpenGroup("diagnosis");
  EXPECT_EQ(g.ReadDoubles("share").size(), d.interventions.size());
  EXPECT_EQ(g.ReadDoubles("entropy_with"), d.entropy_with);
  EXPECT_EQ(g.ReadDoubles("logit_max"), d.logit_max);
  EXPECT_EQ(g.AttrDouble("reference_entropy"), d.reference_entropy);
  EXPECT_EQ(g.AttrString("interventions"),
            "distance_clamp,window,lambda,log_n,freeze_slow,ntk,yarn");
  EXPECT_TRUE(fs::exists(DrawDiagnosis(dir.string()))) << "figures/diagnosis from the file";

  // model.log_n on any encoding is RoPE's own log-n on RoPE, and changes nothing within the
  // training lengths (its factor is 1 there).
  {
    ModelReplay plain(rope), generic(rope, {"model.log_n=1"}),
        own(rope, {"encoding_options.rope.log_n=\"true\"", "encoding_options.rope.original_length=64"});
    EXPECT_EQ(generic.EvalLoss(256), own.EvalLoss(256));
    EXPECT_NE(generic.EvalLoss(256), plain.EvalLoss(256));
    EXPECT_EQ(generic.EvalLoss(64), plain.EvalLoss(64));
  }
  // The distance clamp of the other relative encodings, the Lambda mask with every key global,
  // is ReRoPE's rule on RoPE: the same loss at 4N (1.44015235 both; limit L instead of L - 1
  // moves it by 1e-5).
  {
    const int tokens = ModelReplay(rope).SequenceLength(256);
    ModelReplay rerope(rope, DistanceClampOverrides(true, tokens, 64)),
        by_pattern(rope, DistanceClampOverrides(false, tokens, 64)), plain(rope);
    const double a = rerope.EvalLoss(256), b = by_pattern.EvalLoss(256);
    EXPECT_NEAR(a, b, 1e-6 * a);
    EXPECT_GT(std::abs(a - plain.EvalLoss(256)), 1e-2) << "the clamp changes the loss at 4N";
  }
  const Diagnosis nope = DiagnoseRun((dir / "nope.h5").string(), {});
  EXPECT_EQ(nope.interventions, (std::vector<std::string>{"window", "lambda", "log_n"}));
  ASSERT_EQ(nope.not_applied.size(), 5u);
  EXPECT_NE(nope.not_applied[0].find("'nope' has no positional term"), std::string::npos);
  fs::remove_all(dir);
}

// A relative bias (ALiBi) gets the distance clamp through the Lambda mask with every key global:
// it applies, and costs nothing within the training length, where no distance reaches L - 1.
TEST(Diagnosis, ARelativeBiasIsClampedAtTheLargestTrainedDistance) {
  const fs::path dir = testing::FreshTempDir("diagnosis_alibi");
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  RunRecipe(testing::TinyCopyRecipe({"model.encodings=alibi", "train.steps=200",
                                     "train.max_length=8", "eval.lengths=8,32",
                                     "eval.samples=16", "probe.lengths=8", "probe.replay=0"}),
            so);
  const Diagnosis d = DiagnoseRun((dir / "alibi.h5").string(), {});
  const size_t c = IndexOf(d, "distance_clamp");
  ASSERT_LT(c, d.interventions.size()) << "applies to ALiBi";
  EXPECT_NEAR(d.reference_loss_with[c], d.reference_loss, 1e-6 * d.reference_loss);
  EXPECT_GT(std::abs(d.loss_with[c] - d.loss[0]), 1e-4) << "and changes the loss at 4N";
  fs::remove_all(dir);
}

// Planted cause 2 (the issue's): NoPE on passkey, a task that needs a far token, fails beyond N
// because its attention spreads over more keys; the log-n temperature holds the entropy and closes
// most of the gap, while a window of the training span hides the key and widens it. passkey.toml
// at N = 16, 800 steps, seeds 1-3: log-n closes 0.95, 0.71, 0.63 of the gap at 4N; the window
// widens it 10-28 fold.
TEST(Diagnosis, NoPEOnPasskeyIsRepairedByTheTemperatureNotByAWindow) {
  std::ifstream f(std::string(LEXP_SOURCE_DIR) + "/experiments/recipes/passkey.toml");
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  RecipeConfig c = ParseRecipe(text, "passkey.toml");
  ApplyOverrides(c, {"model.encodings=nope", "probe.replay=0", "train.max_length=16",
                     "train.steps=800", "eval.lengths=16,64", "eval.samples=32", "eval.depths=[]",
                     "probe.lengths=16", "train.log_every=1000"});
  ValidateRecipe(c);
  const fs::path dir = testing::FreshTempDir("diagnosis_nope");
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  RunRecipe(c, so);
  const Diagnosis d = DiagnoseRun((dir / "nope.h5").string(), {});
  ASSERT_EQ(d.lengths, (std::vector<int>{64}));
  EXPECT_GT(d.gap_lo[0], 0);
  const size_t t = IndexOf(d, "log_n"), w = IndexOf(d, "window");
  ASSERT_LT(t, d.interventions.size());
  ASSERT_LT(w, d.interventions.size());
  EXPECT_GT(d.share[t], 0.5) << "the temperature closes most of the gap";
  EXPECT_GT(d.share_lo[t], 0);
  EXPECT_LT(d.share_hi[w], 0) << "a window hides the key: the gap widens";
  // The symptoms beside: NoPE's attention spreads beyond N (the last query's entropy above its
  // value at N), the temperature removes that symptom (the entropy it closes the gap with), and
  // a window of L keys can never exceed ln L, the bound that holds for any model.
  ASSERT_EQ(d.entropy.size(), 1u);
  ASSERT_EQ(d.entropy_with.size(), d.interventions.size());
  EXPECT_GT(d.entropy[0], d.reference_entropy + 0.1);
  EXPECT_LT(d.entropy_with[t], d.entropy[0] - 0.1);
  EXPECT_LE(d.entropy_with[w], std::log(static_cast<double>(d.train_tokens)) + 1e-9);
  EXPECT_LE(d.entropy[0], d.log_keys[0] + 1e-9);
  fs::remove_all(dir);
}

// Planted cause 3 (the issue's): sinusoidal positions beyond the trained ones are unseen inputs;
// remapping them to the last trained position closes much of the gap, the temperature does not.
// passkey.toml at N = 16, 800 steps, at 1.5N (seeds 1 and 2): the remap closes 0.52 and 0.94 of
// the gap, log-n -0.02 and +0.09.
TEST(Diagnosis, SinusoidalIsRepairedByThePositionRemapNotByTheTemperature) {
  std::ifstream f(std::string(LEXP_SOURCE_DIR) + "/experiments/recipes/passkey.toml");
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  RecipeConfig c = ParseRecipe(text, "passkey.toml");
  ApplyOverrides(c, {"model.encodings=sinusoidal", "probe.replay=0", "train.max_length=16",
                     "train.steps=800", "eval.lengths=16,24", "eval.samples=32", "eval.depths=[]",
                     "probe.lengths=16", "train.log_every=1000"});
  ValidateRecipe(c);
  const fs::path dir = testing::FreshTempDir("diagnosis_sinusoidal");
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  RunRecipe(c, so);
  const Diagnosis d = DiagnoseRun((dir / "sinusoidal.h5").string(), {});
  ASSERT_EQ(d.lengths, (std::vector<int>{24}));
  EXPECT_GT(d.gap_lo[0], 0);
  const size_t r = IndexOf(d, "position_remap"), t = IndexOf(d, "log_n");
  ASSERT_LT(r, d.interventions.size());
  ASSERT_LT(t, d.interventions.size());
  EXPECT_GT(d.share[r], 0.3) << "the remap closes much of the gap";
  EXPECT_GT(d.share_lo[r], 0);
  EXPECT_LT(std::abs(d.share[t]), 0.15) << "the temperature does not";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
