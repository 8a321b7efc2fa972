// Task and seed sweeps inside one recipe: per-seed run files in per-task directories, the summary
// file's protocol scores (mean, spread, max over seeds) and the score-table figure.
#include "experiments/training/sweep.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "experiments/replay/analyze.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/parallel.h"
#include "tests/testing/run_files.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

// The console tables keep their columns whatever the labels' length (a sweep's labels run past
// 12 characters: rope-base500000-seed1): every row as long as the header, its state under
// "state", its cells under theirs.
TEST(SweepTables, KeepTheirColumnsForLongLabels) {
  const RecipeConfig cfg = testing::TinyCopyRecipe();
  std::vector<RunSummary> runs(2);
  runs[0].label = "rope";
  runs[1].label = "rope-base500000-lora-seed1";
  for (RunSummary& r : runs) {
    r.state = "completed";
    for (const int n : cfg.EvalLengths()) {
      EvalRow e;
      e.length = n;
      e.token_accuracy = 0.5;
      e.exact_match = 0.25;
      r.eval.push_back(e);
    }
  }
  const std::string table = SummaryTable(cfg, runs);
  std::vector<std::string> lines;
  for (size_t a = 0, b; (b = table.find('\n', a)) != std::string::npos; a = b + 1)
    lines.push_back(table.substr(a, b - a));
  ASSERT_EQ(lines.size(), 4u) << table;
  const std::string& header = lines[1];
  for (size_t k = 2; k < lines.size(); ++k) {
    EXPECT_EQ(lines[k].size(), header.size()) << table;
    EXPECT_EQ(lines[k].find("completed"), header.find("state")) << table;
  }
}

TEST(Sweep, TasksAndSeedsGiveOneFileEachAndASummaryWithMaxOverSeeds) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"task.names=copy,parity_check", "task.vocab=0", "run.seeds=3,4", "model.encodings=alibi",
       "model.n_layers=1", "train.steps=30", "eval.lengths=2,5,7,9,10,12"});
  ValidateRecipe(c);
  const auto dir = testing::FreshTempDir("sweep");
  SweepOptions so;
  so.out_dir = dir.string();
  const auto runs = RunRecipe(c, so);
  ASSERT_EQ(runs.size(), 4u);
  for (const char* task : {"copy", "parity_check"})
    for (const char* file : {"alibi-seed3.h5", "alibi-seed4.h5"})
      EXPECT_TRUE(std::filesystem::exists(dir / task / file)) << task << "/" << file;
  EXPECT_TRUE(std::filesystem::exists(dir / "copy" / "figures" / "accuracy_vs_length.png"));
  EXPECT_TRUE(std::filesystem::exists(dir / "figures" / "score_table.png"));
  h5::Reader r((dir / "summary.h5").string());
  EXPECT_EQ(r.root().AttrString("tasks"), "copy,parity_check");
  EXPECT_EQ(r.root().AttrString("seeds"), "3,4");
  h5::Group g = r.root().OpenGroup("scores");
  std::vector<uint64_t> dims;
  const auto ruoss = g.ReadDoubles("ruoss", &dims);
  ASSERT_EQ(dims, (std::vector<uint64_t>{2, 1, 2}));
  const auto mx = g.ReadDoubles("ruoss_max"), mean = g.ReadDoubles("ruoss_mean");
  for (int t = 0; t < 2; ++t) {
    EXPECT_DOUBLE_EQ(mx[t], std::max(ruoss[2 * t], ruoss[2 * t + 1]));
    EXPECT_DOUBLE_EQ(mean[t], (ruoss[2 * t] + ruoss[2 * t + 1]) / 2);
  }
  // The Ruoss score is the mean token accuracy over lengths 7, 9, 10, 12 (> N = 5); Kazemnejad's
  // exact match over 7, 9, 10 (N+1..2N).
  const ProtocolScores p = ScoresOf(runs[0], 5);
  double want = 0, exact = 0;
  for (const auto& e : runs[0].eval) {
    if (e.length > 5) want += e.token_accuracy / 4;
    if (e.length > 5 && e.length <= 10) exact += e.exact_match / 3;
  }
  EXPECT_NEAR(p.ruoss, want, 1e-12);
  EXPECT_NEAR(p.kazemnejad_exact, exact, 1e-12);
  EXPECT_NEAR(ruoss[0], want, 1e-12);
  std::filesystem::remove_all(dir);
}

// With one seed there is no spread: the score table's cells and title, and the console table,
// show the score alone; with two, mean ± sd. The colour map is viridis, not a rainbow.
TEST(Sweep, OneSeedShowsNoSpreadAndSeveralShowMeanAndSd) {
  for (const std::string seeds : {"3", "3,4"}) {
    SCOPED_TRACE("seeds " + seeds);
    const RecipeConfig c = testing::TinyCopyRecipe(
        {"task.names=copy,parity_check", "task.vocab=0", "run.seeds=" + seeds,
         "model.encodings=alibi", "model.n_layers=1", "train.steps=10", "eval.lengths=2,7"});
    const auto dir = testing::FreshTempDir("sweep_spread");
    SweepOptions so;
    so.out_dir = dir.string();
    const auto runs = RunRecipe(c, so);
    std::ifstream in(dir / "figures" / "score_table.gp");
    const std::string gp((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string console = SeedSummaryTable(c, runs);
    const std::string rows = console.substr(console.find('\n') + 1);
    const bool one = seeds == "3";
    EXPECT_EQ(gp.find("(one seed, 3)") != std::string::npos, one) << gp;
    EXPECT_EQ(gp.find("±") != std::string::npos, !one) << gp;
    EXPECT_EQ(rows.find("±") != std::string::npos, !one) << console;
    EXPECT_NE(gp.find("#440154"), std::string::npos) << "viridis' first anchor";
    EXPECT_EQ(gp.find("rgb 33,13,10"), std::string::npos) << "the rainbow map";
    std::filesystem::remove_all(dir);
  }
}

TEST(Sweep, RepeatedSeedsOrTasksAreRecipeErrors) {
  EXPECT_THROW(ValidateRecipe(testing::TinyCopyRecipe({"run.seeds=1,1"})), InputError);
  EXPECT_THROW(ValidateRecipe(testing::TinyCopyRecipe({"task.names=copy,copy"})), InputError);
  EXPECT_THROW(
      ValidateRecipe(testing::TinyCopyRecipe({"task.names=copy,no_such_task", "task.vocab=0"})),
      InputError);
}

TEST(Sweep, AKeySweepTrainsOneModelPerValueUnderItsOwnName) {
  // NoPE has no rope option: the sweep leaves it alone, so it is one model (nope-seed<s>.h5), the
  // JS reference of every rope model of its seed.
  const RecipeConfig c =
      testing::TinyCopyRecipe({"model.encodings=nope,rope", "run.sweep=encoding_options.rope.base",
                               "run.sweep_values=100,10000", "run.seeds=1,2", "model.n_layers=1",
                               "train.steps=10", "eval.lengths=2,7"});
  ValidateRecipe(c);
  EXPECT_EQ(c.ModelLabels(), (std::vector<std::string>{"nope", "rope-base100", "rope-base10000"}));
  const auto dir = testing::FreshTempDir("key_sweep");
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  const auto runs = RunRecipe(c, so);
  ASSERT_EQ(runs.size(), 6u);
  for (const char* seed : {"1", "2"})
    for (const char* base : {"100", "10000"}) {
      const auto path = dir / fmt::format("rope-base{}-seed{}.h5", base, seed);
      ASSERT_TRUE(std::filesystem::exists(path)) << path;
      h5::Reader r(path.string());
      EXPECT_EQ(r.root().OpenGroup("config").AttrString("encoding_option.base"), base);
      EXPECT_EQ(r.root().OpenGroup("analysis").OpenGroup("geometry").AttrString("reference"),
                (dir / fmt::format("nope-seed{}.h5", seed)).string())
          << "the NoPE run of the same seed";
      EXPECT_EQ(r.root().AttrString("sweep"), "encoding_options.rope.base");
    }
  EXPECT_FALSE(std::filesystem::exists(dir / "nope-base100-seed1.h5"));
  h5::Reader s((dir / "summary.h5").string());
  EXPECT_EQ(s.root().AttrString("encodings"), "nope,rope-base100,rope-base10000");
  EXPECT_EQ(s.root().AttrString("sweep"), "encoding_options.rope.base");
  std::filesystem::remove_all(dir);
}

// A key every encoding reads (model.*, train.*) changes every model: each is trained per value.
TEST(Sweep, AModelKeySweepTrainsEveryEncodingPerValue) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"model.encodings=nope,rope", "run.sweep=model.n_layers", "run.sweep_values=1,2"});
  EXPECT_EQ(c.ModelLabels(), (std::vector<std::string>{"nope-n_layers1", "rope-n_layers1",
                                                       "nope-n_layers2", "rope-n_layers2"}));
  EXPECT_TRUE(c.SweepChanges("nope"));
}

// The JS reference of a swept run: the NoPE run of the same sweep point, and the NoPE run without
// the sweep part only when the swept key leaves NoPE alone (never a NoPE of another setting).
TEST(Sweep, TheReferenceOfASweptRunIsANopeRunOfTheSameSetting) {
  auto file = [](const std::string& name) {
    return (std::filesystem::path("out") / (name + ".h5")).string();
  };
  EXPECT_EQ(ReferenceCandidates(file("rope-base500-seed2"), "rope", "rope-base500-seed2",
                                "encoding_options.rope.base"),
            (std::vector<std::string>{file("nope-base500-seed2"), file("nope-seed2")}));
  EXPECT_EQ(ReferenceCandidates(file("rope-lr0.002"), "rope", "rope-lr0.002", "train.lr"),
            (std::vector<std::string>{file("nope-lr0.002")}));
  EXPECT_EQ(ReferenceCandidates(file("rope-seed3"), "rope", "rope-seed3", ""),
            (std::vector<std::string>{file("nope-seed3")}));
  EXPECT_TRUE(ReferenceCandidates(file("nope-seed3"), "nope", "nope-seed3", "").empty());
  // An evaluation of a trained run (lexp eval: <label>+<rule>) is read against the trained NoPE
  // beside it, not a NoPE evaluated under the same rule.
  EXPECT_EQ(ReferenceCandidates(file("rope+yarnx4"), "rope", "rope+yarnx4", ""),
            (std::vector<std::string>{file("nope")}));
  EXPECT_EQ(ReferenceCandidates(file("rope-seed3+eval-flip_flop_sparse"), "rope",
                                "rope-seed3+eval-flip_flop_sparse", ""),
            (std::vector<std::string>{file("nope-seed3")}));
}

TEST(Sweep, ASingleEncodingKeySweepWritesOneFilePerValue) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"model.encodings=rope", "run.sweep=encoding_options.rope.base", "run.sweep_values=100,10000",
       "model.n_layers=1", "train.steps=10", "eval.lengths=2,7"});
  ValidateRecipe(c);
  const auto dir = testing::FreshTempDir("key_sweep_one");
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  const auto runs = RunRecipe(c, so);
  ASSERT_EQ(runs.size(), 2u);
  for (const char* base : {"100", "10000"}) {
    const auto path = dir / (std::string("rope-base") + base + ".h5");
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    h5::Reader r(path.string());
    EXPECT_EQ(r.root().OpenGroup("config").AttrString("encoding_option.base"), base);
  }
  h5::Reader s((dir / "summary.h5").string());
  EXPECT_EQ(s.root().AttrString("encodings"), "rope-base100,rope-base10000");
  EXPECT_EQ(s.root().AttrString("sweep"), "encoding_options.rope.base");
  std::filesystem::remove_all(dir);
}

// run.variants: one model per (encoding, named variant), each with all of its overrides (LoRA with
// its targets beside a plain and a learning-rate variant), files and labels named after it.
TEST(Sweep, NamedVariantsTrainOneModelPerVariantWithAllItsOverrides) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"model.encodings=nope,rope", "model.n_layers=1", "train.steps=10", "eval.lengths=2,7",
       R"(run.variants=["plain", "slow: train.lr=1e-3", )"
       R"("lora: train.lora_rank=2; train.lora_targets=[\"q\", \"o\"]"])"});
  ValidateRecipe(c);
  EXPECT_EQ(c.SweepKey(), "run.variants");
  const auto variants = c.Variants();
  ASSERT_EQ(variants.size(), 3u);
  EXPECT_EQ(variants[2].value, "lora");
  EXPECT_EQ(variants[2].sets,
            (std::vector<std::string>{"train.lora_rank=2", R"(train.lora_targets=["q", "o"])"}));
  const auto dir = testing::FreshTempDir("named_variants");
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  ASSERT_EQ(RunRecipe(c, so).size(), 6u);
  for (const char* enc : {"nope", "rope"}) {
    h5::Reader plain((dir / (std::string(enc) + "-plain.h5")).string());
    h5::Reader slow((dir / (std::string(enc) + "-slow.h5")).string());
    h5::Reader lora((dir / (std::string(enc) + "-lora.h5")).string());
    EXPECT_EQ(plain.root().OpenGroup("config").AttrString("train.lr"), "0.003");
    EXPECT_EQ(slow.root().OpenGroup("config").AttrString("train.lr"), "0.001");
    EXPECT_EQ(lora.root().OpenGroup("config").AttrString("train.lora_targets"), R"(["q", "o"])");
    EXPECT_EQ(plain.root().AttrString("sweep"), "run.variants");
    EXPECT_EQ(plain.root().AttrInt("trainable_parameters"),
              plain.root().AttrInt("total_parameters"));
    EXPECT_LT(lora.root().AttrInt("trainable_parameters"),
              plain.root().AttrInt("total_parameters"));
  }
  h5::Reader s((dir / "summary.h5").string());
  EXPECT_EQ(s.root().AttrString("encodings"),
            "nope-plain,rope-plain,nope-slow,rope-slow,nope-lora,rope-lora");
  EXPECT_EQ(s.root().AttrString("sweep"), "run.variants");
  std::filesystem::remove_all(dir);
}

TEST(Sweep, NamedVariantErrorsNameTheVariant) {
  const auto error_of = testing::TinyRecipeError;
  EXPECT_NE(error_of({R"(run.variants=["a: train.lora_rank=-1"])"}).find("variant 'a'"),
            std::string::npos);
  EXPECT_NE(error_of({R"(run.variants=["a", "a"])"}).find("names 'a' twice"), std::string::npos);
  EXPECT_NE(error_of({R"(run.variants=["a/b"])"}).find("variant name 'a/b'"), std::string::npos);
  EXPECT_NE(error_of({R"(run.variants=["a: run.seed=3"])"}).find("run.* keys"), std::string::npos);
  EXPECT_NE(error_of({R"(run.variants=["a"])", "run.sweep=train.lr", "run.sweep_values=1e-3"})
                .find("exclude each other"),
            std::string::npos);
}

TEST(Sweep, KeySweepErrorsNameTheKey) {
  const auto error_of = testing::TinyRecipeError;
  EXPECT_NE(error_of({"run.sweep=model.no_such_key", "run.sweep_values=1"}).find("no_such_key"),
            std::string::npos);
  EXPECT_NE(error_of({"run.sweep=run.seed", "run.sweep_values=1,2"}).find("run.seeds"),
            std::string::npos);
  EXPECT_NE(error_of({"run.sweep=model.n_layers"}).find("go together"), std::string::npos);
  EXPECT_NE(error_of({"run.sweep=model.n_layers", "run.sweep_values=1,1"}).find("twice"),
            std::string::npos);
  EXPECT_NE(error_of({"run.sweep=model.n_layers", "run.sweep_values=0"}).find("model.n_layers"),
            std::string::npos);
}

// run.jobs = 2 trains two models at once, each in a one-thread arena: every run file is bit for bit
// the one a sequential sweep writes (four models, two seeds; rope is listed before nope, and both
// ways the NoPE runs finish first, so rope's analysis has its JS reference).
TEST(Sweep, JobsRunModelsAtOnceAndWriteTheFilesOfASequentialSweep) {
  ThreadLimit two(2);
  const RecipeConfig base = testing::TinyCopyRecipe(
      {"model.encodings=rope,nope", "run.seeds=1,2", "train.steps=20", "probe.replay=0"});
  std::vector<std::filesystem::path> dirs;
  std::vector<std::string> lines;
  std::mutex mu;
  for (const int jobs : {1, 2}) {
    RecipeConfig c = base;
    c.jobs = jobs;
    dirs.push_back(testing::FreshTempDir(fmt::format("jobs{}", jobs)));
    SweepOptions so;
    so.out_dir = dirs.back().string();
    so.figures = false;
    so.progress = [&](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(line);
    };
    const auto runs = RunRecipe(c, so);
    ASSERT_EQ(runs.size(), 4u);
    for (const auto& r : runs) EXPECT_EQ(r.state, "completed") << r.label;
    EXPECT_EQ(runs[0].label, "nope") << "NoPE first";
  }
  for (const char* f : {"nope-seed1.h5", "rope-seed1.h5", "nope-seed2.h5", "rope-seed2.h5"})
    EXPECT_GT(testing::ExpectSameRunFiles((dirs[0] / f).string(), (dirs[1] / f).string()), 20) << f;
  h5::Reader r((dirs[1] / "rope-seed2.h5").string());
  EXPECT_TRUE(r.root().OpenGroup("analysis").OpenGroup("geometry").HasAttr("reference"));
  // Every model reported its evaluation, under its own prefix.
  for (const char* label : {"[nope seed 1", "[rope seed 1", "[nope seed 2", "[rope seed 2"})
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [&](const std::string& l) {
                              return l.rfind(label, 0) == 0 &&
                                     l.find("evaluated") != std::string::npos;
                            }),
              2)
        << label << ": once per sweep";
  for (const auto& d : dirs) std::filesystem::remove_all(d);
}

// run.jobs = 0 (the default) packs one model per thread; never more models than the sweep has,
// and an explicit run.jobs is kept.
TEST(Sweep, DefaultJobsPackOneModelPerThread) {
  RecipeConfig c = testing::TinyCopyRecipe({});
  EXPECT_EQ(RecipeConfig{}.jobs, 0) << "the default is auto";
  c.jobs = 0;
  {
    ThreadLimit two(2);
    EXPECT_EQ(SweepJobs(c, 4), 2);
    EXPECT_EQ(SweepJobs(c, 1), 1);
  }
  {
    ThreadLimit one(1);
    EXPECT_EQ(SweepJobs(c, 4), 1);
  }
  c.jobs = 3;
  ThreadLimit two(2);
  EXPECT_EQ(SweepJobs(c, 4), 3);
  EXPECT_EQ(SweepJobs(c, 2), 2);
}

// Three models, two at once: the first two train together, the third alone on both threads; the
// files are those of a sequential sweep.
TEST(Sweep, AnUnevenSweepRunsItsLastModelOnAllThreadsWithTheSameFiles) {
  ThreadLimit two(2);
  const RecipeConfig base = testing::TinyCopyRecipe(
      {"model.encodings=nope,rope,alibi", "train.steps=10", "probe.replay=0"});
  std::vector<std::filesystem::path> dirs;
  for (const int jobs : {1, 2}) {
    RecipeConfig c = base;
    c.jobs = jobs;
    dirs.push_back(testing::FreshTempDir(fmt::format("uneven{}", jobs)));
    SweepOptions so;
    so.out_dir = dirs.back().string();
    so.figures = false;
    const auto runs = RunRecipe(c, so);
    ASSERT_EQ(runs.size(), 3u);
    for (const auto& r : runs) EXPECT_EQ(r.state, "completed") << r.label;
  }
  for (const char* f : {"nope.h5", "rope.h5", "alibi.h5"})
    EXPECT_GT(testing::ExpectSameRunFiles((dirs[0] / f).string(), (dirs[1] / f).string()), 20) << f;
  for (const auto& d : dirs) std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace lexp
