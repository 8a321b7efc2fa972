// `lexp eval`: trained weights survive the run file, and scaling rules apply at evaluation time.
#include "experiments/training/eval_command.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include "experiments/core/recipe.h"
#include "experiments/core/run_file.h"
#include "experiments/replay/model_replay.h"
#include "experiments/training/trainer.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "pe/forwarding_encoding.h"
#include "pe/rope.h"
#include "experiments/replay/entropy_variants.h"
#include "tests/testing/lexp_process.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

TEST(EvalCommand, ParsesScaleSpecs) {
  const ScaleSpec s = ParseScaleSpec("yarn:factor=4,beta_fast=16");
  EXPECT_EQ(s.rule, "yarn");
  EXPECT_EQ(s.options.at("factor"), "4");
  EXPECT_EQ(s.options.at("beta_fast"), "16");
  EXPECT_EQ(ParseScaleSpec("dynamic_ntk").options.size(), 0u);
  EXPECT_THROW(ParseScaleSpec("yarm:factor=4"), InputError);
  EXPECT_THROW(ParseScaleSpec("yarn:factor"), InputError);
}

// An evaluation's name carries what changes its file: the rule with its options, the model and
// encoding overrides, and the captured sites (a glob's * as "any"); evaluation settings do not.
TEST(EvalCommand, TheOutputNameSaysTheRuleTheOverridesAndTheCapturedSites) {
  EXPECT_EQ(EvaluationNameSuffix("yarn:factor=4,beta_fast=16", {}), "+yarnx4-beta_fast16");
  EXPECT_EQ(EvaluationNameSuffix("", {"model.pattern=lambda", "eval.max_factor=16"}),
            "+eval-patternlambda");
  EXPECT_EQ(EvaluationNameSuffix("", {"probe.capture=[\"layer*.attn.q\",\"layer1.resid_post\"]"}),
            "+eval-capture-layerany.attn.q-layer1.resid_post");
  EXPECT_EQ(EvaluationNameSuffix("", {"probe.capture=[\"layer0.attn.pattern\"]"}),
            "+eval-capture-layer0.attn.pattern");
  EXPECT_NE(EvaluationNameSuffix("", {"probe.capture=[\"layer0.attn.q\"]"}),
            EvaluationNameSuffix("", {"probe.capture=[\"layer0.attn.k\"]"}));
}

// Position ids divided by 4, the definition of PI's factor 4 written outside pe/rope_scaling.cc.
class QuarterPositions final : public ForwardingEncoding<float> {
 public:
  explicit QuarterPositions(std::unique_ptr<PositionEncoding<float>> inner)
      : ForwardingEncoding<float>(std::move(inner)) {}
  void PositionIds(int T, bool training, Rng& rng, std::vector<double>& pos) const override {
    ForwardingEncoding<float>::PositionIds(T, training, rng, pos);
    for (double& p : pos) p /= 4;
  }
};

class EvalCommandRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTempDir("evalcmd");
    const RecipeConfig c =
        testing::TinyCopyRecipe({"model.n_layers=1", "model.encodings=rope,alibi",
                                 "eval.lengths=3,5,10,20", "probe.lengths=5,20"});
    RunOptions o;
    o.out_dir = dir_.string();
    ASSERT_EQ(TrainAndEvaluate(c, "rope", o).state, "completed");
    ASSERT_EQ(TrainAndEvaluate(c, "alibi", o).state, "completed");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(EvalCommandRun, OverridesNameTheOutput) {
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir_.string(), "rope");
  o.sets = {"model.pattern=sliding_window", "model.pattern_window=4"};
  const RunSummary s = EvaluateRunFile(o);
  ASSERT_EQ(s.state, "completed");
  EXPECT_EQ(s.path, RunFilePath(dir_.string(), "rope+eval-patternsliding_window-pattern_window4"));
}

TEST_F(EvalCommandRun, ReEvaluationWithoutARuleReproducesTheRun) {
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir_.string(), "rope");
  const RunSummary s = EvaluateRunFile(o);
  ASSERT_EQ(s.state, "completed");
  EXPECT_EQ(s.path, RunFilePath(dir_.string(), "rope+eval"));
  h5::Reader a(o.run_file), b(s.path);
  for (const char* d : {"loss", "token_accuracy", "exact_match"})
    EXPECT_EQ(a.root().OpenGroup("eval").ReadDoubles(d), b.root().OpenGroup("eval").ReadDoubles(d))
        << d;
  EXPECT_EQ(a.root().OpenGroup("analysis").ReadDoubles("entropy"),
            b.root().OpenGroup("analysis").ReadDoubles("entropy"));
  EXPECT_EQ(b.root().AttrString("label"), "rope+eval");
  EXPECT_EQ(b.root().AttrString("weights_from"), o.run_file);
}

TEST_F(EvalCommandRun, ScalingRuleChangesOnlyTheEvaluation) {
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir_.string(), "rope");
  o.scale = "pi:factor=4";
  o.sets = {"eval.lengths=5,20"};
  const RunSummary s = EvaluateRunFile(o);
  ASSERT_EQ(s.state, "completed");
  EXPECT_EQ(s.path, RunFilePath(dir_.string(), "rope+pix4"));
  h5::Reader b(s.path);
  EXPECT_EQ(b.root().OpenGroup("config").AttrString("encoding_option.scaling"), "pi");
  EXPECT_EQ(b.root().OpenGroup("config").AttrString("encoding_option.factor"), "4");
  EXPECT_EQ(b.root().OpenGroup("eval").ReadDoubles("loss").size(), 2u);
  // PI with factor 4 is RoPE at positions p / 4 (Chen et al. 2023 (PI)): the expected losses come
  // from the run's own weights replayed with every position id divided by 4 and no scaling rule, on
  // the same evaluation streams. They must also differ from the unscaled losses at the same
  // lengths.
  const auto scaled = b.root().OpenGroup("eval").ReadDoubles("loss");
  ModelReplay plain(o.run_file);
  ModelReplay quartered(o.run_file, {}, [](std::unique_ptr<PositionEncoding<float>> inner) {
    return std::make_unique<QuarterPositions>(std::move(inner));
  });
  const int lengths[2] = {5, 20};
  for (int e = 0; e < 2; ++e) {
    EXPECT_NEAR(scaled[e], quartered.EvalLoss(lengths[e]), 1e-5 * scaled[e])
        << "n = " << lengths[e];
    EXPECT_GT(std::abs(scaled[e] - plain.EvalLoss(lengths[e])), 1e-4)
        << "positions divided by 4 change the logits at n = " << lengths[e];
  }
  EXPECT_TRUE(b.root().OpenGroup("train").ReadDoubles("loss").empty()) << "nothing was trained";
}

// long_factors = "search": LongRoPE's evolution on the run's own weights; the evaluation is the run
// under the factors and n-hat it found (its recipe holds them), the same as an evaluation given
// those factors outright.
TEST_F(EvalCommandRun, LongropeSearchEvaluatesWithTheFactorsItFound) {
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir_.string(), "rope");
  o.name = "searched";
  o.sets = {"encoding_options.rope.scaling=\"longrope\"", "encoding_options.rope.factor=2",
            "encoding_options.rope.long_factors=\"search:iterations=3,population=8,samples=8\"",
            "eval.lengths=5,20"};
  std::vector<std::string> said;
  o.progress = [&](const std::string& line) { said.push_back(line); };
  const RunSummary s = EvaluateRunFile(o);
  ASSERT_EQ(s.state, "completed");
  h5::Reader b(s.path);
  const h5::Group cfg = b.root().OpenGroup("config");
  const std::string factors = cfg.AttrString("encoding_option.long_factors");
  const std::string start = cfg.AttrString("encoding_option.start_tokens");
  std::vector<double> f;
  for (size_t at = 0; at < factors.size();) {
    size_t used = 0;
    f.push_back(std::stod(factors.substr(at), &used));
    at += used;
    while (at < factors.size() && (factors[at] == ',' || factors[at] == ' ')) ++at;
  }
  ModelReplay plain(o.run_file);
  const auto* rope = dynamic_cast<const Rope<float>*>(&plain.encoding());
  ASSERT_NE(rope, nullptr);
  ASSERT_EQ(f.size(), static_cast<size_t>(rope->rotary_dims() / 2)) << factors;
  EXPECT_TRUE(std::is_sorted(f.begin(), f.end())) << factors;
  EXPECT_LE(f.back(), 2.5);
  bool reported = false;
  for (const auto& line : said)
    reported = reported || line.find("LongRoPE search: best loss") != std::string::npos;
  EXPECT_TRUE(reported);

  EvalCommandOptions given = o;
  given.name = "given";
  given.progress = nullptr;
  given.sets = {"encoding_options.rope.scaling=\"longrope\"", "encoding_options.rope.factor=2",
                "encoding_options.rope.long_factors=\"" + factors + "\"",
                "encoding_options.rope.start_tokens=" + start, "eval.lengths=5,20"};
  const RunSummary g = EvaluateRunFile(given);
  ASSERT_EQ(g.state, "completed");
  h5::Reader c(g.path);
  EXPECT_EQ(b.root().OpenGroup("eval").ReadDoubles("loss"),
            c.root().OpenGroup("eval").ReadDoubles("loss"));
  // The factors are what the evaluation used: other factors give other losses.
  EvalCommandOptions other = given;
  other.name = "other";
  std::string uniform;
  for (size_t k = 0; k < f.size(); ++k) uniform += k ? ", 1.50" : "1.50";
  ASSERT_NE(uniform, factors);
  other.sets[2] = "encoding_options.rope.long_factors=\"" + uniform + "\"";
  const RunSummary o2 = EvaluateRunFile(other);
  ASSERT_EQ(o2.state, "completed");
  h5::Reader d(o2.path);
  EXPECT_NE(b.root().OpenGroup("eval").ReadDoubles("loss"),
            d.root().OpenGroup("eval").ReadDoubles("loss"));
}

// Under a pattern that remaps distances (which refuses n-hat > 0) the search keeps n-hat at 0
// instead of failing on the first candidate that draws one.
TEST_F(EvalCommandRun, LongropeSearchUnderARemappingPatternKeepsNHatZero) {
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir_.string(), "rope");
  o.name = "searched_self_extend";
  o.sets = {"encoding_options.rope.scaling=\"longrope\"", "encoding_options.rope.factor=2",
            "encoding_options.rope.long_factors=\"search:iterations=4,population=8,samples=8\"",
            "model.pattern=\"self_extend\"", "model.pattern_group=2", "model.pattern_window=4",
            "eval.lengths=5,20"};
  const RunSummary s = EvaluateRunFile(o);
  ASSERT_EQ(s.state, "completed");
  h5::Reader b(s.path);
  EXPECT_EQ(b.root().OpenGroup("config").AttrString("encoding_option.start_tokens"), "0");
}

// Evaluations are named after the run they read (not its encoding alone), never replace an earlier
// one without --force, and record the absolute path of the weights they used.
TEST_F(EvalCommandRun, OutputsKeepTheSourceNameAndAreNotReplacedWithoutForce) {
  fs::copy_file(RunFilePath(dir_.string(), "rope"), RunFilePath(dir_.string(), "rope-base500"));
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir_.string(), "rope-base500");
  o.scale = "pi:factor=2";
  // The copy keeps its recorded label ("rope"): rename it as a sweep would have named it.
  {
    h5::Writer w(o.run_file, h5::Writer::Mode::kUpdate);
    w.root().SetAttr("label", "rope-base500");
    w.Commit();
  }
  const RunSummary s = EvaluateRunFile(o);
  EXPECT_EQ(s.path, RunFilePath(dir_.string(), "rope-base500+pix2"));
  const auto written = fs::last_write_time(s.path);
  try {
    EvaluateRunFile(o);
    ADD_FAILURE() << "an earlier evaluation was replaced without --force";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fs::last_write_time(s.path), written);
  o.force = true;
  EXPECT_EQ(EvaluateRunFile(o).state, "completed");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  EvalCommandOptions rel;
  rel.run_file = "rope.h5";
  rel.force = true;
  const RunSummary r = EvaluateRunFile(rel);
  fs::current_path(cwd);
  ASSERT_EQ(r.state, "completed");
  h5::Reader b((dir_ / "rope+eval.h5").string());
  EXPECT_EQ(b.root().AttrString("weights_from"), RunFilePath(dir_.string(), "rope"))
      << "absolute, whatever the working directory";
  try {
    ParseScaleSpec("log_n");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("encoding_options.rope.log_n"), std::string::npos);
  }
}

// An evaluation killed after its file was written and before its analysis ended (D3) leaves the
// file "analyzing": the next lexp eval of the same weights finishes it (as lexp run --resume
// does) instead of refusing it as an earlier evaluation; one of other weights is still refused.
TEST_F(EvalCommandRun, AnEvaluationKilledBeforeItsAnalysisIsFinishedByTheNextOne) {
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir_.string(), "rope");
  o.scale = "ntk:factor=2";
  const RunSummary s = EvaluateRunFile(o);
  ASSERT_EQ(s.state, "completed");
  {  // The file as a kill before the analysis leaves it.
    h5::Writer w(s.path, h5::Writer::Mode::kUpdate);
    w.root().Remove("analysis");
    w.root().OpenGroup("status").SetAttr("state", "analyzing");
    w.Commit();
  }
  const RunSummary again = EvaluateRunFile(o);
  EXPECT_EQ(again.state, "completed");
  EXPECT_EQ(again.path, s.path);
  {
    h5::Reader r(s.path);
    EXPECT_EQ(r.root().OpenGroup("status").AttrString("state"), "completed");
    EXPECT_TRUE(r.root().OpenGroup("analysis").Has("geometry"));
  }
  {  // An interrupted scored evaluation is not finished by a capture-only one of the same name
     // (given with --name: the captured sites name an evaluation's file otherwise).
    h5::Writer w(s.path, h5::Writer::Mode::kUpdate);
    w.root().OpenGroup("status").SetAttr("state", "analyzing");
    w.Commit();
    EvalCommandOptions cap = o;
    cap.sets = {"probe.capture=[\"layer0.attn.q\"]", "probe.analyses=[\"none\"]"};
    cap.capture_only = true;
    cap.name = "ntkx2";
    try {
      EvaluateRunFile(cap);
      ADD_FAILURE() << "a capture-only request finished a scored evaluation";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("interrupted scored evaluation"), std::string::npos)
          << e.what();
    }
  }
  {  // Another evaluation's interrupted file under this name is not this one's to finish.
    h5::Writer w(s.path, h5::Writer::Mode::kUpdate);
    w.root().OpenGroup("status").SetAttr("state", "analyzing");
    w.root().SetAttr("weights_from", "/elsewhere/rope.h5");
    w.Commit();
  }
  EXPECT_THROW(EvaluateRunFile(o), InputError);
}

// Several rules side by side: one file each, and a table of entropy and max logit by probe length.
TEST_F(EvalCommandRun, SeveralRulesCompareInOneTable) {
  std::vector<std::string> files;
  for (const char* rule : {"pi:factor=2", "yarn:factor=2"}) {
    EvalCommandOptions o;
    o.run_file = RunFilePath(dir_.string(), "rope");
    o.scale = rule;
    files.push_back(EvaluateRunFile(o).path);
  }
  const std::string table = ScaleComparisonTable(files);
  EXPECT_NE(table.find("rope+pix2"), std::string::npos) << table;
  EXPECT_NE(table.find("rope+yarnx2"), std::string::npos) << table;
  EXPECT_NE(table.find("n=20"), std::string::npos) << table;
  h5::Reader r(files[1]);
  const auto ent = r.root().OpenGroup("analysis").ReadDoubles("entropy_mean");
  EXPECT_NE(table.find(fmt::format("{:.3f} /", ent.back())), std::string::npos)
      << "the table shows the file's own numbers:\n"
      << table;
}

// `--scale none` of a run trained without a rule is the run itself: no copy is evaluated, and the
// comparison table reads the run's own file beside the rule's; with another option it is evaluated.
TEST_F(EvalCommandRun, ScaleNoneOfAnUnscaledRunIsTheRunItself) {
  const std::string rope = RunFilePath(dir_.string(), "rope");
  testing::LexpResult r = testing::RunLexp(
      dir_, {"eval", rope, "--scale", "none", "--scale", "pi:factor=2", "--no-figures"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("--scale none: " + rope + " itself"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(RunFilePath(dir_.string(), "rope+none")));
  EXPECT_TRUE(fs::exists(RunFilePath(dir_.string(), "rope+pix2")));
  const size_t table = r.out.find("attention entropy (nats) / max logit by probe length");
  ASSERT_NE(table, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nrope ", table), std::string::npos) << "the run's own row:\n" << r.out;
  r = testing::RunLexp(dir_, {"eval", rope, "--scale", "none", "--analyses", "geometry",
                              "--no-figures"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(RunFilePath(dir_.string(), "rope+none")));
}

// The entropy variants of an evaluation under a rule replay with that rule, and say so: the
// group's run_rule and each variant's description; the trained run's own say none.
TEST_F(EvalCommandRun, EntropyVariantsOfAScaledEvaluationNameTheRunsOwnRule) {
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir_.string(), "rope");
  o.scale = "pi:factor=2";
  o.sets = {"probe.replay=1", "probe.analyses=[\"entropy_variants\"]"};
  h5::Reader r(EvaluateRunFile(o).path);
  const h5::Group ev = r.root().OpenGroup("analysis").OpenGroup("entropy_variants");
  EXPECT_EQ(ev.AttrString("run_rule"), "scaling pi factor 2");
  EXPECT_NE(ev.OpenGroup("plain").AttrString("description").find("with the run's own scaling pi"),
            std::string::npos);
  EXPECT_NE(ev.OpenGroup("yarn").AttrString("description").find("in place of the run's"),
            std::string::npos);
  const EntropyVariants own = EntropyUnderVariants(o.run_file);
  EXPECT_EQ(own.run_rule, "none");
  EXPECT_EQ(own.variants[0].description, "the trained model as evaluated");
}

// A flip-flop model read on its sparse test distribution (Liu et al. 2023: trained on FFL(0.8),
// tested on FFL(0.98)): task.name may name another task of the run's task's family, whose file
// records that task; a task of another family, and every other task key, are refused.
TEST(EvalCommand, ReadsAnotherTaskOfItsFamilyOnly) {
  const auto dir = testing::FreshTempDir("evalcmd_family");
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"task.name=flip_flop", "task.vocab=0", "model.n_layers=1", "model.encodings=alibi",
       "eval.lengths=2,4,8", "probe.lengths=4", "probe.replay=0"});
  RunOptions ro;
  ro.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "alibi", ro).state, "completed");
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir.string(), "alibi");
  o.sets = {"task.name=flip_flop_sparse"};
  const RunSummary s = EvaluateRunFile(o);
  ASSERT_EQ(s.state, "completed") << s.message;
  EXPECT_EQ(s.path, RunFilePath(dir.string(), "alibi+eval-flip_flop_sparse"));
  {
    h5::Reader r(s.path);
    EXPECT_EQ(r.root().AttrString("task"), "flip_flop_sparse");
  }
  o.sets = {"task.name=copy"};
  try {
    EvaluateRunFile(o);
    ADD_FAILURE() << "copy is not of flip_flop's family";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("family"), std::string::npos) << e.what();
  }
  o.sets = {"task.vocab=3"};
  EXPECT_THROW(EvaluateRunFile(o), InputError);
  fs::remove_all(dir);
}

// probe.analyses chooses what an evaluation's file holds: the chosen groups and no other (the
// source run's replays are not copied or redone), the rest named in the report.
TEST_F(EvalCommandRun, ChosenAnalysesAreTheOnlyOnesWritten) {
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir_.string(), "rope");
  o.sets = {"probe.analyses=[\"geometry\", \"position_probes\"]"};
  std::string lines;
  o.progress = [&](const std::string& l) { lines += l + "\n"; };
  const RunSummary s = EvaluateRunFile(o);
  ASSERT_EQ(s.state, "completed") << s.message;
  {
    h5::Reader r(s.path);
    const h5::Group an = r.root().OpenGroup("analysis");
    EXPECT_TRUE(an.Has("geometry"));
    EXPECT_TRUE(an.Has("position_probes"));
    for (const char* absent :
         {"expectation", "entropy_variants", "position_scores", "receptive_field", "rotary",
          "position_shift"})
      EXPECT_FALSE(an.Has(absent)) << absent;
  }
  EXPECT_NE(lines.find("analyses not run: expectation, entropy_variants, position_scores, "
                       "receptive_field, rotary, position_shift (chosen: "
                       "geometry,position_probes"),
            std::string::npos)
      << lines;
  // The source run, trained with every analysis, still holds them all.
  h5::Reader src(o.run_file);
  EXPECT_TRUE(src.root().OpenGroup("analysis").Has("rotary"));
}

// lexp eval --capture SITE --analyses none: no scores (the greedy or teacher-forced evaluation
// is skipped and /eval says why), no analysis, the probe with its capture site; the file reads
// back as a completed run with no evaluation rows.
TEST_F(EvalCommandRun, CaptureOnlyEvaluationWritesTheSitesAndNoScores) {
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir_.string(), "rope");
  o.sets = {"probe.capture=[\"layer0.attn.q\"]", "probe.analyses=[\"none\"]"};
  o.capture_only = true;
  o.name = "sites";
  const RunSummary s = EvaluateRunFile(o);
  ASSERT_EQ(s.state, "completed") << s.message;
  {
    h5::Reader r(s.path);
    const h5::Group ev = r.root().OpenGroup("eval");
    EXPECT_FALSE(ev.Has("length"));
    EXPECT_NE(ev.AttrString("skipped").find("capture-only"), std::string::npos);
    EXPECT_FALSE(r.root().OpenGroup("analysis").Has("geometry"));
    EXPECT_TRUE(r.root().OpenGroup("probe").OpenGroup("length_20").Has("layer0.attn.q"));
  }
  const RunFile f = RunFile::Read(s.path);
  EXPECT_TRUE(f.eval.empty());
  EXPECT_FALSE(f.eval_skipped.empty());
  EXPECT_TRUE(ReadEvalRows(s.path).empty());
  // Capture-only without a site to capture is refused.
  o.sets = {"probe.analyses=[\"none\"]"};
  o.name = "nothing";
  EXPECT_THROW(EvaluateRunFile(o), InputError);
  EXPECT_FALSE(fs::exists(RunFilePath(dir_.string(), "rope+nothing")));
}

// The command: without --analyses an evaluation writes the geometry alone (what its table and
// figures read), not every replay; --analyses names them; --capture with --analyses none is the
// capture-only evaluation.
TEST_F(EvalCommandRun, TheCommandDefaultsToTheGeometryAndTakesAnalysesByName) {
  auto run = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"eval", RunFilePath(dir_.string(), "rope"), "--no-figures"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunLexp(dir_, args);
  };
  auto groups = [](const std::string& file) {
    h5::Reader r(file);
    const h5::Group an = r.root().OpenGroup("analysis");
    std::string g;
    for (const char* n : {"geometry", "expectation", "entropy_variants", "position_scores",
                          "position_probes", "receptive_field", "rotary", "position_shift"})
      if (an.Has(n)) g += std::string(g.empty() ? "" : ",") + n;
    return g;
  };
  testing::LexpResult r = run({"--name", "plain"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(groups(RunFilePath(dir_.string(), "rope+plain")), "geometry");
  r = run({"--name", "two", "--analyses", "rotary,expectation"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(groups(RunFilePath(dir_.string(), "rope+two")), "expectation,rotary");
  r = run({"--name", "all", "--analyses", "all"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(groups(RunFilePath(dir_.string(), "rope+all")),
            "geometry,expectation,entropy_variants,position_scores,position_probes,"
            "receptive_field,rotary,position_shift");
  r = run({"--name", "cap", "--capture", "layer0.attn.k", "--analyses", "none"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("capture only: no evaluation"), std::string::npos) << r.out;
  h5::Reader cap(RunFilePath(dir_.string(), "rope+cap"));
  EXPECT_TRUE(cap.root().OpenGroup("eval").HasAttr("skipped"));
  EXPECT_EQ(groups(RunFilePath(dir_.string(), "rope+cap")), "");
  // Readers of a directory's scores pass over the capture-only file (it has none).
  r = testing::RunLexp(dir_, {"base-law", dir_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  r = testing::RunLexp(dir_, {"figures", dir_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  // Every figure of the directory (trained runs beside evaluations without some analyses, which
  // sort between them: rope+plain.h5 < rope.h5) is drawn without a gnuplot message: a run whose
  // data block is empty once made attention_geometry draw the next run from its neighbour's block.
  // (A directory without a NoPE run has no JS reference: that panel says so instead of plotting
  // nothing, which gnuplot reported as an error.)
  int pngs = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "figures")) {
    pngs += e.path().extension() == ".png";
    if (e.path().extension() == ".log") {
      EXPECT_EQ(fs::file_size(e.path()), 0u) << e.path() << ":\n" << testing::Slurp(e.path());
    }
  }
  EXPECT_GE(pngs, 5);
}

TEST_F(EvalCommandRun, ScalingANonRopeRunIsAnInputError) {
  EvalCommandOptions o;
  o.run_file = RunFilePath(dir_.string(), "alibi");
  o.scale = "yarn:factor=2";
  EXPECT_THROW(EvaluateRunFile(o), InputError);
  o.run_file = (dir_ / "missing.h5").string();
  EXPECT_THROW(EvaluateRunFile(o), Error);
}

}  // namespace
}  // namespace lexp

namespace lexp {
namespace {

// A format-1 run file (t5, weights stored flat, tests/golden/run_format1_t5.h5) is still read:
// evaluated again from its flat weights, it reproduces its own /eval (written by the same model),
// and the output is a format-2 file.
TEST(EvalCommand, FormatOneRunFilesAreStillRead) {
  const fs::path dir = testing::FreshTempDir("eval_format1");
  const fs::path src = dir / "t5.h5";
  fs::copy_file(std::string(LEXP_SOURCE_DIR) + "/tests/golden/run_format1_t5.h5", src);
  h5::Reader v1(src.string());
  ASSERT_EQ(v1.root().AttrString("format"), "lexp-run/1");
  ASSERT_EQ(v1.root().OpenGroup("model").Dims("pe.t5.table").size(), 1u) << "flat weights";
  EvalCommandOptions o;
  o.run_file = src.string();
  const RunSummary s = EvaluateRunFile(o);
  ASSERT_EQ(s.state, "completed");
  h5::Reader v2(s.path);
  EXPECT_EQ(v2.root().AttrString("format"), "lexp-run/3");
  const auto before = v1.root().OpenGroup("eval").ReadDoubles("loss");
  const auto after = v2.root().OpenGroup("eval").ReadDoubles("loss");
  ASSERT_EQ(before.size(), after.size());
  // The file was written on an AVX-512 machine; the last digits depend on the CPU's kernels.
  for (size_t i = 0; i < before.size(); ++i) EXPECT_NEAR(after[i], before[i], 1e-4 * before[i]);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
