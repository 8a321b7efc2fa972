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
    JudgeCriterion(Criterion("sink_mass", 64, 64, {"bare > 0.1"}), dir.string());
    ADD_FAILURE() << "a run without head_sink_mass was judged";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("head_sink_mass"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
