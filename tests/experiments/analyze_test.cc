// `lexp analyze`: training runs carry /analysis/geometry, measured over every probe sequence with
// its spread; a reference run adds the JS divergence of every head against every reference head;
// overflowing logits are counted.
#include "experiments/replay/analyze.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <vector>

#include "experiments/replay/model_replay.h"
#include "experiments/training/trainer.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

// A copy of a run file whose model is changed by `edit` (applied to every weight dataset of /model
// by name): a reference with permuted heads, or a model whose logits overflow.
std::string EditedCopy(const std::string& run, const std::string& out,
                       const std::function<void(const std::string&, std::vector<double>&,
                                                const std::vector<uint64_t>&)>& edit) {
  std::filesystem::copy_file(run, out, std::filesystem::copy_options::overwrite_existing);
  h5::Writer w(out, h5::Writer::Mode::kUpdate);
  h5::Group m = w.root().OpenGroup("model");
  for (const auto& name : m.Children()) {
    std::vector<uint64_t> dims;
    std::vector<double> v = m.ReadDoubles(name, &dims);
    const std::vector<double> before = v;
    edit(name, v, dims);
    if (v == before) continue;
    m.Remove(name);
    m.WriteFloats(name, std::vector<float>(v.begin(), v.end()), dims, "", "");
  }
  w.Commit();
  return out;
}

// The geometry is measured over every probe sequence (probe.samples = 3, while one is stored),
// at the training length and at every probe length, with the spread across sequences; LM-Infinite's
// statistic is the running max of the last query's logits, recomputed here from a replay.
TEST(Analyze, GeometryCoversEveryProbeSequenceWithItsSpread) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"train.steps=20", "probe.lengths=5,9", "probe.stored_samples=1", "probe.samples=3"});
  const auto dir = testing::FreshTempDir("analyze");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "rope", o).state, "completed");
  const std::string rope = RunFilePath(dir.string(), "rope");
  // The last query's running max, by hand, over the three probe sequences of length 9; and the
  // fraction of visible logits (key at or before the query) outside each head's range at the
  // training length (logit_ranges of length_5: min, max of the logit first).
  const int T = 19;  // 2 x 9 + the end token
  std::vector<double> sum(2 * 2 * T, 0.0), sq(2 * 2 * T, 0.0), outside(4, 0.0), pairs(4, 0.0);
  std::vector<double> trained;
  {
    h5::Reader r(rope);
    trained = r.root()
                  .OpenGroup("analysis")
                  .OpenGroup("geometry")
                  .OpenGroup("length_5")
                  .ReadDoubles("logit_ranges");
    ASSERT_EQ(trained.size(), 4u * 6);
  }
  ModelReplay replay(rope);
  replay.ForEachProbeSequence(9, [&](int, int t) {
    ASSERT_EQ(t, T);
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < 2; ++h) {
        const float* z = replay.model().Logits(l).data() + static_cast<long>(h) * T * T;
        double run = -1e300;
        for (int n = 0; n < T; ++n) {
          run = std::max(run, static_cast<double>(z[(T - 1) * T + (T - 1 - n)]));
          sum[(l * 2 + h) * T + n] += run;
          sq[(l * 2 + h) * T + n] += run * run;
        }
        const int k = l * 2 + h;
        for (int i = 0; i < T; ++i)
          for (int j = 0; j <= i; ++j) {
            const double v = z[i * T + j];
            pairs[k] += 1;
            outside[k] += v < trained[k * 6] || v > trained[k * 6 + 1];
          }
      }
  });
  h5::Reader r(rope);
  const h5::Group g = r.root().OpenGroup("analysis").OpenGroup("geometry");
  EXPECT_TRUE(g.Has("length_5")) << "the training length";
  const h5::Group p = g.OpenGroup("length_9");
  EXPECT_EQ(p.AttrInt("samples"), 3) << "every probe sequence, not the stored one";
  EXPECT_EQ(p.AttrInt("within_training"), 0);
  std::vector<uint64_t> dims;
  const auto mean = p.ReadDoubles("logit_bound_last_query", &dims);
  const auto sd = p.ReadDoubles("logit_bound_last_query_sd");
  ASSERT_EQ(dims, (std::vector<uint64_t>{2, 2, 19}));
  for (int k = 0; k < 2 * 2 * T; ++k) {
    const double m = sum[k] / 3;
    EXPECT_NEAR(mean[k], m, 1e-5) << k;
    EXPECT_NEAR(sd[k], std::sqrt(std::max(0.0, (sq[k] - 3 * m * m) / 2)), 1e-4) << k;
  }
  const auto visible = p.ReadDoubles("visible_keys");
  for (int i = 0; i < T; ++i) EXPECT_EQ(visible[i], i + 1) << "causal: query i sees i + 1 keys";
  // Head classes follow their documented thresholds; fractions and shares lie in [0, 1]; at the
  // training length nothing is outside its own range.
  const auto cls = p.ReadInts("head_class");
  const auto sink = p.ReadDoubles("head_sink_mass"), local = p.ReadDoubles("head_local_mass"),
             share = p.ReadDoubles("positional_share");
  for (int k = 0; k < 4; ++k) {
    const int expect = sink[k] >= 0.5 ? 0 : local[k] >= 0.5 ? 1 : share[k] < 0.5 ? 2 : 3;
    EXPECT_EQ(cls[k], expect) << k;
    EXPECT_TRUE(share[k] >= 0 && share[k] <= 1 + 1e-9) << share[k];
  }
  const auto out = p.ReadDoubles("out_of_range_logit");
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(out[k], outside[k] / pairs[k], 1e-12) << k;
  for (const char* f : {"out_of_range_positional", "out_of_range_content"})
    for (double x : p.ReadDoubles(f)) EXPECT_TRUE(x >= 0 && x <= 1) << f;
  for (auto x : p.ReadInts("nonfinite_logits")) EXPECT_EQ(x, 0);
  EXPECT_FALSE(p.Has("js_vs_reference"));
  std::filesystem::remove_all(dir);
}

// JS divergence compares every head with every reference head of its layer: a reference that is
// this very model with its two heads swapped (the same function) has a best match of 0 for every
// head, where pairing head h with reference head h (the earlier statistic) sees two different
// heads.
TEST(Analyze, JsDivergenceMatchesHeadsWhateverTheirOrder) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"train.steps=20", "probe.lengths=5,9", "probe.samples=2", "model.encodings=nope"});
  const auto dir = testing::FreshTempDir("analyze_js");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "nope", o).state, "completed");
  const std::string nope = RunFilePath(dir.string(), "nope");
  constexpr int C = 16, D = 8;  // d_model, head width
  const std::string swapped = EditedCopy(
      nope, (dir / "swapped.h5").string(),
      [&](const std::string& name, std::vector<double>& v, const std::vector<uint64_t>& dims) {
        auto swap_cols = [&](int cols, int offset) {  // head 0 <-> head 1 in one q/k/v block
          const int rows = static_cast<int>(v.size()) / cols;
          for (int r = 0; r < rows; ++r)
            for (int d = 0; d < D; ++d)
              std::swap(v[r * cols + offset + d], v[r * cols + offset + D + d]);
        };
        if (name.find("attn.qkv.w") != std::string::npos) {
          for (int b = 0; b < 3; ++b) swap_cols(3 * C, b * C);
        } else if (name.find("attn.qkv.b") != std::string::npos) {
          for (int b = 0; b < 3; ++b) swap_cols(3 * C, b * C);
        } else if (name.find("attn.proj.w") != std::string::npos) {
          for (int d = 0; d < D; ++d)
            for (int col = 0; col < C; ++col) std::swap(v[d * C + col], v[(D + d) * C + col]);
        }
        (void)dims;
      });
  const std::string report = AnalyzeRunFile(nope, swapped);
  EXPECT_NE(
      report.find("JS vs reference, heads matched one to one 0.000 (each head's closest 0.000)"),
      std::string::npos)
      << report;
  h5::Reader r(nope);
  const h5::Group p = r.root().OpenGroup("analysis").OpenGroup("geometry").OpenGroup("length_9");
  std::vector<uint64_t> dims;
  const auto js = p.ReadDoubles("js_vs_reference", &dims);
  ASSERT_EQ(dims, (std::vector<uint64_t>{2, 2, 2}));
  const auto best = p.ReadDoubles("js_best"), mean = p.ReadDoubles("js_mean");
  const auto matched = p.ReadDoubles("js_matched");
  const auto matched_head = p.ReadInts("js_matched_head");
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) {
      EXPECT_NEAR(js[(l * 2 + h) * 2 + (1 - h)], 0.0, 1e-9) << "head h is reference head 1 - h";
      EXPECT_NEAR(best[l * 2 + h], 0.0, 1e-9);
      EXPECT_NEAR(matched[l * 2 + h], 0.0, 1e-9);
      EXPECT_EQ(matched_head[l * 2 + h], 1 - h);
      EXPECT_NEAR(mean[l * 2 + h], 0.5 * js[(l * 2 + h) * 2 + h], 1e-12);
      for (int b = 0; b < 2; ++b) EXPECT_LE(js[(l * 2 + h) * 2 + b], std::log(2.0) + 1e-12);
    }
  EXPECT_GT(js[0], 1e-4) << "head 0 against reference head 0 (the other head) differs";
  EXPECT_TRUE(std::filesystem::exists(DrawAttentionGeometry(dir.string())));
  std::filesystem::remove_all(dir);
}

// The one-to-one matching differs from each head's closest reference head where two heads attend
// alike: a model whose layer-0 head 1 has head 0's queries and keys, against the original. Each
// of its heads is closest to the original's head 0 (js_best 0 for both), but only one can be
// matched to it; the other is matched to head 1 and differs from it (js_matched > 0).
TEST(Analyze, MatchingIsOneToOneWhereTwoHeadsClaimTheSameReferenceHead) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"train.steps=20", "probe.lengths=5,9", "probe.samples=2", "model.encodings=nope"});
  const auto dir = testing::FreshTempDir("analyze_match");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "nope", o).state, "completed");
  const std::string nope = RunFilePath(dir.string(), "nope");
  constexpr int C = 16, D = 8;
  const std::string twins = EditedCopy(
      nope, (dir / "twins.h5").string(),
      [&](const std::string& name, std::vector<double>& v, const std::vector<uint64_t>&) {
        if (name != "layer0.attn.qkv.w" && name != "layer0.attn.qkv.b") return;
        const int rows = static_cast<int>(v.size()) / (3 * C);
        for (int r = 0; r < rows; ++r)
          for (int b = 0; b < 2; ++b)  // q and k of head 1 := those of head 0
            for (int d = 0; d < D; ++d) v[r * 3 * C + b * C + D + d] = v[r * 3 * C + b * C + d];
      });
  AnalyzeRunFile(twins, nope);
  h5::Reader r(twins);
  const h5::Group p = r.root().OpenGroup("analysis").OpenGroup("geometry").OpenGroup("length_9");
  const auto js = p.ReadDoubles("js_vs_reference");
  const auto best = p.ReadDoubles("js_best"), matched = p.ReadDoubles("js_matched");
  const auto head = p.ReadInts("js_matched_head");
  EXPECT_NEAR(best[0], 0.0, 1e-9);
  EXPECT_NEAR(best[1], 0.0, 1e-9) << "both of layer 0's heads are closest to reference head 0";
  EXPECT_NE(head[0], head[1]) << "one to one";
  EXPECT_NEAR(matched[0] + matched[1], js[1], 1e-9) << "one head pays JS(head 0, head 1)";
  EXPECT_GT(js[1], 1e-4);
  // Beyond the training length (9 > 5) the same pairs, over the queries at positions >= 11 only.
  const auto beyond = p.ReadDoubles("js_matched_beyond");
  EXPECT_TRUE(std::isfinite(beyond[0]) && std::isfinite(beyond[1]));
  const h5::Group within =
      r.root().OpenGroup("analysis").OpenGroup("geometry").OpenGroup("length_5");
  for (double x : within.ReadDoubles("js_matched_beyond")) EXPECT_TRUE(std::isnan(x));
  std::filesystem::remove_all(dir);
}

// Logits that overflow (layer 0's q/k/v weights x 1e30) are counted and reported, not silently
// skipped by the entropies and the explosion curve.
TEST(Analyze, NonFiniteLogitsAreCountedAndReported) {
  const RecipeConfig c =
      testing::TinyCopyRecipe({"train.steps=10", "probe.lengths=5,9", "probe.samples=2",
                               "model.encodings=nope", "probe.replay=0"});
  const auto dir = testing::FreshTempDir("analyze_inf");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "nope", o).state, "completed");
  const std::string blown =
      EditedCopy(RunFilePath(dir.string(), "nope"), (dir / "blown.h5").string(),
                 [](const std::string& name, std::vector<double>& v, const std::vector<uint64_t>&) {
                   if (name == "layer0.attn.qkv.w")
                     for (double& x : v) x *= 1e30;  // still a float (|w| < 3e38); q.k is not
                 });
  const std::string report = AnalyzeRunFile(blown, "", AnalysisSelection::GeometryOnly());
  EXPECT_NE(report.find("NaN/+inf logits skipped"), std::string::npos) << report;
  h5::Reader r(blown);
  int64_t bad = 0;
  for (auto x : r.root()
                    .OpenGroup("analysis")
                    .OpenGroup("geometry")
                    .OpenGroup("length_9")
                    .ReadInts("nonfinite_logits"))
    bad += x;
  EXPECT_GT(bad, 0);
  std::filesystem::remove_all(dir);
}

TEST(Analyze, ProbeReplayZeroLeavesTheReplaysToLexpAnalyze) {
  const RecipeConfig c =
      testing::TinyCopyRecipe({"model.encodings=rope", "train.steps=10", "probe.replay=0"});
  const auto dir = testing::FreshTempDir("analyze_replay");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "rope", o).state, "completed");
  const std::string rope = RunFilePath(dir.string(), "rope");
  {
    h5::Reader r(rope);
    const h5::Group an = r.root().OpenGroup("analysis");
    EXPECT_TRUE(an.Has("geometry"));
    EXPECT_FALSE(an.Has("rotary"));
    EXPECT_FALSE(an.Has("entropy_variants"));
  }
  AnalyzeRunFile(rope);
  // The geometry refreshed alone (lexp collect, once a NoPE reference is done) keeps the rest.
  AnalyzeRunFile(rope, "", AnalysisSelection::GeometryOnly());
  h5::Reader r(rope);
  const h5::Group an = r.root().OpenGroup("analysis");
  EXPECT_TRUE(an.Has("rotary"));
  EXPECT_TRUE(an.Has("entropy_variants"));
  EXPECT_TRUE(an.Has("position_shift"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
