// lexp reproduce: stages that train, evaluate and diagnose, refused criteria, earlier verdicts,
// and one claim end to end at a tiny budget with its verdict file, figure and table row.
#include <gtest/gtest.h>

#include "tests/experiments/reproduce_fixtures.h"

namespace lexp {
namespace {

using namespace reproduce_testing;

// A criterion naming a run no stage writes (F9 of the second fuzz: an encoding the claim does
// not train, a rule it does not evaluate, a task it does not run) is refused before the first
// stage trains, naming the label and listing those the stage writes.
TEST(Reproduce, ACriterionNamingARunNoStageWritesIsRefusedBeforeTraining) {
  const fs::path root = testing::FreshTempDir("reproduce_unplanned_label");
  const std::string stages = R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"nope\", \"rope\"]", "train.steps=5", "run.seeds=[1, 2]", )" +
                             std::string(kTinyModel) + R"(]
[[stage]]
name = "zero_shot"
evaluate = "train"
scales = ["none", "pi:factor=2"]
)";
  struct Case {
    std::string criterion, message;
  };
  const std::vector<Case> cases = {
      {"stage = \"train\"\nholds = [\"alibi > rope\"]",
       "holds 'alibi > rope' names 'alibi', which stage 'train' does not write at the smoke "
       "budget; its run labels: nope, rope"},
      {"stage = \"train\"\nholds = [\"nope > rope\"]\nalso = [\"t5\"]", "also names 't5'"},
      {"stage = \"train\"\ntask = \"reverse\"\nholds = [\"nope > rope\"]",
       "task = 'reverse': stage 'train' trains no run of it"},
      {"holds = [\"rope+yarnx2 < rope+none\"]",
       "names 'rope+yarnx2', which stage 'zero_shot' does not write"},
  };
  for (const auto& c : cases) {
    const Claim claim = ParseClaim(ClaimHead("X8", "unplanned") + stages + "[criterion]\nmetric = "
                                       "\"loss\"\nlengths = [4, 4]\n" + c.criterion + "\n",
                                   "unplanned.toml");
    ReproduceOptions opt;
    opt.out_root = root.string();
    opt.figures = false;
    std::string error;
    try {
      ReproduceClaim(claim, opt);
    } catch (const InputError& e) {
      error = e.what();
    }
    EXPECT_NE(error.find(c.message), std::string::npos) << c.criterion << "\n" << error;
    EXPECT_FALSE(fs::exists(root / "smoke" / "X8_unplanned" / "runs")) << c.criterion;
  }
  // The control: the same stages with labels they write are accepted by the check.
  const Claim good = ParseClaim(ClaimHead("X8", "unplanned") + stages +
                                    "[criterion]\nmetric = \"loss\"\nlengths = [4, 4]\nholds = "
                                    "[\"rope+pix2 < rope+none\"]\n",
                                "unplanned.toml");
  EXPECT_NO_THROW(CheckCriterionNamesPlannedRuns(
      good, StageRecipes(good, "smoke", root.string()), "smoke", root.string()));
  fs::remove_all(root);
}

// A stage that evaluates: an earlier stage's run evaluated again under each rule, with no
// training, its files judged under the labels <label>+<rule>; kept on a second call.
TEST(Reproduce, AnEvaluationStageJudgesTheRulesOnTheTrainedRuns) {
  const fs::path root = testing::FreshTempDir("reproduce_eval_stage");
  const Claim c = ParseClaim(ClaimHead("X9", "rules") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"rope\"]", "train.steps=20", "eval.lengths=[2, 4, 8]",
       "run.seeds=[1, 2]", )" + kTinyModel +
                                 R"(]
[[stage]]
name = "zero_shot"
evaluate = "train"
scales = ["none", "pi:factor=2"]
set = ["eval.lengths=[2, 4, 8]"]
[criterion]
metric = "loss"
lengths = [8, 8]
holds = ["rope+pix2 < rope+none", "rope+pix2 > rope+none at 2..4"]
)",
                             "rules_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  const fs::path runs = root / "smoke" / "X9_rules" / "runs";
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  for (const char* f :
       {"rope-seed1+none.h5", "rope-seed1+pix2.h5", "rope-seed2+none.h5", "rope-seed2+pix2.h5"})
    EXPECT_TRUE(fs::exists(runs / "zero_shot" / f)) << f;
  EXPECT_NE(rec.verdict.verdict, "not testable") << rec.verdict.reason;
  ASSERT_EQ(rec.verdict.groups.size(), 2u);
  EXPECT_EQ(rec.verdict.groups[0].label, "rope+pix2");
  EXPECT_EQ(rec.verdict.groups[0].seeds, (std::vector<int>{1, 2}));
  EXPECT_EQ(rec.verdict.groups[1].label, "rope+none");
  ASSERT_EQ(rec.verdict.comparisons.size(), 2u);
  EXPECT_EQ(rec.verdict.comparisons[1].comparison.lo, 2);
  // Unscaled evaluation equals the trained run's own evaluation, seed by seed.
  {
    h5::Reader a((runs / "train" / "rope-seed1.h5").string());
    h5::Reader b((runs / "zero_shot" / "rope-seed1+none.h5").string());
    EXPECT_EQ(a.root().OpenGroup("eval").ReadDoubles("loss"),
              b.root().OpenGroup("eval").ReadDoubles("loss"));
  }
  // A second call keeps the evaluations (same scores, no error about existing files).
  const auto before = fs::last_write_time(runs / "zero_shot" / "rope-seed1+pix2.h5");
  const VerdictRecord again = ReadVerdictFile(ReproduceClaim(c, opt));
  EXPECT_EQ(fs::last_write_time(runs / "zero_shot" / "rope-seed1+pix2.h5"), before);
  EXPECT_EQ(again.verdict.groups[0].score, rec.verdict.groups[0].score);
  fs::remove_all(root);
}

// Named evaluations: the same trained models measured under sets of overrides of their own (an
// attention pattern at evaluation), each file <label>+<name>; compared paired.
TEST(Reproduce, NamedEvaluationsMeasureTheSameModelsSeveralWays) {
  const fs::path root = testing::FreshTempDir("reproduce_named_evals");
  const Claim c = ParseClaim(ClaimHead("X9", "named") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"rope\"]", "train.steps=20", "eval.lengths=[2, 4, 8]",
       "run.seeds=[1, 2]", )" + kTinyModel +
                                 R"(]
[[stage]]
name = "patterns"
evaluate = "train"
evaluations = ["full", "window: model.pattern=\"sliding_window\"; model.pattern_window=2; model.pattern_when=\"eval\""]
[criterion]
metric = "loss"
lengths = [8, 8]
holds = ["rope+window > rope+full"]
)",
                             "named_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  const fs::path runs = root / "smoke" / "X9_named" / "runs";
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  for (const char* f : {"rope-seed1+full.h5", "rope-seed1+window.h5", "rope-seed2+full.h5",
                        "rope-seed2+window.h5"})
    EXPECT_TRUE(fs::exists(runs / "patterns" / f)) << f;
  // "full" evaluates the trained model unchanged: its loss is the training stage's own.
  {
    h5::Reader a((runs / "train" / "rope-seed1.h5").string());
    h5::Reader b((runs / "patterns" / "rope-seed1+full.h5").string());
    EXPECT_EQ(a.root().OpenGroup("eval").ReadDoubles("loss"),
              b.root().OpenGroup("eval").ReadDoubles("loss"));
    h5::Reader w((runs / "patterns" / "rope-seed1+window.h5").string());
    EXPECT_NE(w.root().OpenGroup("eval").ReadDoubles("loss"),
              b.root().OpenGroup("eval").ReadDoubles("loss"))
        << "a 2-token window at evaluation changes the loss at 8";
  }
  ASSERT_EQ(rec.verdict.comparisons.size(), 1u);
  EXPECT_EQ(rec.verdict.comparisons[0].test, "paired t");
  EXPECT_EQ(rec.verdict.comparisons[0].paired_seeds, 2);
  fs::remove_all(root);
}

// A diagnosing stage: each trained run copied with /diagnosis written into the copy (the source
// untouched), its labels <label>+<intervention> scored by gap_share exactly as /diagnosis/share
// reads, an intervention that does not apply refused by name, and a second call keeps the files.
TEST(Reproduce, ADiagnosisStageJudgesTheShareOfTheGapEachInterventionCloses) {
  const fs::path root = testing::FreshTempDir("reproduce_diagnose_stage");
  const std::string head = ClaimHead("X9", "diagnosed") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"rope\"]", "train.steps=200", "eval.lengths=[4, 16]",
       "run.seeds=[1, 2]", )" + kTinyModel + R"(, "eval.samples=32"]
[[stage]]
name = "why"
evaluate = "train"
diagnose = ["distance_clamp", "window", "position_remap"]
[criterion]
metric = "gap_share"
lengths = [16, 16]
)";
  const Claim c = ParseClaim(head + "holds = [\"rope+window > rope+distance_clamp\"]\n",
                             "diagnosed_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  opt.budget = "full";  // the smoke budget keeps 2 seeds and 30 steps
  const fs::path runs = root / "full" / "X9_diagnosed" / "runs";
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  for (const char* f : {"rope-seed1.h5", "rope-seed2.h5"}) {
    h5::Reader source((runs / "train" / f).string());
    EXPECT_FALSE(source.root().Has("diagnosis")) << "the trained run is left as it was";
    h5::Reader copy((runs / "why" / f).string());
    ASSERT_TRUE(copy.root().Has("diagnosis")) << f;
    const h5::Group d = copy.root().OpenGroup("diagnosis");
    EXPECT_EQ(d.AttrString("interventions"), "distance_clamp,window");
    EXPECT_NE(d.AttrString("not_applied").find("position_remap: 'rope' is not an absolute"),
              std::string::npos);
  }
  ASSERT_EQ(rec.verdict.groups.size(), 2u) << rec.verdict.reason;
  EXPECT_EQ(rec.verdict.groups[0].label, "rope+window");
  ASSERT_EQ(rec.verdict.groups[0].per_seed.size(), 2u) << rec.verdict.reason;
  for (size_t i = 0; i < 2; ++i) {  // each seed's score is its diagnosis' share at 16
    h5::Reader copy((runs / "why" / fmt::format("rope-seed{}.h5", i + 1)).string());
    const std::vector<double> share = copy.root().OpenGroup("diagnosis").ReadDoubles("share");
    ASSERT_EQ(share.size(), 2u);
    EXPECT_DOUBLE_EQ(rec.verdict.groups[0].per_seed[i], share[1]) << "window";
    EXPECT_DOUBLE_EQ(rec.verdict.groups[1].per_seed[i], share[0]) << "distance_clamp";
  }
  EXPECT_EQ(rec.verdict.comparisons[0].test, "paired t");
  // A second call keeps the diagnosed copies.
  const auto before = fs::last_write_time(runs / "why" / "rope-seed1.h5");
  ReproduceClaim(c, opt);
  EXPECT_EQ(fs::last_write_time(runs / "why" / "rope-seed1.h5"), before);
  // A criterion naming an intervention the diagnosis did not apply is refused with its reason.
  const Claim remap = ParseClaim(head + "holds = [\"rope+position_remap > 0\"]\n",
                                 "diagnosed_claim.toml");
  try {
    ReproduceClaim(remap, opt);
    ADD_FAILURE() << "position_remap on RoPE was judged";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("its diagnosis did not apply position_remap ("),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(root);
}

// A verdict's minutes are those of every run it was judged on: an earlier call's time counts when
// its runs are kept, not when they are gone (a changed claim whose runs were never committed).
TEST(Reproduce, AnEarlierVerdictsTimeCountsOnlyWithItsRuns) {
  const fs::path root = testing::FreshTempDir("reproduce_minutes");
  const Claim c = ParseClaim(ClaimHead("X9", "minutes") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"rope\", \"nope\"]", "train.steps=5", "eval.lengths=[2, 4]", )" +
                                 kTinyModel + R"(]
[criterion]
metric = "loss"
lengths = [4, 4]
holds = ["rope < nope"]
)",
                             "minutes_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  const std::string path = ReproduceClaim(c, opt);
  VerdictRecord rec = ReadVerdictFile(path);
  rec.minutes = 1000;  // as if the runs had taken 1000 minutes
  fs::remove(path);
  WriteVerdictFile(path, rec);
  EXPECT_GE(ReadVerdictFile(ReproduceClaim(c, opt)).minutes, 1000) << "runs kept: their time counts";
  fs::remove_all(fs::path(path).parent_path() / "runs");
  EXPECT_LT(ReadVerdictFile(ReproduceClaim(c, opt)).minutes, 1000) << "runs gone: a new time";
  fs::remove_all(root);
}

// One claim end to end at a tiny budget: two stages (pre-training, then fine-tuning from it),
// the verdict file's fields, the figure and the table row.
TEST(Reproduce, OneClaimEndToEndWritesItsVerdictFigureAndTableRow) {
  const fs::path root = testing::FreshTempDir("reproduce_e2e");
  Claim c = ParseClaim(R"([claim]
id = "P9"
name = "tiny"
statement = "a tiny claim's statement"
source = "lexp's tests"
published = "nope 0.5"
protocol = "copy"
[[stage]]
name = "pretrain"
recipe = "default"
set = ["model.encodings=[\"nope\", \"rope\"]", "model.d_model=16", "model.n_heads=2",
       "model.n_layers=1", "train.batch_size=8", "train.max_length=4", "eval.lengths=[2, 4, 6]",
       "eval.samples=16", "probe.lengths=[4]", "probe.samples=2", "probe.replay=0"]
smoke = ["train.steps=300"]
full = ["train.steps=40"]
[[stage]]
name = "finetune"
recipe = "default"
init_from = "pretrain/rope.h5"
set = ["model.encodings=[\"rope\"]", "model.d_model=16", "model.n_heads=2", "model.n_layers=1",
       "train.batch_size=8", "train.max_length=6", "train.steps=10", "eval.lengths=[2, 4, 6]",
       "eval.samples=16", "probe.lengths=[4]", "probe.samples=2", "probe.replay=0"]
[criterion]
stage = "pretrain"
metric = "token_accuracy"
lengths = [6, 6]
holds = ["nope > rope"]
published = { nope = 0.5 }
[budget]
smoke_minutes = 1
full_minutes = 1
)",
                       "tiny_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  std::vector<std::string> lines;
  opt.progress = [&](const std::string& s) { lines.push_back(s); };
  const std::string path = ReproduceClaim(c, opt);
  EXPECT_EQ(path, (root / "smoke" / "P9_tiny" / "verdict.h5").string());
  EXPECT_TRUE(fs::exists(root / "smoke" / "P9_tiny" / "runs" / "finetune" / "rope.h5"));
  {
    h5::Reader r((root / "smoke" / "P9_tiny" / "runs" / "finetune" / "rope.h5").string());
    EXPECT_NE(r.root().AttrString("init_from").find("pretrain"), std::string::npos);
  }
  {
    // The smoke budget capped the stage's 300 steps at kSmokeSteps, and the run file says so.
    h5::Reader r((root / "smoke" / "P9_tiny" / "runs" / "pretrain" / "rope.h5").string());
    const RecipeConfig ran = ParseRecipe(r.root().OpenGroup("config").ReadString("recipe"), "run");
    EXPECT_EQ(ran.steps, kSmokeSteps);
    EXPECT_EQ(ran.steps_cap, kSmokeSteps);
  }
  // Its verdict is printed as a pipeline check, not as evidence.
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("P9: pipeline check (smoke: at most 30 training steps, not evidence"),
            std::string::npos)
      << lines.back();
  const VerdictRecord rec = ReadVerdictFile(path);
  EXPECT_EQ(rec.claim.id, "P9");
  EXPECT_EQ(rec.budget, "smoke");
  EXPECT_EQ(rec.claim.criterion.metric, "token_accuracy");
  EXPECT_EQ(rec.claim.criterion.holds, (std::vector<std::string>{"nope > rope"}));
  EXPECT_TRUE(rec.verdict.verdict == "reproduced" || rec.verdict.verdict == "partly" ||
              rec.verdict.verdict == "no effect" || rec.verdict.verdict == "contradicted")
      << rec.verdict.verdict;
  EXPECT_EQ(rec.format, "lexp-verdict/2");
  ASSERT_EQ(rec.verdict.comparisons.size(), 1u);
  EXPECT_FALSE(rec.verdict.comparisons[0].test.empty());
  ASSERT_EQ(rec.verdict.groups.size(), 2u);
  EXPECT_EQ(rec.verdict.groups[0].seeds, (std::vector<int>{1}));
  EXPECT_EQ(rec.verdict.groups[0].x, (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(rec.claim.criterion.published.at("nope"), 0.5);
  EXPECT_EQ(rec.verdict.train_max_length, 4);
  {
    h5::Reader r(path);
    EXPECT_EQ(r.root().OpenGroup("status").AttrString("state"), "completed");
    EXPECT_TRUE(r.root().HasAttr("git_commit"));
  }
  // Judged from the pretrain stage's own run files: the scores are theirs.
  const Verdict again =
      JudgeCriterion(c.criterion, (root / "smoke" / "P9_tiny" / "runs" / "pretrain").string());
  EXPECT_EQ(again.groups[1].score, rec.verdict.groups[1].score);
  EXPECT_TRUE(fs::exists(root / "smoke" / "P9_tiny" / "figures" / "reproduction.png"));
  EXPECT_FALSE(fs::exists(root / "smoke" / "P9_tiny" / "figures" / "reproduction.log"))
      << "gnuplot printed something (a quote in a title?)";
  const std::string table = WriteGalleryTable((root / "smoke").string());
  std::ifstream in(table);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("| P9 | a tiny claim's statement | lexp's tests | nope 0.5 |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[figure](P9_tiny/figures/reproduction.png)"), std::string::npos);
  EXPECT_NE(text.find(VerdictRules()), std::string::npos) << "the rules head the table";
  EXPECT_NE(text.find("**The smoke budget checks the pipeline; it reads nothing.**"),
            std::string::npos);
  EXPECT_NE(text.find("| pipeline check: **"), std::string::npos) << "each smoke verdict marked";
  EXPECT_NE(text.find("; nope > rope: "), std::string::npos) << "each comparison's difference";
  EXPECT_NE(text.find("| judged by " + std::string(GitCommit()) + " |"), std::string::npos)
      << "the build that judged it (a claim outside experiments/reproductions/ has no criterion "
         "commit)";
  EXPECT_FALSE(lines.empty());
  // Again: the finished runs are kept (no error about existing run files).
  EXPECT_NO_THROW(ReproduceClaim(c, opt));
  // The full budget is no pipeline check: its runs train their own steps, its verdict is read.
  opt.budget = "full";
  ReproduceClaim(c, opt);
  EXPECT_EQ(lines.back().find("pipeline check"), std::string::npos) << lines.back();
  {
    h5::Reader r((root / "full" / "P9_tiny" / "runs" / "pretrain" / "rope.h5").string());
    const RecipeConfig ran = ParseRecipe(r.root().OpenGroup("config").ReadString("recipe"), "run");
    EXPECT_EQ(ran.steps, 40);
    EXPECT_EQ(ran.steps_cap, 0);
  }
  std::ifstream full_in(WriteGalleryTable((root / "full").string()));
  const std::string full_text((std::istreambuf_iterator<char>(full_in)), {});
  EXPECT_EQ(full_text.find("pipeline"), std::string::npos) << full_text;
  fs::remove_all(root);
}

// A claim whose runs give no finite score (two steps: nothing learnt, so no extrapolation limit)
// still gets its figure, each panel saying so, and gnuplot complains of nothing (M6 and L1 at the
// smoke budget wrote only a .log before).
TEST(Reproduce, AFigureOfRunsWithoutAScoreSaysSoInsteadOfFailing) {
  const fs::path root = testing::FreshTempDir("reproduce_no_score");
  const Claim c = ParseClaim(ClaimHead("X9", "unlearnt") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"nope\", \"rope\"]", "train.steps=2", "eval.lengths=[2, 4, 6]",
       "run.seeds=[1, 2]", )" + kTinyModel + R"(]
[criterion]
metric = "exact_match_limit"
lengths = [4, 4]
holds = ["rope > nope"]
)",
                             "unlearnt_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.budget = "full";
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  ASSERT_FALSE(rec.verdict.groups.empty()) << rec.verdict.reason;
  const fs::path figures = root / "full" / "X9_unlearnt" / "figures";
  EXPECT_TRUE(fs::exists(figures / "reproduction.png"));
  EXPECT_FALSE(fs::exists(figures / "reproduction.log"))
      << testing::Slurp(figures / "reproduction.log");
  EXPECT_NE(testing::Slurp(figures / "reproduction.gp").find("no finite score to draw"),
            std::string::npos);
  // Beside a label with one value (L1 at the smoke budget): the empty label's block keeps its
  // place in the data file, and the single value gets a range around it.
  VerdictRecord mixed = rec;
  ASSERT_EQ(mixed.verdict.groups.size(), 2u);
  GroupScore& none = mixed.verdict.groups[0];
  none.seeds.clear();
  none.per_seed.clear();
  none.x.clear();
  none.curve_mean.clear();
  none.curve_min.clear();
  none.curve_max.clear();
  GroupScore& one = mixed.verdict.groups[1];
  one.seeds = {1, 2};
  one.per_seed = {256, 256};
  one.score = one.lo = one.hi = 256;
  one.x = {4};
  one.curve_mean = one.curve_min = one.curve_max = {256};
  const fs::path mixed_dir = root / "mixed";
  fs::create_directories(mixed_dir);
  WriteVerdictFile((mixed_dir / "verdict.h5").string(), mixed);
  DrawReproduction(mixed_dir.string());
  EXPECT_TRUE(fs::exists(mixed_dir / "figures" / "reproduction.png"));
  EXPECT_FALSE(fs::exists(mixed_dir / "figures" / "reproduction.log"))
      << testing::Slurp(mixed_dir / "figures" / "reproduction.log");
  fs::remove_all(root);
}

}  // namespace
}  // namespace lexp
