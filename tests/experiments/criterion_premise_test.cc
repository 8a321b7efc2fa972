// A claim's premises ([criterion].requires): what must be established before the claim is tested at
// all, such as a task learnt at the training lengths before its failure beyond them means
// anything. A premise not significant in its direction makes the verdict "not testable", naming
// it, whatever the claim's own comparisons show; met, the verdict is the claim's comparisons'
// alone (premises do not enter Bonferroni's count).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/difference_intervals.h"
#include "experiments/reproduce/claim.h"
#include "experiments/reproduce/criterion.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

// A completed run `label`-seed<s>.h5 with token accuracy `inside` at length 10 (within training)
// and `beyond` at length 40, over 200 sequences each.
void WriteRun(const fs::path& dir, const std::string& label, int seed, double inside,
              double beyond) {
  fs::create_directories(dir);
  const std::string name = label + "-seed" + std::to_string(seed);
  h5::Writer w((dir / (name + ".h5")).string());
  const h5::Group& root = w.root();
  root.SetAttr("format", "lexp-run/2");
  root.SetAttr("label", name);
  root.SetAttr("seed", seed);
  root.SetAttr("train_max_length", 20);
  root.CreateGroup("status").SetAttr("state", "completed");
  const h5::Group eval = root.CreateGroup("eval");
  eval.WriteInts("length", {10, 40}, {2}, "length");
  for (const char* m : {"token_accuracy", "exact_match", "loss"})
    eval.WriteDoubles(m, {inside, beyond}, {2}, "length");
  eval.WriteInts("samples", {200, 200}, {2}, "length");
  w.Commit();
}

ClaimCriterion FailsBeyondTraining() {
  ClaimCriterion k;
  k.metric = "token_accuracy";
  k.length_lo = 40;
  k.length_hi = 40;
  k.seeds = "mean";
  k.holds = {"rope < 0.9"};
  k.premises = {"rope > 0.9 at 10..10"};
  return k;
}

// Not learnt inside the training lengths (0.70): its failure beyond them (0.50) tests nothing.
TEST(CriterionPremise, AnUnmetPremiseMakesTheClaimNotTestableNamingIt) {
  const fs::path dir = testing::FreshTempDir("premise_unmet");
  for (int s = 1; s <= 3; ++s) WriteRun(dir, "rope", s, 0.70 + 0.01 * s, 0.50 + 0.01 * s);
  const Verdict v = JudgeCriterion(FailsBeyondTraining(), dir.string());
  EXPECT_EQ(v.verdict, "not testable") << v.reason;
  EXPECT_NE(v.reason.find("premise not met at 95%: rope > 0.9 at 10..10"), std::string::npos)
      << v.reason;
  ASSERT_EQ(v.comparisons.size(), 2u);
  EXPECT_FALSE(v.comparisons[0].comparison.premise);
  EXPECT_TRUE(v.comparisons[0].significant_for) << "the claim's own comparison still holds";
  EXPECT_TRUE(v.comparisons[1].comparison.premise);
  EXPECT_TRUE(v.comparisons[1].significant_against);
  fs::remove_all(dir);
}

// Learnt inside (0.99), failing beyond (0.50): reproduced, judged on the claim's one comparison
// (Bonferroni's level over 1, not 2). A premise that holds only in direction is still unmet.
TEST(CriterionPremise, AMetPremiseLeavesTheVerdictToTheClaimsComparisons) {
  const fs::path dir = testing::FreshTempDir("premise_met");
  for (int s = 1; s <= 3; ++s) WriteRun(dir, "rope", s, 0.985 + 0.004 * s, 0.50 + 0.01 * s);
  Verdict v = JudgeCriterion(FailsBeyondTraining(), dir.string());
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  EXPECT_NE(v.reason.find("1 of 1 comparisons"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("Bonferroni's 0.95:"), std::string::npos) << v.reason;
  for (int s = 1; s <= 3; ++s) WriteRun(dir, "rope", s, 0.80 + 0.05 * s, 0.50 + 0.01 * s);
  v = JudgeCriterion(FailsBeyondTraining(), dir.string());
  EXPECT_EQ(v.verdict, "not testable") << "0.85, 0.90, 0.95: above 0.9 in mean only; " << v.reason;
  fs::remove_all(dir);
}

// A premise round-trips through its text (verdict files store Text()), and a claim file lists
// premises under [criterion].requires, refused like a bad comparison.
TEST(CriterionPremise, APremiseIsReadFromItsTextAndFromTheClaimFile) {
  const Comparison c = ParseComparison("requires rope > 0.9 at 1..20", "test");
  EXPECT_TRUE(c.premise);
  EXPECT_EQ(c.a, "rope");
  EXPECT_EQ(c.Text(), "requires rope > 0.9 at 1..20");
  EXPECT_FALSE(ParseComparison("rope > 0.9", "test").premise);
  const std::string head =
      "[claim]\nid = \"P99\"\nname = \"premise\"\nstatement = \"s\"\nsource = \"src\"\n"
      "published = \"p\"\nprotocol = \"pr\"\n[[stage]]\nname = \"train\"\nrecipe = \"default\"\n"
      "[criterion]\nmetric = \"token_accuracy\"\nlengths = [21, 40]\nholds = [\"rope < 0.9\"]\n";
  const Claim claim = ParseClaim(head + "requires = [\"rope > 0.9 at 1..20\"]\n", "premise.toml");
  ASSERT_EQ(claim.criterion.premises.size(), 1u);
  EXPECT_EQ(claim.criterion.premises[0], "rope > 0.9 at 1..20");
  try {
    ParseClaim(head + "requires = [\"rope >> 0.9\"]\n", "premise.toml");
    ADD_FAILURE() << "a premise that is not a comparison was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("[criterion].requires: 'rope >> 0.9' is not a comparison"),
              std::string::npos)
        << e.what();
  }
}

// A control where the claim's mechanism is absent: a window loses a key beyond it (length 40),
// but inside it (length 10) the window must retrieve as full attention does, shown equivalent.
ClaimCriterion WindowLosesWhatItCannotSee() {
  ClaimCriterion k;
  k.metric = "exact_match";
  k.length_lo = 40;
  k.length_hi = 40;
  k.seeds = "mean";
  k.holds = {"full > window"};
  k.premises = {"window ~ full within 0.05 at 10..10"};
  return k;
}

TEST(CriterionControl, AnEquivalentControlLeavesTheVerdictToTheClaim) {
  const fs::path dir = testing::FreshTempDir("control_met");
  for (int s = 1; s <= 3; ++s) {
    WriteRun(dir, "full", s, 0.99 - 0.002 * s, 0.90 + 0.01 * s);
    WriteRun(dir, "window", s, 0.985 - 0.002 * s, 0.20 + 0.01 * s);
  }
  const Verdict v = JudgeCriterion(WindowLosesWhatItCannotSee(), dir.string());
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  ASSERT_EQ(v.comparisons.size(), 2u);
  const ComparisonResult& control = v.comparisons[1];
  EXPECT_TRUE(control.comparison.equivalent);
  EXPECT_TRUE(control.significant_for);
  EXPECT_NE(control.test.find("equivalence (90% interval)"), std::string::npos) << control.test;
  EXPECT_GT(control.difference.lo, -0.05);
  EXPECT_LT(control.difference.hi, 0.05);
  fs::remove_all(dir);
}

// Inside its window the window model already fails (0.60 against 0.99): its failure beyond the
// window is not the mask's, so the claim is not testable, naming the control.
TEST(CriterionControl, AControlShownDifferentMakesTheClaimNotTestable) {
  const fs::path dir = testing::FreshTempDir("control_different");
  for (int s = 1; s <= 3; ++s) {
    WriteRun(dir, "full", s, 0.99 - 0.002 * s, 0.90 + 0.01 * s);
    WriteRun(dir, "window", s, 0.60 + 0.01 * s, 0.20 + 0.01 * s);
  }
  const Verdict v = JudgeCriterion(WindowLosesWhatItCannotSee(), dir.string());
  EXPECT_EQ(v.verdict, "not testable") << v.reason;
  EXPECT_NE(v.reason.find("premise not met at 95%: window ~ full within 0.05 at 10..10"),
            std::string::npos)
      << v.reason;
  EXPECT_TRUE(v.comparisons[1].significant_against);
  fs::remove_all(dir);
}

// Beyond the margin (window above full by 0.08, either way of the pair) a control is not met;
// within it at 90% but not at 95% (Schuirmann's test is the 90% interval) it is.
TEST(CriterionControl, AControlBeyondTheMarginFailsEitherWayAndUsesTheNinetyPercentInterval) {
  for (const double sign : {1.0, -1.0}) {
    const fs::path dir = testing::FreshTempDir("control_beyond");
    for (int s = 1; s <= 3; ++s) {
      WriteRun(dir, "full", s, 0.90 - 0.002 * s, 0.90 + 0.01 * s);
      WriteRun(dir, "window", s, 0.90 + sign * 0.08 - 0.002 * s, 0.20 + 0.01 * s);
    }
    const Verdict v = JudgeCriterion(WindowLosesWhatItCannotSee(), dir.string());
    EXPECT_EQ(v.verdict, "not testable") << sign << ": " << v.reason;
    EXPECT_FALSE(v.comparisons[1].significant_for);
    fs::remove_all(dir);
  }
  // Window below full by about 0.02 (Welch, independent runs), with a spread whose 95% interval
  // reaches past -0.05 while the 90% one stays inside.
  const fs::path dir = testing::FreshTempDir("control_ninety");
  const std::vector<double> window = {0.925, 0.955, 0.935}, full = {0.960, 0.955, 0.965};
  const Interval d90 = WelchDifference(window, full, 0.90), d95 = WelchDifference(window, full, 0.95);
  ASSERT_GT(d90.lo, -0.05) << "the planted 90% interval lies inside the margin";
  ASSERT_LT(d95.lo, -0.05) << "and the 95% one does not";
  for (int s = 1; s <= 3; ++s) {
    WriteRun(dir, "full", s, full[s - 1], 0.90 + 0.01 * s);
    WriteRun(dir, "window", s, window[s - 1], 0.20 + 0.01 * s);
  }
  const Verdict v = JudgeCriterion(WindowLosesWhatItCannotSee(), dir.string());
  EXPECT_NEAR(v.comparisons[1].difference.lo, d90.lo, 1e-12);
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  fs::remove_all(dir);
}

// Equal means with a wide spread: no difference is shown, and no equivalence either. A null
// difference is not a met control.
TEST(CriterionControl, ANullDifferenceIsNotAnEquivalence) {
  const fs::path dir = testing::FreshTempDir("control_noisy");
  const double inside[] = {0.70, 0.99, 0.85};
  for (int s = 1; s <= 3; ++s) {
    WriteRun(dir, "full", s, inside[(s + 1) % 3], 0.90 + 0.01 * s);
    WriteRun(dir, "window", s, inside[s - 1], 0.20 + 0.01 * s);
  }
  const Verdict v = JudgeCriterion(WindowLosesWhatItCannotSee(), dir.string());
  EXPECT_NEAR(v.comparisons[1].difference.score, 0.0, 1e-12);
  EXPECT_FALSE(v.comparisons[1].significant_for);
  EXPECT_FALSE(v.comparisons[1].significant_against);
  EXPECT_EQ(v.verdict, "not testable") << v.reason;
  fs::remove_all(dir);
}

TEST(CriterionControl, AControlIsReadFromItsTextAndOnlyAsAPremise) {
  const Comparison c = ParseComparison("requires window ~ full within 0.05 at 1..8", "test");
  EXPECT_TRUE(c.premise);
  EXPECT_TRUE(c.equivalent);
  EXPECT_EQ(c.a, "window");
  EXPECT_EQ(c.b, "full");
  EXPECT_DOUBLE_EQ(c.margin, 0.05);
  EXPECT_EQ(c.Text(), "requires window ~ full within 0.05 at 1..8");
  for (const char* bad : {"window ~ full", "window ~ full within 0", "window ~ full within x",
                          "window ~ full within -0.1"}) {
    try {
      ParseComparison(bad, "test");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("a control is \"A ~ B within D\""), std::string::npos)
          << e.what();
    }
  }
  const std::string head =
      "[claim]\nid = \"P99\"\nname = \"control\"\nstatement = \"s\"\nsource = \"src\"\n"
      "published = \"p\"\nprotocol = \"pr\"\n[[stage]]\nname = \"train\"\nrecipe = \"default\"\n"
      "[criterion]\nmetric = \"exact_match\"\nlengths = [21, 40]\n";
  try {
    ParseClaim(head + "holds = [\"window ~ full within 0.05\"]\n", "control.toml");
    ADD_FAILURE() << "a control among the claim's own comparisons was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a control (A ~ B within D); list it under requires"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lexp
