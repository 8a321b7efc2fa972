// The criterion metrics read from the analyses of a run file (experiments/reproduce/run_scores.h),
// each on planted run files whose right reading is known, with a control where the mechanism is
// absent: sink_mass (attention on the first token) and position_probe_error (the index probe's
// error relative to its chance level, after the first block).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "experiments/reproduce/criterion.h"
#include "experiments/reproduce/run_scores.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

// A completed run file of `label`-seed<seed>.h5 trained at 64 tokens, with `fill` writing its
// /analysis.
template <typename Fill>
void WriteRun(const fs::path& dir, const std::string& label, int seed, Fill fill) {
  fs::create_directories(dir);
  const std::string name = label + "-seed" + std::to_string(seed);
  h5::Writer w((dir / (name + ".h5")).string());
  const h5::Group& root = w.root();
  root.SetAttr("format", "lexp-run/2");
  root.SetAttr("label", name);
  root.SetAttr("seed", seed);
  root.SetAttr("train_max_length", 64);
  root.CreateGroup("status").SetAttr("state", "completed");
  fill(root.CreateGroup("analysis"));
  w.Commit();
}

// head_sink_mass [2 layers x 2 heads] at the probe lengths 64 and 256.
void WriteSinks(const h5::Group& an, const std::vector<double>& at64,
                const std::vector<double>& at256) {
  const h5::Group geo = an.CreateGroup("geometry");
  for (const auto& [n, mass] : {std::pair<int64_t, std::vector<double>>{64, at64}, {256, at256}}) {
    const h5::Group g = geo.CreateGroup("length_" + std::to_string(n));
    g.SetAttr("length", n);
    g.WriteDoubles("head_sink_mass", mass, {2, 2}, "layer,head");
  }
}

ClaimCriterion Criterion(const std::string& metric, int lo, int hi,
                         std::vector<std::string> holds) {
  ClaimCriterion k;
  k.metric = metric;
  k.length_lo = lo;
  k.length_hi = hi;
  k.seeds = "mean";
  k.holds = std::move(holds);
  return k;
}

// A planted sink (half the attention of every head on the first token) reads 0.5 at its length;
// attention near uniform (0.059 at 64 keys, the control) reads that, and the claim of a sink is
// then contradicted. The reading is the mean over layers and heads at the requested length only.
TEST(RunScores, SinkMassIsTheMeanFirstTokenAttentionOverHeadsAtEachProbeLength) {
  const fs::path dir = testing::FreshTempDir("run_scores_sinks");
  for (int s = 1; s <= 3; ++s) {
    const double e = 0.01 * s;
    WriteRun(dir, "sinks", s, [&](const h5::Group& an) {
      WriteSinks(an, {0.6 + e, 0.4 + e, 0.7 + e, 0.3 + e}, {0.9, 0.9, 0.9, 0.9});
    });
    WriteRun(dir, "uniform", s, [&](const h5::Group& an) {
      WriteSinks(an, {0.059 + e / 10, 0.059, 0.059, 0.059}, {0.02, 0.02, 0.02, 0.02});
    });
  }
  Verdict v = JudgeCriterion(Criterion("sink_mass", 64, 64, {"sinks > 0.12"}), dir.string());
  ASSERT_EQ(v.groups.size(), 1u);
  EXPECT_NEAR(v.groups[0].per_seed[0], 0.51, 1e-12);
  EXPECT_NEAR(v.groups[0].score, 0.52, 1e-12);
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  v = JudgeCriterion(Criterion("sink_mass", 64, 64, {"uniform > 0.12"}), dir.string());
  EXPECT_NEAR(v.groups[0].per_seed[0], 0.059 + 0.001 / 4, 1e-12);
  EXPECT_EQ(v.verdict, "contradicted") << "no sink: " << v.reason;
  // At 256 the planted values differ: the span selects the probe length.
  v = JudgeCriterion(Criterion("sink_mass", 256, 256, {"sinks > 0.12"}), dir.string());
  EXPECT_NEAR(v.groups[0].per_seed[0], 0.9, 1e-12);
  fs::remove_all(dir);
}

// index_rmse_held_out and index_chance_held_out per residual stream 0..2 (the embedding, after
// block 1, after block 2).
void WriteProbes(const h5::Group& an, const std::vector<double>& rmse,
                 const std::vector<double>& chance) {
  const h5::Group p = an.CreateGroup("position_probes");
  p.WriteDoubles("index_rmse_held_out", rmse, {rmse.size()}, "residual");
  p.WriteDoubles("index_chance_held_out", chance, {chance.size()}, "residual");
  // The out-of-distribution reading at the longest length is not what the metric reads.
  p.WriteDoubles("index_rmse_in_range", std::vector<double>(rmse.size(), 99.0), {rmse.size()},
                 "residual");
  p.WriteDoubles("index_chance_in_range", chance, {chance.size()}, "residual");
}

// A stream that carries the index (RMSE a fifth of chance after block 2) reads 0.2, not the
// embedding's 0.1 (residual 0 holds any absolute encoding the model was given, not what it
// learnt); a model whose streams carry no position (RMSE = chance, the control) reads 1. One value
// per run, at its training length.
TEST(RunScores, PositionProbeErrorIsTheBestStreamAfterTheFirstBlockRelativeToChance) {
  const fs::path dir = testing::FreshTempDir("run_scores_probes");
  for (int s = 1; s <= 3; ++s) {
    WriteRun(dir, "causal", s, [&](const h5::Group& an) {
      WriteProbes(an, {1.0, 8.0, 2.0 + 0.1 * s}, {10.0, 10.0, 10.0});
    });
    WriteRun(dir, "bidirectional", s, [&](const h5::Group& an) {
      WriteProbes(an, {10.0, 10.0 - 0.1 * s, 10.0}, {10.0, 10.0, 10.0});
    });
  }
  Verdict v = JudgeCriterion(
      Criterion("position_probe_error", 64, 64, {"causal < 0.5", "causal < bidirectional"}),
      dir.string());
  ASSERT_EQ(v.groups.size(), 2u);
  EXPECT_NEAR(v.groups[0].per_seed[0], 0.21, 1e-12);
  EXPECT_NEAR(v.groups[1].per_seed[1], 0.98, 1e-12);
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  v = JudgeCriterion(Criterion("position_probe_error", 64, 64, {"bidirectional < 0.5"}),
                     dir.string());
  EXPECT_EQ(v.verdict, "contradicted") << "no position in the streams: " << v.reason;
  fs::remove_all(dir);
}

// A completed run trained at 64 whose /eval holds `loss` at `lengths` (exact match 1 - loss / 4).
void WriteEvalRun(const fs::path& dir, const std::string& label, int seed,
                  const std::vector<int64_t>& lengths, const std::vector<double>& loss) {
  fs::create_directories(dir);
  const std::string name = label + "-seed" + std::to_string(seed);
  h5::Writer w((dir / (name + ".h5")).string());
  const h5::Group& root = w.root();
  root.SetAttr("format", "lexp-run/2");
  root.SetAttr("label", name);
  root.SetAttr("seed", seed);
  root.SetAttr("train_max_length", 64);
  root.CreateGroup("status").SetAttr("state", "completed");
  const h5::Group eval = root.CreateGroup("eval");
  const uint64_t L = lengths.size();
  eval.WriteInts("length", lengths, {L}, "length");
  eval.WriteDoubles("loss", loss, {L}, "length");
  std::vector<double> em;
  for (const double l : loss) em.push_back(1 - l / 4);
  eval.WriteDoubles("exact_match", em, {L}, "length");
  eval.WriteInts("samples", std::vector<int64_t>(L, 100), {L}, "length");
  w.Commit();
}

const std::vector<int64_t> kGrid = {16, 32, 64, 96, 128, 192, 256};

// lexp base-law's limit (tolerance 0.1) per run: a loss flat to 192 (seeds 1, 2) or 128 (seed 3)
// then doubled reads 192 or 128; one that rises by half right after the training length reads
// the training length 64 (the control: no extrapolation); a flat one reads the longest length,
// censored, a lower bound that may still support a claim that it is the larger.
// /analysis/position_shift with the shifts 16 and 1024 at the probe lengths 64 and 256, 2 layers x
// 2 heads: row_l1 at 16 is `at16[length]` on every head, plus `head` x the head's index; at 1024
// a distractor (9) the metric must not read.
void WriteShifts(const h5::Group& an, const std::vector<double>& at16, double head) {
  const h5::Group g = an.CreateGroup("position_shift");
  g.WriteDoubles("shift", {16, 1024}, {2}, "shift");
  g.WriteInts("length", {64, 256}, {2}, "probe");
  std::vector<double> l1;
  for (int s = 0; s < 2; ++s)
    for (int p = 0; p < 2; ++p)
      for (int i = 0; i < 4; ++i) l1.push_back(s == 0 ? at16[p] + head * (i % 2) : 9.0);
  g.WriteDoubles("row_l1", l1, {2, 2, 2, 2}, "shift,probe,layer,head");
}

// A planted move that grows with the length (bf16 rounding of the rotation: 4x from 64 to 256)
// reads its mean over heads at shift 16 and is judged to grow; the control (fp32: a flat 1e-7 at
// both lengths) is not. A shift that was not replayed (NaN) is refused, not averaged.
TEST(RunScores, ShiftMoveIsTheRowL1AtTheFirstShiftMeanOverHeads) {
  const fs::path dir = testing::FreshTempDir("run_scores_shift");
  for (int s = 1; s <= 3; ++s) {
    const double e = 0.001 * s;
    WriteRun(dir, "bf16", s, [&](const h5::Group& an) { WriteShifts(an, {0.01, 0.04 + e}, e); });
    WriteRun(dir, "fp32", s, [&](const h5::Group& an) {
      WriteShifts(an, {1e-7, 1e-7}, 1e-9 * (s - 2));
    });
  }
  Verdict v = JudgeCriterion(Criterion("shift_move", 64, 64, {"bf16 > fp32"}), dir.string());
  ASSERT_EQ(v.groups.size(), 2u);
  EXPECT_NEAR(v.groups[0].per_seed[0], 0.01 + 0.0005, 1e-12);  // heads 0.01, 0.011, twice
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  ClaimCriterion growth = Criterion("shift_move", 256, 256, {"bf16 > 1", "fp32 > 1"});
  growth.relative_lo = growth.relative_hi = 64;
  v = JudgeCriterion(growth, dir.string());
  ASSERT_EQ(v.comparisons.size(), 2u);
  EXPECT_NEAR(v.groups[0].per_seed[0], (0.041 + 0.0005) / (0.01 + 0.0005), 1e-9);
  EXPECT_TRUE(v.comparisons[0].significant_for) << v.reason;
  EXPECT_FALSE(v.comparisons[1].significant_for) << "a flat move does not grow: " << v.reason;
  WriteRun(dir / "nan", "nan", 1, [](const h5::Group& an) {
    WriteShifts(an, {0.01, std::nan("")}, 0);
  });
  WriteRun(dir / "nan", "nan", 2, [](const h5::Group& an) { WriteShifts(an, {0.01, 0.02}, 0); });
  try {
    JudgeCriterion(Criterion("shift_move", 64, 64, {"nan > 0.001"}), (dir / "nan").string());
    ADD_FAILURE() << "a move that was not replayed was judged";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("length 256"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(RunScores, ExtrapolationLimitIsBaseLawsLimitPerRun) {
  const fs::path dir = testing::FreshTempDir("run_scores_limit");
  for (int s = 1; s <= 3; ++s) {
    const double far = s == 3 ? 2.0 : 1.05;
    WriteEvalRun(dir, "extends", s, kGrid, {1.5, 1.0, 1.0, 1.02, 1.05, far, 2.0});
    WriteEvalRun(dir, "breaks", s, kGrid, {1.5, 1.0, 1.0, 1.5 + 0.1 * s, 2.0, 2.5, 3.0});
    WriteEvalRun(dir, "flat", s, kGrid, {1.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0});
    WriteEvalRun(dir, "mid", s, kGrid, {1.5, 1.0, 1.0, 1.05, s == 3 ? 1.05 : 2.0, 2.5, 3.0});
  }
  Verdict v = JudgeCriterion(Criterion("loss_limit", 64, 64, {"extends > breaks"}), dir.string());
  EXPECT_EQ(v.groups[0].per_seed, (std::vector<double>{192, 192, 128}));
  EXPECT_EQ(v.groups[1].per_seed, (std::vector<double>{64, 64, 64}));
  EXPECT_EQ(v.groups[0].censored, 0);
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  v = JudgeCriterion(Criterion("loss_limit", 64, 64, {"breaks > extends"}), dir.string());
  EXPECT_EQ(v.verdict, "contradicted") << v.reason;
  v = JudgeCriterion(Criterion("loss_limit", 64, 64, {"flat > mid"}), dir.string());
  EXPECT_EQ(v.groups[1].per_seed, (std::vector<double>{96, 96, 128}));
  EXPECT_EQ(v.groups[0].censored, 3);
  EXPECT_EQ(v.groups[0].per_seed, (std::vector<double>{256, 256, 256}));
  EXPECT_EQ(v.verdict, "reproduced") << "a lower bound above: " << v.reason;
  // The same limits read from exact match (at least 0.9 x its value at 64).
  v = JudgeCriterion(Criterion("exact_match_limit", 64, 64, {"extends > breaks"}), dir.string());
  EXPECT_EQ(v.groups[1].per_seed, (std::vector<double>{64, 64, 64}));
  // With "<" and against numbers: a lower bound above the other side still decides, for the
  // claim ("mid < flat") or against it ("flat < mid"); a number against seeds with spread too.
  v = JudgeCriterion(Criterion("loss_limit", 64, 64, {"mid < 160", "mid < flat"}), dir.string());
  EXPECT_EQ(v.verdict, "reproduced") << v.reason;
  for (const char* against : {"flat < mid", "mid > 160"}) {
    v = JudgeCriterion(Criterion("loss_limit", 64, 64, {against}), dir.string());
    EXPECT_EQ(v.verdict, "contradicted") << against << ": " << v.reason;
  }
  // Seeds that all read 256 have no spread: against a number they order but are not tested
  // (three ties say little of the limit), either way.
  for (const char* tie : {"flat > 200", "flat < 96"}) {
    v = JudgeCriterion(Criterion("loss_limit", 64, 64, {tie}), dir.string());
    EXPECT_EQ(v.verdict, "no effect") << tie << ": " << v.reason;
    EXPECT_NE(v.comparisons[0].test.find("no spread"), std::string::npos) << v.comparisons[0].test;
  }
  fs::remove_all(dir);
}

// A run that never learnt its task (a loss flat and high from the shortest length; an accuracy
// below 0.5 at the training length) has no limit to read: it would pass every length. It is not
// scored, counted incomplete, and a label of such runs alone is not testable.
TEST(RunScores, ARunThatNeverLearntHasNoLimit) {
  const fs::path dir = testing::FreshTempDir("run_scores_limit_unlearnt");
  for (int s = 1; s <= 3; ++s) {
    WriteEvalRun(dir, "never", s, kGrid, {3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0});
    WriteEvalRun(dir, "extends", s, kGrid, {1.5, 1.0, 1.0, 1.02, 1.05, s == 3 ? 2.0 : 1.05, 2.0});
  }
  Verdict v = JudgeCriterion(Criterion("loss_limit", 64, 64, {"never > extends"}), dir.string());
  EXPECT_EQ(v.groups[0].incomplete, 3);
  EXPECT_EQ(v.verdict, "not testable") << v.reason;
  // By exact match (1 - loss / 4 = 0.25 at 64, below 0.5): not learnt either.
  v = JudgeCriterion(Criterion("exact_match_limit", 64, 64, {"never > extends"}), dir.string());
  EXPECT_EQ(v.groups[0].incomplete, 3);
  EXPECT_EQ(v.verdict, "not testable") << v.reason;
  fs::remove_all(dir);
}

// A censored limit is a lower bound: evaluated only to 96 and flat there, it reads 96, below
// another label's 128..192, but its true limit may be larger, so the comparison is not
// significant either way; a run evaluated at no length beyond training is refused.
TEST(RunScores, ACensoredLimitNeitherSupportsNorContradictsAClaim) {
  const fs::path dir = testing::FreshTempDir("run_scores_limit_censored");
  for (int s = 1; s <= 5; ++s) {  // limits 192 x 4 and 128: 96 lies wholly below them
    const double far = s == 3 ? 2.0 : 1.05;
    WriteEvalRun(dir, "extends", s, kGrid, {1.5, 1.0, 1.0, 1.02, 1.05, far, 2.0});
    WriteEvalRun(dir, "short", s, {16, 32, 64, 96}, {1.5, 1.0, 1.0, 1.0 + 0.01 * s});
  }
  // Each way of the pair, and against numbers (96, censored, against 150).
  for (const char* claim : {"short > extends", "extends > short", "extends < short",
                            "short < extends", "short > 150", "short < 150"}) {
    const Verdict v = JudgeCriterion(Criterion("loss_limit", 64, 64, {claim}), dir.string());
    EXPECT_EQ(v.groups[0].label == "short" ? v.groups[0].censored : v.groups[1].censored, 5);
    EXPECT_EQ(v.verdict, "no effect") << claim << ": " << v.reason;
    EXPECT_TRUE(v.comparisons[0].difference.lo > 0 || v.comparisons[0].difference.hi < 0)
        << claim << ": the measured difference is significant; only the censoring leaves it "
        << "uncounted";
  }
  WriteEvalRun(dir / "untested", "inside", 1, {16, 32, 64}, {1.5, 1.0, 1.0});
  WriteEvalRun(dir / "untested", "inside", 2, {16, 32, 64}, {1.5, 1.0, 1.0});
  try {
    JudgeCriterion(Criterion("loss_limit", 64, 64, {"inside > 64"}), (dir / "untested").string());
    ADD_FAILURE() << "a limit without a length beyond training was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("and one beyond it"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A run file without the analysis a metric reads is refused, naming what is missing and how to
// make it; it is never read as a number.
TEST(RunScores, ARunWithoutTheAnalysisIsRefusedNamingHowToMakeIt) {
  const fs::path dir = testing::FreshTempDir("run_scores_missing");
  for (int s = 1; s <= 2; ++s) WriteRun(dir, "bare", s, [](const h5::Group&) {});
  try {
    JudgeCriterion(Criterion("position_probe_error", 64, 64, {"bare < 0.5"}), dir.string());
    ADD_FAILURE() << "a run without /analysis/position_probes was judged";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("lexp analyze"), std::string::npos) << e.what();
  }
  // Probes analysed before the held-out reading existed: refused, not read from the old rows.
  for (int s = 1; s <= 2; ++s)
    WriteRun(dir / "older", "older", s, [](const h5::Group& an) {
      const h5::Group p = an.CreateGroup("position_probes");
      p.WriteDoubles("index_rmse_in_range", {1.0, 2.0, 3.0}, {3}, "residual");
      p.WriteDoubles("index_chance_in_range", {10.0, 10.0, 10.0}, {3}, "residual");
    });
  try {
    JudgeCriterion(Criterion("position_probe_error", 64, 64, {"older < 0.5"}),
                   (dir / "older").string());
    ADD_FAILURE() << "probes without index_rmse_held_out were judged";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no index_rmse_held_out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lexp analyze"), std::string::npos) << e.what();
  }
  try {
    JudgeCriterion(Criterion("shift_move", 64, 64, {"bare > 0.1"}), dir.string());
    ADD_FAILURE() << "a run without /analysis/position_shift was judged";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("position_shift"), std::string::npos) << e.what();
  }
  try {
    JudgeCriterion(Criterion("sink_mass", 64, 64, {"bare > 0.1"}), dir.string());
    ADD_FAILURE() << "a run without head_sink_mass was judged";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("head_sink_mass"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
