// The gallery's claim files (experiments/reproduce/): every built-in claim parses and its stages
// make valid recipes at both budgets, and each claim's criterion passes on hand-made run files
// that order its labels as it claims and fails on the reverse order; bad claim files name the key
// and what is allowed.
#include <gtest/gtest.h>

#include "tests/experiments/reproduce_fixtures.h"

namespace lexp {
namespace {

using namespace reproduce_testing;

TEST(Claims, EveryBuiltInClaimParsesAndItsStagesAreValidRecipesAtBothBudgets) {
  const auto claims = BuiltinClaims();
  ASSERT_GE(claims.size(), 4u);
  std::set<std::string> ids;
  for (const auto& c : claims) {
    EXPECT_TRUE(ids.insert(c.id).second) << c.id << " twice";
    EXPECT_EQ(c.file, "experiments/reproductions/" + c.DirName() + ".toml")
        << "a claim's file is named <id>_<name>.toml";
    for (const std::string budget : {"smoke", "full"}) {
      EXPECT_NO_THROW(StageRecipes(c, budget, "/tmp/x")) << c.id;
      // Every label its criterion names is one its stages write.
      if (c.testable) {
        try {
          CheckCriterionNamesPlannedRuns(c, StageRecipes(c, budget, "/tmp/x"), budget, "/tmp/x");
        } catch (const InputError& e) {
          ADD_FAILURE() << c.id << " (" << budget << "): " << e.what();
        }
      }
    }
    // The smoke budget is a pipeline check: no stage trains beyond its cap.
    for (const RecipeConfig& r : StageRecipes(c, "smoke", "/tmp/x"))
      EXPECT_EQ(r.steps_cap, kSmokeSteps) << c.id;
  }
  const auto listed = SelectClaims({claims.back().id, claims.front().id});
  EXPECT_EQ(listed.front().id, claims.back().id);
  EXPECT_THROW(SelectClaims({"Q99"}), InputError);
}

// For every claim: one set of run files that must pass (the claimed order) and one that contradicts
// it (the reverse).
TEST(Claims, EveryCriterionPassesOnTheClaimedOrderAndFailsOnTheReverse) {
  for (const auto& c : BuiltinClaims()) {
    if (!c.testable) continue;
    SCOPED_TRACE(c.id);
    const fs::path dir = testing::FreshTempDir("criterion_" + c.id);
    WriteOrderedRuns(dir / "good", c.criterion, false);
    WriteOrderedRuns(dir / "bad", c.criterion, true);
    const Verdict good = JudgeCriterion(c.criterion, (dir / "good").string());
    EXPECT_EQ(good.verdict, "reproduced") << good.reason;
    const Verdict bad = JudgeCriterion(c.criterion, (dir / "bad").string());
    EXPECT_EQ(bad.verdict, "contradicted") << bad.reason;
    fs::remove_all(dir);
  }
}

TEST(Claims, BadClaimFilesNameTheKeyAndWhatIsAllowed) {
  const std::string good = R"([claim]
id = "P9"
name = "x"
statement = "s"
source = "src"
published = "p"
protocol = "pr"
[[stage]]
name = "train"
recipe = "default"
[criterion]
metric = "exact_match"
lengths = [17, 32]
holds = ["nope > rope"]
)";
  EXPECT_EQ(ClaimError(good), "");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return ClaimError(t);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {with("id = \"P9\"", "id = \"p9\""), "[claim].id = 'p9' must be a capital letter"},
      {with("recipe = \"default\"", "recipe = \"nosuch\""), "recipe 'nosuch' is not one of"},
      {with("recipe = \"default\"", "recipe = \"/no/such/r.toml\""),
       "cannot read the recipe file '/no/such/r.toml'"},
      {with("metric = \"exact_match\"", "metric = \"bleu\""),
       "allowed: exact_match, token_accuracy, loss, js_to_reference, attention_entropy, sink_mass, "
       "loss_limit, exact_match_limit, token_accuracy_limit, gap_share, shift_move, "
       "position_probe_error"},
      {with("[criterion]", "[criterion]\ncompute = \"hours\""),
       "compute = 'hours'; allowed: tokens, flops, seconds, steps"},
      {with("[criterion]", "[criterion]\nreach = 0.5"),
       "[criterion].reach scores the compute at which the metric reaches it: it needs compute"},
      {with("[criterion]", "[criterion]\ncompute = \"steps\"\nreach = 1.5"),
       "[criterion].reach must be a finite number in (0, 1] for a fraction"},
      {with("[criterion]", "[criterion]\ncompute = \"steps\"\nreach = 0.5\nseeds = \"max\""),
       "reach takes seeds = \"mean\""},
      {with("metric = \"exact_match\"", "metric = \"js_to_reference\"\ncompute = \"flops\""),
       "metric 'js_to_reference' is not evaluated during training"},
      {with("[criterion]", "[criterion]\ncompute = \"flops\"\nrelative_to = [1, 2]"),
       "relative_to and compute exclude each other"},
      {with("[criterion]", "[criterion]\nat_compute = 5.0"), "at_compute must be a positive"},
      {with("[criterion]", "[criterion]\npaired = true"),
       "[criterion].paired: a claim does not say whether its comparisons are paired"},
      {with("lengths = [17, 32]", "lengths = [32, 17]"), "lengths must be [LO, HI]"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope >> rope\"]"), "is not a comparison"},
      {with("holds = [\"nope > rope\"]", "holds = []"), "holds is empty"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope ~ rope within 0.1\"]"),
       "is a control (A ~ B within D); list it under requires"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope > rope\"]\nrequires = [\"nope ~ rope\"]"),
       "a control is \"A ~ B within D\", D a margin > 0"},
      {with("[criterion]", "[criterion]\nseeds = \"median\""), "allowed: mean, max"},
      {with("[criterion]", "[criterion]\nstage = \"nosuch\""), "is not a stage's name"},
      {with("[[stage]]", "[[stage]]\ninit_from = \"train/rope.h5\""), "an earlier stage"},
      {with("[[stage]]", "[[stage]]\nsteps = 3"), "unknown key 'steps'; allowed: name, recipe"},
      {with("[claim]", "[claims]\n[claim]"), "unknown table 'claims'"},
      {with("source = \"src\"\n", ""), "key 'source' is missing"},
      {ClaimError(good + "[budget]\nsmoke_minutes = \"ten\"\n"), "smoke_minutes must be a number"},
      {ClaimError("[claim\n"), "is not valid TOML"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope > rope at 9..3\"]"),
       "own span is \"at LO..HI\""},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope > rope at 9\"]"),
       "own span is \"at LO..HI\""},
      // A stage that evaluates an earlier one's runs again.
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"nosuch\"\n"
                         "scales = [\"pi:factor=2\"]\n"),
       "evaluate = 'nosuch' is not an earlier stage's name"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"), "scales is missing"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "scales = [\"warp:factor=2\"]\n"),
       "unknown rule 'warp'"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "scales = [\"none\"]\nvariants = [\"a\"]\n"),
       "takes no variants or init_from"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "recipe = \"default\"\nscales = [\"none\"]\n"),
       "either recipe"},
      {with("recipe = \"default\"", "recipe = \"default\"\nscales = [\"none\"]"),
       "scales, .evaluations and .diagnose belong to a stage that evaluates"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "scales = [\"none\"]\nevaluations = [\"full\"]\n"),
       "give one of scales (RoPE scaling rules), evaluations (named overrides) or diagnose"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "diagnose = [\"window\", \"rerope\"]\n"),
       "diagnose: 'rerope' is not an intervention of lexp diagnose, or is named twice; allowed: "
       "distance_clamp, position_remap, window"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "diagnose = [\"window\", \"window\"]\n"),
       "'window' is not an intervention of lexp diagnose, or is named twice"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "diagnose = [\"window\"]\nset = [\"eval.samples=4\"]\n"),
       "a stage that diagnoses takes no set, smoke or full"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "diagnose = [\"window\"]\nscales = [\"none\"]\n"),
       "give one of scales"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "diagnose = [\"window\"]\n"),
       "metric 'gap_share' reads /diagnosis, which only a stage with diagnose = [...] writes; "
       "such a stage is judged by gap_share (stage 'z', metric 'exact_match')"},
      {with("metric = \"exact_match\"", "metric = \"gap_share\""),
       "(stage 'train', metric 'gap_share')"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope@loss_limit > rope\"]"),
       "'nope@loss_limit' scores nope by loss_limit under metric 'exact_match'; a label's own "
       "metric (LABEL@METRIC) is allowed only among the *_limit metrics"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope@bleu > rope\"]"),
       "'nope@bleu': the metric after @ = 'bleu'; allowed: exact_match"},
      {with("holds = [\"nope > rope\"]", "holds = [\"nope@ > rope\"]"),
       "the left side must be a run label"},
      {with("recipe = \"default\"", "recipe = \"default\"\ndiagnose = [\"window\"]"),
       ".diagnose belong to a stage that evaluates"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "evaluations = [\"full\", \"full: model.pattern=\\\"lambda\\\"\"]\n"),
       "evaluations: 'full: model.pattern=\"lambda\"' needs a plain name of its own"},
      {ClaimError(good + "[[stage]]\nname = \"z\"\nevaluate = \"train\"\n"
                         "evaluations = [\": model.pattern=\\\"lambda\\\"\"]\n"),
       "needs a plain name of its own"},
      {ClaimError(good + "[trend]\nstage = \"nosuch\"\nfull = [1000]\n"),
       "[trend].stage = 'nosuch' must be the name of a stage that trains"},
      {ClaimError(good + "[trend]\nstage = \"train\"\nfull = [0]\n"),
       "full must be a list of positive integers"},
  };
  for (const auto& [got, want] : cases) {
    EXPECT_NE(got.find(want), std::string::npos) << "got: " << got << "\nwanted: " << want;
    EXPECT_NE(got.find("bad.toml"), std::string::npos) << got;
  }
}

// A claim file of one's own may run a recipe file of one's own.
TEST(Claims, AStageMayRunARecipeFile) {
  const fs::path dir = testing::FreshTempDir("claim_recipe_file");
  std::ofstream(dir / "mine.toml") << "[train]\nsteps = 7\n";
  const Claim c = ParseClaim(
      "[claim]\nid = \"P9\"\nname = \"x\"\nstatement = \"s\"\n"
      "source = \"src\"\npublished = \"p\"\nprotocol = \"pr\"\n"
      "[[stage]]\nname = \"train\"\nrecipe = \"" +
          (dir / "mine.toml").string() +
          "\"\n[criterion]\nmetric = \"loss\"\nlengths = [1, 2]\n"
          "holds = [\"nope < rope\"]\n",
      "mine_claim.toml");
  const RecipeConfig cfg = StageRecipe(c, c.stages[0], "smoke", (dir / "out").string());
  EXPECT_EQ(cfg.steps, 7);
  EXPECT_EQ(cfg.source_name, (dir / "mine.toml").string());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
