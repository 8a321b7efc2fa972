// A claim's criterion on hand-made run files (experiments/reproduce/criterion.h): the interval and
// verdict rules, pairing, compute and steps criteria, gap shares, limits and entropy growth.
#include <gtest/gtest.h>

#include "tests/experiments/reproduce_fixtures.h"

namespace lexp {
namespace {

using namespace reproduce_testing;

TEST(Criterion, ScoresTheMeanOverTheSpanWithAStudentTIntervalOverSeeds) {
  const fs::path dir = testing::FreshTempDir("criterion_mean");
  const std::vector<double> a = {0.5, 0.6, 0.7};
  for (int s = 0; s < 3; ++s) {
    // Lengths outside [17, 32] must not count.
    WriteFakeRun(dir, {"nope", s + 1, "completed", {8, 17, 32, 64}, {1.0, a[s], a[s], 0.0}});
    WriteFakeRun(dir, {"rope", s + 1, "completed", {8, 17, 32, 64}, {1.0, 0.1, 0.1, 0.0}});
  }
  WriteFakeRun(dir, {"rope", 4, "diverged", {}, {}});
  const Verdict v = JudgeCriterion(Criterion({"nope > rope"}), dir.string());
  ASSERT_EQ(v.groups.size(), 2u);
  const GroupScore& g = v.groups[0];
  EXPECT_EQ(g.label, "nope");
  EXPECT_EQ(g.seeds, (std::vector<int>{1, 2, 3}));
  EXPECT_NEAR(g.score, 0.6, 1e-12);
  const Interval t = MeanInterval({0.5, 0.6, 0.7});
  EXPECT_NEAR(g.lo, t.lo, 1e-12);
  EXPECT_NEAR(g.hi, t.hi, 1e-12);
  EXPECT_EQ(v.groups[1].incomplete, 1) << "the diverged run is counted, not scored";
  EXPECT_EQ(g.x, (std::vector<double>{8, 17, 32, 64}));
  // Welch: 0.5 +- t(2) 0.1 / sqrt(3) = [0.25, 0.75], above 0.
  EXPECT_EQ(v.comparisons[0].test, "Welch t");
  const Interval w = WelchDifference(a, {0.1, 0.1, 0.1});
  EXPECT_NEAR(v.comparisons[0].difference.lo, w.lo, 1e-12);
  EXPECT_NEAR(v.comparisons[0].difference.hi, w.hi, 1e-12);
  EXPECT_EQ(v.verdict, "reproduced");
  EXPECT_EQ(v.train_max_length, 16);
  fs::remove_all(dir);
}

// Three seeds that all score 1 have a Student-t interval of zero width: an interval, which
// can be significant (one run's loss has none, and cannot).
TEST(Criterion, SeedsThatAgreeExactlySeparate) {
  const fs::path dir = testing::FreshTempDir("criterion_exact_seeds");
  const std::vector<double> other = {0.10, 0.30, 0.20};
  for (int s = 0; s < 3; ++s) {
    WriteFakeRun(dir, {"memtrm", s + 1, "completed", {256}, {1.0}});
    WriteFakeRun(dir, {"window", s + 1, "completed", {256}, {other[s]}});
  }
  ClaimCriterion k = Criterion({"memtrm > window"});
  k.length_lo = k.length_hi = 256;
  const Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.groups[0].lo, 1.0);
  EXPECT_EQ(v.groups[0].hi, 1.0);
  EXPECT_TRUE(v.groups[0].has_interval);
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  k.holds = {"window > memtrm"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "contradicted");
  fs::remove_all(dir);
}

TEST(Criterion, OneRunOrTheBestSeedGetsTheClopperPearsonIntervalOfItsSequences) {
  const fs::path dir = testing::FreshTempDir("criterion_max");
  WriteFakeRun(dir, {"t5", 1, "completed", {17, 32}, {0.30, 0.50}, 40});
  WriteFakeRun(dir, {"t5", 2, "completed", {17, 32}, {0.20, 0.20}, 40});
  WriteFakeRun(dir, {"sinusoidal", 1, "completed", {17, 32}, {0.25, 0.35}, 40});
  const Verdict v = JudgeCriterion(Criterion({"t5 > sinusoidal"}, "max"), dir.string());
  const GroupScore& t5 = v.groups[0];
  EXPECT_NEAR(t5.score, 0.40, 1e-12) << "the best seed";
  // The best of 2 seeds: Clopper-Pearson at 1 - 0.05/2, wider than the one run's 95%.
  const Interval cp = ClopperPearson(12 + 20, 80, 0.975);
  EXPECT_NEAR(t5.lo, cp.lo, 1e-12);
  EXPECT_NEAR(t5.hi, cp.hi, 1e-12);
  EXPECT_LT(t5.lo, ClopperPearson(32, 80).lo);
  EXPECT_NE(t5.interval.find("Bonferroni over the seeds"), std::string::npos) << t5.interval;
  const Interval one = ClopperPearson(24, 80);
  EXPECT_NEAR(v.groups[1].lo, one.lo, 1e-12) << "one run: its own 95%";
  // 0.40 against 0.30 with 80 sequences each: ordered; MOVER's interval of the difference holds 0.
  EXPECT_TRUE(v.comparisons[0].in_direction);
  EXPECT_EQ(v.comparisons[0].test, "MOVER");
  const Interval mover = MoverDifference(0.40, cp, 0.30, one);
  EXPECT_NEAR(v.comparisons[0].difference.lo, mover.lo, 1e-12);
  EXPECT_LT(mover.lo, 0);
  EXPECT_FALSE(v.comparisons[0].significant_for);
  EXPECT_EQ(v.verdict, "no effect");
  // Against numbers: 0.40 [0.28, 0.53] lies above 0.2; 0.35 lies inside it either way.
  ClaimCriterion k = Criterion({"t5 > 0.2"}, "max");
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "reproduced");
  k.holds = {"t5 < 0.2"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "contradicted");
  k.holds = {"t5 > 0.35"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "no effect");
  k.holds = {"t5 < 0.35"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "no effect");
  EXPECT_EQ(JudgeCriterion(k, dir.string()).groups.size(), 1u) << "a number is not a label";
  fs::remove_all(dir);
}

// Partly needs a comparison significant for the claim and none against it; a null difference,
// however it leans, is no effect.
TEST(Criterion, ANullDifferenceIsNoEffectAndPartlyNeedsASignificantOne) {
  const fs::path dir = testing::FreshTempDir("criterion_partly");
  const std::vector<double> noise = {0.01, -0.01, 0.0};
  for (int s = 1; s <= 3; ++s) {
    WriteFakeRun(dir, {"a", s, "completed", {20}, {0.9 + 0.001 * s}});
    WriteFakeRun(dir, {"b", s, "completed", {20}, {0.1 + 0.001 * s}});
    WriteFakeRun(dir, {"same", s, "completed", {20}, {0.9005 + noise[s - 1]}});
    WriteFakeRun(dir, {"c", s, "completed", {20}, {0.95 + 0.001 * s}});
  }
  ClaimCriterion k = Criterion({"a > b", "a > same"});
  k.length_lo = k.length_hi = 20;
  Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.verdict, "partly") << v.reason;
  EXPECT_TRUE(v.comparisons[0].family_for) << "0.8 apart: significant at Bonferroni's 0.975";
  EXPECT_FALSE(v.comparisons[1].significant_for || v.comparisons[1].significant_against);
  // The null comparison alone, in either direction (it leans against a by 0.0005 on average).
  k.holds = {"a > same"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "no effect");
  k.holds = {"same > a"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "no effect");
  // Half in direction used to make "partly": two null comparisons, one leaning each way.
  k.holds = {"a > same", "same > a"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "no effect");
  // Significant for and against at once: contradicted.
  k.holds = {"a > b", "a > c"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "contradicted");
  k.holds = {"b > a"};
  EXPECT_EQ(JudgeCriterion(k, dir.string()).verdict, "contradicted");
  fs::remove_all(dir);
}

TEST(Criterion, LossRatiosAndSmallerIsBetter) {
  const fs::path dir = testing::FreshTempDir("criterion_loss");
  WriteFakeRun(dir, {"alibi", 1, "completed", {16, 128}, {2.0, 2.1}});
  WriteFakeRun(dir, {"rope", 1, "completed", {16, 128}, {1.5, 3.0}});
  ClaimCriterion k = Criterion({"alibi < rope"});
  k.metric = "loss";
  k.length_lo = k.length_hi = 128;
  k.relative_lo = k.relative_hi = 16;
  Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_NEAR(v.groups[0].score, 1.05, 1e-12);
  EXPECT_NEAR(v.groups[1].score, 2.0, 1e-12);
  EXPECT_EQ(v.groups[0].interval, "none (1 run)");
  EXPECT_TRUE(v.comparisons[0].in_direction);
  EXPECT_EQ(v.comparisons[0].test, "none") << "points without intervals cannot be significant";
  EXPECT_EQ(v.verdict, "no effect");
  // The raw loss at 128 orders them the same way (2.1 against 3.0); reversed, still no test.
  k.relative_lo = 0;
  k.holds = {"rope < alibi"};
  v = JudgeCriterion(k, dir.string());
  EXPECT_FALSE(v.comparisons[0].in_direction);
  EXPECT_EQ(v.verdict, "no effect");
  fs::remove_all(dir);
}

// Kazemnejad et al.'s distance between two models' attention: per layer the closest pair of
// heads, then the mean over layers; smaller is closer.
TEST(Criterion, JsToReferenceIsTheClosestPairOfHeadsPerLayerMeanOverLayers) {
  const fs::path dir = testing::FreshTempDir("criterion_js");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  FakeRun t5{"t5", 1, "completed", {8, 32}, {0, 0}};
  // Layer 0: closest pair 0.1; layer 1: 0.25 (a NaN entry is skipped). Mean 0.175.
  t5.js = {0.3, 0.1, 0.2, 0.4, 0.5, nan, 0.25, 0.6};
  WriteFakeRun(dir, t5);
  FakeRun rope{"rope", 1, "completed", {8, 32}, {0, 0}};
  rope.js = {0.3, 0.3, 0.3, 0.3, 0.2, 0.2, 0.2, 0.2};  // 0.25
  WriteFakeRun(dir, rope);
  ClaimCriterion k = Criterion({"t5 < rope"});
  k.metric = "js_to_reference";
  k.length_lo = 8;
  k.length_hi = 32;
  const Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_NEAR(v.groups[0].score, 0.175, 1e-12);
  EXPECT_NEAR(v.groups[1].score, 0.25, 1e-12);
  EXPECT_EQ(v.groups[0].x, (std::vector<double>{8, 32}));
  EXPECT_EQ(v.groups[0].interval, "none (1 run)") << "a divergence has no counts";
  EXPECT_TRUE(v.comparisons[0].in_direction);
  k.holds = {"rope < t5"};
  EXPECT_FALSE(JudgeCriterion(k, dir.string()).comparisons[0].in_direction);
  // A run analysed without its NoPE reference names the command that adds it.
  h5::Writer w((dir / "alibi-seed1.h5").string());
  w.root().SetAttr("format", "lexp-run/2");
  w.root().SetAttr("label", "alibi-seed1");
  w.root().SetAttr("seed", 1);
  w.root().SetAttr("train_max_length", 16);
  w.root().CreateGroup("status").SetAttr("state", "completed");
  w.root().CreateGroup("analysis").CreateGroup("geometry");
  w.Commit();
  k.holds = {"t5 < alibi"};
  const std::string error = JudgeError(k, dir);
  EXPECT_NE(error.find("alibi-seed1.h5' has no JS divergence"), std::string::npos) << error;
  EXPECT_NE(error.find("--reference"), std::string::npos) << error;
  fs::remove_all(dir);
}

// At equal compute: every run is read from its evaluations during training at the compute every
// compared run reached (the least total, or the claim's), between evaluations linearly; the axis
// decides (at equal tokens the longer run wins here, at equal FLOPs the cheaper one).
TEST(Criterion, AtEqualComputeEveryRunIsReadAtTheSameCompute) {
  const fs::path dir = testing::FreshTempDir("criterion_compute");
  FakeRun grow{"grow", 1, "completed", {}, {}};
  grow.step_flops.assign(10, 1.0);  // 10 FLOPs in all
  grow.history = {{0, 64, 3.0}, {5, 64, 2.0}, {5, 16, 9.0}, {10, 64, 1.2}};
  WriteFakeRun(dir, grow);
  FakeRun fixed{"fixed", 1, "completed", {}, {}};
  fixed.step_flops.assign(10, 1.5);  // 15 FLOPs: evaluations at 0, 7.5 and 15
  fixed.history = {{0, 64, 3.0}, {5, 64, 1.4}, {10, 64, 1.0}};
  WriteFakeRun(dir, fixed);
  ClaimCriterion k = Criterion({"grow < fixed"});
  k.metric = "loss";
  k.length_lo = k.length_hi = 64;
  k.compute = "flops";
  Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.at_compute, 10.0) << "the least total compute";
  EXPECT_NEAR(v.groups[0].score, 1.2, 1e-12) << "the length 16 row is not judged";
  EXPECT_NEAR(v.groups[1].score, 1.4 * 2 / 3 + 1.0 / 3, 1e-12) << "between 7.5 and 15 FLOPs";
  EXPECT_EQ(v.groups[0].interval, "none (1 run)");
  EXPECT_EQ(v.groups[1].x, (std::vector<double>{0, 7.5, 15}));
  EXPECT_EQ(v.groups[1].curve_mean, (std::vector<double>{3.0, 1.4, 1.0}));
  EXPECT_EQ(v.verdict, "no effect") << "ordered; one run each cannot be significant";
  // At 5 FLOPs the cheaper run is not ahead yet: 2.0 against 3 (1/3) + 1.4 (2/3).
  k.at_compute = 5;
  v = JudgeCriterion(k, dir.string());
  EXPECT_NEAR(v.groups[1].score, 3.0 / 3 + 1.4 * 2 / 3, 1e-12);
  EXPECT_FALSE(v.comparisons[0].in_direction);
  // At equal tokens (one per step) both end at 10 tokens, where the longer-trained run is lower.
  k.at_compute = 0;
  k.compute = "tokens";
  v = JudgeCriterion(k, dir.string());
  EXPECT_NEAR(v.groups[1].score, 1.0, 1e-12);
  EXPECT_FALSE(v.comparisons[0].in_direction);
  // A length with no evaluation during training is an input error naming the span.
  k.length_lo = k.length_hi = 32;
  const std::string error = JudgeError(k, dir);
  EXPECT_NE(error.find("no evaluation during training at a length in [32, 32]"), std::string::npos)
      << error;
  fs::remove_all(dir);
}

// Steps to a target (YaRN's measure): each run is scored by the training steps at which its loss
// first reaches the target, linearly between the evaluations around it. A run that never reaches
// it counts its whole training, a lower bound: harmless on the side claimed slower, but on the side
// claimed faster it would favour the claim, so that comparison is then never significant for it.
TEST(Criterion, StepsToReachAreInterpolatedAndAnUnreachedRunCannotSupportTheClaim) {
  const fs::path dir = testing::FreshTempDir("criterion_reach");
  // Per seed: the loss at steps 0, 2, 4, ... (length 64), over 10 training steps (fast) or 20
  // (slow); both variants of a seed fine-tune the same pre-training, so they are paired.
  auto write = [&](const std::string& label, int seed, const std::vector<double>& loss) {
    FakeRun r{label, seed, "completed", {}, {}};
    r.step_flops.assign(2 * (loss.size() - 1), 1.0);
    for (size_t i = 0; i < loss.size(); ++i)
      r.history.emplace_back(static_cast<int64_t>(2 * i), 64, loss[i]);
    r.init_from = (dir / ("pre-seed" + std::to_string(seed) + ".h5")).string();
    WriteFakeRun(dir, r);
  };
  write("fast", 1, {3.0, 1.0, 0.5, 0.5, 0.5, 0.5});  // reaches 1.5 at step 1.5
  write("fast", 2, {3.0, 0.5, 0.5, 0.5, 0.5, 0.5});  // at 1.2
  write("fast", 3, {3.0, 1.5, 0.5, 0.5, 0.5, 0.5});  // at 2 exactly
  const std::vector<double> slow_before = {3.0, 2.9, 2.8, 2.7, 2.6, 2.5, 2.4};  // steps 0..12
  auto slow = [&](std::vector<double> after) {
    std::vector<double> v = slow_before;
    v.insert(v.end(), after.begin(), after.end());
    return v;
  };
  write("slow", 1, slow({1.0, 0.9, 0.9, 0.9}));  // at 12 + 2 (0.9 / 1.4)
  write("slow", 2, slow({2.0, 1.5, 1.0, 1.0}));  // at 16
  write("slow", 3, slow({2.0, 1.9, 1.0, 1.0}));  // at 16 + 2 (0.4 / 0.9)
  ClaimCriterion k = Criterion({"fast < slow"});
  k.metric = "loss";
  k.length_lo = k.length_hi = 64;
  k.compute = "steps";
  k.reach = 1.5;
  Verdict v = JudgeCriterion(k, dir.string());
  ASSERT_EQ(v.groups.size(), 2u);
  EXPECT_NEAR(v.groups[0].per_seed[0], 1.5, 1e-12);
  EXPECT_NEAR(v.groups[0].per_seed[1], 1.2, 1e-12);
  EXPECT_NEAR(v.groups[0].per_seed[2], 2.0, 1e-12) << "reaching it at an evaluation";
  EXPECT_NEAR(v.groups[1].per_seed[0], 12 + 2 * 0.9 / 1.4, 1e-12);
  EXPECT_NEAR(v.groups[1].per_seed[1], 16.0, 1e-12);
  EXPECT_NEAR(v.groups[1].per_seed[2], 16 + 2 * 0.4 / 0.9, 1e-12);
  EXPECT_EQ(v.groups[1].censored, 0);
  EXPECT_EQ(v.comparisons[0].test, "paired t");
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  // The side claimed slower never reaching the target on a seed: scored at its 20 steps, a lower
  // bound that can only understate how much slower it is.
  write("slow", 3, slow({2.0, 1.9, 1.8, 1.7}));
  v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.groups[1].censored, 1);
  EXPECT_NEAR(v.groups[1].per_seed[2], 20.0, 1e-12);
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  // The side claimed faster never reaching it on a seed: its 10 steps are still fewer than the
  // slow side's, but they understate it, so the comparison cannot count for the claim.
  write("fast", 3, {3.0, 2.0, 2.0, 2.0, 2.0, 2.0});
  v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.groups[0].censored, 1);
  EXPECT_TRUE(v.comparisons[0].in_direction);
  EXPECT_FALSE(v.comparisons[0].significant_for);
  EXPECT_EQ(v.verdict, "no effect") << v.reason;
  fs::remove_all(dir);
}

// Two evaluations of the same trained models share the seeds' spread: the comparison is paired,
// judged on the seeds' differences, because the runs say so (weights_from), not because a claim
// declares it. The same values from separately trained models are compared unpaired (Welch), where
// the spread hides the difference.
TEST(Criterion, RunsOfTheSameTrainedModelsAreComparedPaired) {
  const fs::path dir = testing::FreshTempDir("criterion_paired");
  const std::vector<double> a = {1.0, 2.0, 3.0}, d = {-0.10, -0.12, -0.08};
  for (int s = 0; s < 3; ++s) {
    const std::string model = fmt::format("/runs/train/rope-seed{}.h5", s + 1);
    FakeRun cut{"rope+cut", s + 1, "completed", {128}, {a[s] + d[s]}};
    cut.weights_from = model;
    WriteFakeRun(dir / "same", cut);
    FakeRun none{"rope+none", s + 1, "completed", {128}, {a[s]}};
    none.weights_from = model;
    WriteFakeRun(dir / "same", none);
    // The same numbers from models trained apart.
    WriteFakeRun(dir / "apart", {"rope+cut", s + 1, "completed", {128}, {a[s] + d[s]}});
    WriteFakeRun(dir / "apart", {"rope+none", s + 1, "completed", {128}, {a[s]}});
  }
  ClaimCriterion k = Criterion({"rope+cut < rope+none"});
  k.metric = "loss";
  k.length_lo = k.length_hi = 128;
  Verdict v = JudgeCriterion(k, (dir / "same").string());
  const ComparisonResult& c = v.comparisons[0];
  EXPECT_EQ(c.test, "paired t");
  EXPECT_EQ(c.paired_seeds, 3);
  EXPECT_NEAR(c.difference.score, -0.1, 1e-12);
  const Interval t = MeanInterval(d);
  EXPECT_NEAR(c.difference.lo, t.lo, 1e-12);
  EXPECT_NEAR(c.difference.hi, t.hi, 1e-12);
  EXPECT_EQ(v.verdict, "reproduced");
  k.holds = {"rope+cut > rope+none"};
  EXPECT_EQ(JudgeCriterion(k, (dir / "same").string()).verdict, "contradicted");
  k.holds = {"rope+cut < rope+none"};
  v = JudgeCriterion(k, (dir / "apart").string());
  EXPECT_EQ(v.comparisons[0].test, "Welch t");
  EXPECT_EQ(v.verdict, "no effect") << "unpaired, the seeds' spread hides it";
  fs::remove_all(dir);
}

// Fine-tunings of one pre-training per seed are paired too (init_from); a seed whose two runs
// come from different models breaks the pairing, and one common seed gives no interval.
TEST(Criterion, FineTuningsOfOnePreTrainingArePairedAndMixedOriginsAreNot) {
  const fs::path dir = testing::FreshTempDir("criterion_paired_init");
  const std::vector<double> base = {2.0, 2.5, 3.0};
  for (int s = 1; s <= 3; ++s) {
    const std::string pre = fmt::format("/runs/pretrain/rope-seed{}.h5", s);
    FakeRun pi{"rope-pi", s, "completed", {256}, {base[s - 1] - 0.1}};
    pi.init_from = pre;
    FakeRun direct{"rope-direct", s, "completed", {256}, {base[s - 1]}};
    direct.init_from = s == 3 ? std::string("/runs/pretrain/other.h5") : pre;
    WriteFakeRun(dir / "mixed", pi);
    WriteFakeRun(dir / "mixed", direct);
    direct.init_from = pre;
    WriteFakeRun(dir / "shared", pi);
    WriteFakeRun(dir / "shared", direct);
  }
  FakeRun lone{"rope-lone", 1, "completed", {256}, {1.0}};
  lone.init_from = "/runs/pretrain/rope-seed1.h5";
  WriteFakeRun(dir / "shared", lone);
  ClaimCriterion k = Criterion({"rope-pi < rope-direct"});
  k.metric = "loss";
  k.length_lo = k.length_hi = 256;
  Verdict v = JudgeCriterion(k, (dir / "shared").string());
  EXPECT_EQ(v.comparisons[0].test, "paired t");
  EXPECT_EQ(v.verdict, "reproduced");
  v = JudgeCriterion(k, (dir / "mixed").string());
  EXPECT_EQ(v.comparisons[0].test, "Welch t") << "seed 3's runs share no model";
  k.holds = {"rope-lone < rope-direct"};
  v = JudgeCriterion(k, (dir / "shared").string());
  EXPECT_EQ(v.comparisons[0].test, "paired t");
  EXPECT_EQ(v.comparisons[0].paired_seeds, 1);
  EXPECT_TRUE(v.comparisons[0].in_direction);
  EXPECT_EQ(v.verdict, "no effect") << "one difference has no interval";
  fs::remove_all(dir);
}

TEST(Criterion, ALabelWithoutACompletedRunIsNotTestableAndSaysWhich) {
  const fs::path dir = testing::FreshTempDir("criterion_missing");
  WriteFakeRun(dir, {"nope", 1, "completed", {20}, {0.5}});
  WriteFakeRun(dir, {"rope", 1, "diverged", {}, {}});
  ClaimCriterion k = Criterion({"nope > rope"});
  k.length_lo = k.length_hi = 20;
  const Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.verdict, "not testable");
  EXPECT_NE(v.reason.find("no completed run of rope"), std::string::npos) << v.reason;
  // A span the runs did not evaluate is an input error naming it.
  k.length_lo = 30;
  k.length_hi = 40;
  const std::string error = JudgeError(k, dir);
  EXPECT_NE(error.find("evaluated no length in [30, 40]"), std::string::npos) << error;
  fs::remove_all(dir);
}

// Runs of a seed sweep, and their evaluations under a rule, group under one label.
TEST(Criterion, SeedSuffixesAreDroppedBeforeAndAfterAnEvaluationsRule) {
  EXPECT_EQ(GroupKey("rope-seed2"), "rope");
  EXPECT_EQ(GroupKey("rope-seed2+pix4"), "rope+pix4");
  EXPECT_EQ(GroupKey("rope-base10-seed13+none-log_ntrue"), "rope-base10+none-log_ntrue");
  EXPECT_EQ(GroupKey("rope+pix4"), "rope+pix4");
  EXPECT_EQ(GroupKey("rope-seedling"), "rope-seedling");
  EXPECT_EQ(GroupKey("rope-seed"), "rope-seed");
}

TEST(Criterion, AComparisonOverItsOwnSpanScoresItsLabelsThere) {
  const Comparison c = ParseComparison("a > b at 2..5", "test");
  EXPECT_EQ(c.a, "a");
  EXPECT_EQ(c.b, "b");
  EXPECT_EQ(c.lo, 2);
  EXPECT_EQ(c.hi, 5);
  EXPECT_EQ(c.Text(), "a > b at 2..5");
  EXPECT_EQ(ParseComparison("a < 0.9 at 1..20", "test").b_value, 0.9);
  // a above b at short lengths and below it at long ones (three seeds each).
  const fs::path dir = testing::FreshTempDir("criterion_spans");
  for (int seed = 1; seed <= 3; ++seed) {
    const double e = 0.01 * seed;
    WriteFakeRun(dir, {"a", seed, "completed", {4, 32}, {0.9 + e, 0.1 + e}, 100, 16});
    WriteFakeRun(dir, {"b", seed, "completed", {4, 32}, {0.5 + e, 0.6 + e}, 100, 16});
  }
  ClaimCriterion k = Criterion({"a < b", "a > b at 1..8"});
  k.length_lo = 17;
  const Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  ASSERT_EQ(v.comparisons.size(), 2u);
  EXPECT_NEAR(v.comparisons[1].a.score, 0.92, 1e-12);  // a's mean at length 4
  EXPECT_NEAR(v.comparisons[1].b.score, 0.52, 1e-12);
  EXPECT_NEAR(v.groups[0].score, 0.12, 1e-12);  // the groups keep the criterion's span
  // The same comparisons the other way round fail, at both spans.
  const Verdict w = JudgeCriterion(Criterion({"a > b", "a < b at 1..8"}), dir.string());
  EXPECT_EQ(w.verdict, "contradicted") << w.reason;
  // A span no run evaluated is an input error naming it.
  EXPECT_THROW(JudgeCriterion(Criterion({"a > b at 5..6"}), dir.string()), InputError);
  fs::remove_all(dir);
}

// gap_share reads each intervention's share of /diagnosis per seed (planted: window closes 0.9,
// 0.8, 0.7 of the gap, the clamp 0.1, 0.0, 0.2); where a seed's gap was not significant (share
// NaN) at a judged length that seed is not scored (counted incomplete, as a run that did not
// learn), and with no seed left the label is not testable and says why; a length outside the
// judged ones whose gap is not significant is left out (as at 96 for every seed, a 1.5 N whose
// gap is small), the judged lengths still scored.
TEST(Criterion, GapShareIsReadPerInterventionAndAnInsignificantGapIsNotScored) {
  const fs::path dir = testing::FreshTempDir("criterion_gap_share");
  const double window[] = {0.9, 0.8, 0.7}, clamp[] = {0.1, 0.0, 0.2};
  for (int seed = 1; seed <= 3; ++seed) {
    FakeRun r;
    r.label = "rope";
    r.seed = seed;
    r.length = {12, 16};
    r.value.assign(2, 1.0);
    r.shares = {{"distance_clamp", {std::nan(""), clamp[seed - 1]}},
                {"window", {std::nan(""), window[seed - 1]}}};
    WriteFakeRun(dir / "runs", r);
  }
  ClaimCriterion k;
  k.metric = "gap_share";
  k.length_lo = k.length_hi = 16;
  k.holds = {"rope+window > rope+distance_clamp"};
  const Verdict v = JudgeCriterion(k, (dir / "runs").string());
  ASSERT_EQ(v.groups.size(), 2u) << v.reason;
  EXPECT_EQ(v.groups[0].seeds, (std::vector<int>{1, 2, 3})) << "no gap at 12 is not judged";
  EXPECT_NEAR(v.groups[0].score, 0.8, 1e-12);
  EXPECT_NEAR(v.groups[1].score, 0.1, 1e-12);
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  // A share that widens the gap has its interval below 0 (not cut at 0 as a loss's would be).
  EXPECT_LT(v.groups[1].lo, 0.0);
  EXPECT_LT(v.groups[1].lo, v.groups[1].hi);
  k.holds = {"rope+distance_clamp > 0.5"};  // the negative control: the clamp closes little
  EXPECT_EQ(JudgeCriterion(k, (dir / "runs").string()).verdict, "contradicted");
  FakeRun flat;
  flat.label = "rope";
  flat.length = {12, 16};
  flat.value.assign(2, 1.0);
  flat.shares = {{"distance_clamp", {0.5, std::nan("")}}, {"window", {0.5, std::nan("")}}};
  flat.seed = 2;
  WriteFakeRun(dir / "runs", flat);
  const Verdict one_flat = JudgeCriterion(k, (dir / "runs").string());
  ASSERT_EQ(one_flat.groups.size(), 1u);
  EXPECT_EQ(one_flat.groups[0].seeds, (std::vector<int>{1, 3}));
  EXPECT_EQ(one_flat.groups[0].incomplete, 1);
  for (const int seed : {1, 3}) {
    flat.seed = seed;
    WriteFakeRun(dir / "runs", flat);
  }
  const Verdict no_gap = JudgeCriterion(k, (dir / "runs").string());
  EXPECT_EQ(no_gap.verdict, "not testable");
  EXPECT_NE(no_gap.reason.find("rope+distance_clamp (no significant gap at length 16)"),
            std::string::npos)
      << no_gap.reason;
  fs::remove_all(dir);
}

// A label scored by its own *_limit metric (LABEL@METRIC): the same trained models' retrieval by
// exact match and text by loss, planted with limits 24 +- 1 and 128 +- 2 by seed, compared paired;
// the metrics are read each from its own run, so swapping them turns the verdict round.
TEST(Criterion, ALabelMayBeScoredByItsOwnLimitMetric) {
  const fs::path dir = testing::FreshTempDir("criterion_label_metric");
  for (int seed = 1; seed <= 3; ++seed) {
    FakeRun retrieval;  // exact match 1 up to 24 + seed - 2, then 0
    retrieval.label = "rope+retrieval";
    retrieval.seed = seed;
    retrieval.train_max_length = 16;
    retrieval.length = {4, 16, 22 + seed, 23 + seed};
    retrieval.value = Values({1, 1, 1, 0});
    retrieval.weights_from = (dir / fmt::format("rope-seed{}.h5", seed)).string();
    WriteFakeRun(dir / "runs", retrieval);
    FakeRun text = retrieval;  // loss 1 (learnt: 2 at length 4) up to 124 + 2 seed, then 10
    text.label = "rope+text";
    text.length = {4, 16, 124 + 2 * seed, 125 + 2 * seed};
    text.value = Values({2.0, 1.0, 1.0, 10.0});
    WriteFakeRun(dir / "runs", text);
  }
  ClaimCriterion k;
  k.metric = "exact_match_limit";
  k.length_lo = k.length_hi = 16;
  k.holds = {"rope+retrieval@exact_match_limit < rope+text@loss_limit"};
  const Verdict v = JudgeCriterion(k, (dir / "runs").string());
  ASSERT_EQ(v.groups.size(), 2u) << v.reason;
  EXPECT_EQ(v.groups[0].label, "rope+retrieval@exact_match_limit");
  EXPECT_NEAR(v.groups[0].score, 24, 1e-9);
  EXPECT_NEAR(v.groups[1].score, 128, 1e-9);
  EXPECT_EQ(v.comparisons[0].test.rfind("paired t", 0), 0u) << v.comparisons[0].test;
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  // Negative control: each side by the other's metric reads what that file cannot give (the
  // retrieval's "loss" falls to 0, unlearnt by loss; the text's accuracy is 1 then 10).
  k.holds = {"rope+retrieval@loss_limit < rope+text@exact_match_limit"};
  EXPECT_NE(JudgeCriterion(k, (dir / "runs").string()).verdict, "reproduced");
  fs::remove_all(dir);
}

// Attention entropy (/analysis/entropy_mean at the probe lengths), relative to the training
// lengths: planted models whose entropy grows like ln n without log-n scaling and stays flat with
// it (evaluations of the same models, paired), and the negative control where both grow alike.
TEST(Criterion, AttentionEntropyGrowthIsReadFromTheProbeLengths) {
  const fs::path dir = testing::FreshTempDir("criterion_entropy");
  const std::vector<int64_t> lengths = {64, 256};
  auto write = [&](const std::string& label, int seed, double at64, double at256) {
    FakeRun r{label, seed, "completed", lengths, {at64, at256}};
    r.weights_from = (dir / ("trained-seed" + std::to_string(seed) + ".h5")).string();
    WriteFakeRun(dir, r);
  };
  for (int s = 1; s <= 3; ++s) {
    const double base = 2.0 + 0.1 * s;  // ln of the visible keys grows by ln 4 = 1.39 from 64
    write("rope+none", s, base, base + 1.30 + 0.02 * s);
    write("rope+logn", s, base, base + 0.05 + 0.01 * s);
  }
  ClaimCriterion k = Criterion({"rope+none > 1", "rope+logn < rope+none"});
  k.metric = "attention_entropy";
  k.length_lo = k.length_hi = 256;
  k.relative_lo = k.relative_hi = 64;
  Verdict v = JudgeCriterion(k, dir.string());
  EXPECT_NEAR(v.groups[0].per_seed[0], (2.1 + 1.32) / 2.1, 1e-12);
  EXPECT_EQ(v.comparisons[1].test, "paired t");
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  for (int s = 1; s <= 3; ++s) write("rope+logn", s, 2.0 + 0.1 * s, 2.0 + 0.1 * s + 1.30 + 0.02 * s);
  v = JudgeCriterion(k, dir.string());
  EXPECT_EQ(v.verdict, "partly") << "log-n changing nothing: only the growth holds; " << v.reason;
  EXPECT_FALSE(v.comparisons[1].significant_for);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
