// lexp reproduce across stages: fine-tunings of each seed's own pre-training, paired variants,
// refused and diverged pre-trainings, and a trend judged again at several numbers of steps.
#include <gtest/gtest.h>

#include "tests/experiments/reproduce_fixtures.h"

namespace lexp {
namespace {

using namespace reproduce_testing;

// A claim that fine-tunes gives each seed its own pre-training ({seed} in init_from): the seeds'
// spread then includes the pre-training's, and two fine-tunings of one seed share it, so their
// comparison is paired.
TEST(Reproduce, EachSeedFineTunesItsOwnPreTrainingAndTheVariantsArePaired) {
  const fs::path root = testing::FreshTempDir("reproduce_seed_init");
  const Claim c = ParseClaim(ClaimHead("X9", "seeded") + R"([[stage]]
name = "pretrain"
recipe = "default"
set = ["model.encodings=[\"rope\"]", "train.steps=12", "eval.lengths=[2, 4, 6]",
       "run.seeds=[1, 2, 3]", )" + kTinyModel + R"(]
[[stage]]
name = "finetune"
recipe = "default"
init_from = "pretrain/rope-seed{seed}.h5"
set = ["model.encodings=[\"rope\"]", "train.steps=6", "eval.lengths=[2, 4, 6]",
       "run.seeds=[1, 2, 3]", "run.variants=[\"slow: train.lr=0.0001\", \"fast\"]",
       )" + kTinyModel + R"(]
[criterion]
metric = "loss"
lengths = [6, 6]
holds = ["rope-fast < rope-slow"]
)",
                             "seeded_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  opt.budget = "full";  // the smoke budget keeps 2 seeds and 30 steps
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  const fs::path runs = root / "full" / "X9_seeded" / "runs";
  for (int seed = 1; seed <= 3; ++seed)
    for (const char* variant : {"slow", "fast"}) {
      h5::Reader r((runs / "finetune" / fmt::format("rope-{}-seed{}.h5", variant, seed)).string());
      EXPECT_EQ(fs::path(r.root().AttrString("init_from")).filename().string(),
                fmt::format("rope-seed{}.h5", seed));
    }
  ASSERT_EQ(rec.verdict.comparisons.size(), 1u);
  EXPECT_EQ(rec.verdict.comparisons[0].test, "paired t");
  EXPECT_EQ(rec.verdict.comparisons[0].paired_seeds, 3);
  fs::remove_all(root);
}

// The verdict rule behind that test: a claim that fine-tunes several seeds from one pre-training
// (no {seed} in init_from) would give intervals without the pre-training's spread; it is refused
// before anything trains, naming the fix.
TEST(Reproduce, SeveralSeedsFineTunedFromOnePreTrainingAreRefused) {
  const fs::path root = testing::FreshTempDir("reproduce_one_pretraining");
  const Claim c = ParseClaim(ClaimHead("X9", "shared") + R"([[stage]]
name = "pretrain"
recipe = "default"
set = ["model.encodings=[\"rope\"]", "train.steps=12", "eval.lengths=[2, 4, 6]",
       )" + kTinyModel + R"(]
[[stage]]
name = "finetune"
recipe = "default"
init_from = "pretrain/rope.h5"
set = ["model.encodings=[\"rope\"]", "train.steps=6", "eval.lengths=[2, 4, 6]",
       "run.seeds=[1, 2, 3]", )" + kTinyModel + R"(]
[criterion]
metric = "loss"
lengths = [6, 6]
holds = ["rope < 9"]
)",
                             "shared_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  opt.budget = "full";  // the smoke budget keeps 2 seeds and 30 steps
  try {
    ReproduceClaim(c, opt);
    ADD_FAILURE() << "three fine-tuning seeds from one pre-training were accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("starts all 3 seeds from one pre-training"), std::string::npos) << what;
    EXPECT_NE(what.find("{seed}"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(root / "full" / "X9_shared" / "runs" / "pretrain" / "rope.h5"));
  fs::remove_all(root);
}

// A claim with a trend is judged again at each number of steps of its trend stage, each in its
// own directory; the verdict file keeps every point in order of steps, the budget's own among
// them; the table gives the verdict at each and links the figure against steps.
TEST(Reproduce, ATrendJudgesTheClaimAgainAtEachNumberOfSteps) {
  const fs::path root = testing::FreshTempDir("reproduce_trend");
  const Claim c = ParseClaim(ClaimHead("P9", "trend") + R"([[stage]]
name = "train"
recipe = "default"
set = ["model.encodings=[\"nope\", \"rope\"]", "train.steps=12", "eval.lengths=[2, 4, 6]",
       )" + kTinyModel + R"(]
[criterion]
metric = "token_accuracy"
lengths = [6, 6]
holds = ["nope > rope"]
[trend]
stage = "train"
smoke = [24, 6, 12]
)",
                             "trend_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  const fs::path dir = root / "smoke" / "P9_trend";
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  EXPECT_TRUE(fs::exists(dir / "runs" / "train" / "rope.h5"));
  EXPECT_TRUE(fs::exists(dir / "steps6" / "runs" / "train" / "rope.h5"));
  EXPECT_TRUE(fs::exists(dir / "steps24" / "runs" / "train" / "nope.h5"));
  EXPECT_FALSE(fs::exists(dir / "steps12")) << "12 is the budget's own point";
  {
    h5::Reader r((dir / "steps24" / "runs" / "train" / "rope.h5").string());
    EXPECT_EQ(r.root().OpenGroup("train").ReadDoubles("loss").size(), 24u);
  }
  EXPECT_EQ(rec.trend_stage, "train");
  ASSERT_EQ(rec.trend.size(), 3u);
  EXPECT_EQ(rec.trend[0].steps, 6);
  EXPECT_EQ(rec.trend[1].steps, 12);
  EXPECT_EQ(rec.trend[2].steps, 24);
  EXPECT_TRUE(rec.trend[1].budget);
  EXPECT_FALSE(rec.trend[0].budget);
  EXPECT_EQ(rec.trend[1].verdict.verdict, rec.verdict.verdict);
  ASSERT_EQ(rec.trend[1].verdict.groups.size(), 2u);
  EXPECT_EQ(rec.trend[1].verdict.groups[1].score, rec.verdict.groups[1].score);
  EXPECT_TRUE(fs::exists(dir / "figures" / "reproduction_steps.png"));
  EXPECT_FALSE(fs::exists(dir / "figures" / "reproduction_steps.log"));
  std::ifstream in(WriteGalleryTable((root / "smoke").string()));
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("with steps: 6 steps: "), std::string::npos) << text;
  EXPECT_NE(text.find("12 steps (this budget): "), std::string::npos) << text;
  EXPECT_NE(text.find("[against steps](P9_trend/figures/reproduction_steps.png)"),
            std::string::npos)
      << text;
  fs::remove_all(root);
}

// A pre-training that diverges leaves its fine-tuning untested: the verdict says so and why,
// and nothing is thrown (the rest of a gallery goes on).
TEST(Reproduce, AFineTuningFromADivergedRunIsNotTestable) {
  const fs::path root = testing::FreshTempDir("reproduce_diverged");
  const std::string tiny =
      "\"model.d_model=16\", \"model.n_heads=2\", \"model.n_layers=1\", \"train.batch_size=8\", "
      "\"train.max_length=4\", \"eval.lengths=[2, 4]\", \"eval.samples=8\", "
      "\"probe.lengths=[4]\", \"probe.samples=2\", \"probe.replay=0\", "
      "\"model.encodings=[\\\"rope\\\"]\"";
  const Claim c = ParseClaim(
      "[claim]\nid = \"P9\"\nname = \"diverged\"\nstatement = \"s\"\nsource = \"src\"\n"
      "published = \"p\"\nprotocol = \"pr\"\n"
      "[[stage]]\nname = \"pretrain\"\nrecipe = \"default\"\nset = [" +
          tiny +
          ", \"train.steps=20\", \"train.lr=10\", \"train.weight_decay=10\", "
          "\"train.warmup_steps=1\"]\n"
          "[[stage]]\nname = \"finetune\"\nrecipe = \"default\"\ninit_from = \"pretrain/rope.h5\"\n"
          "set = [" +
          tiny +
          ", \"train.steps=5\"]\n"
          "[criterion]\nmetric = \"loss\"\nlengths = [4, 4]\nholds = [\"rope < 1\"]\n",
      "diverged_claim.toml");
  ReproduceOptions opt;
  opt.out_root = root.string();
  opt.figures = false;
  const VerdictRecord rec = ReadVerdictFile(ReproduceClaim(c, opt));
  EXPECT_EQ(rec.verdict.verdict, "not testable");
  EXPECT_NE(rec.verdict.reason.find("starts from 'pretrain/rope.h5', which did not complete"),
            std::string::npos)
      << rec.verdict.reason;
  fs::remove_all(root);
}

}  // namespace
}  // namespace lexp
