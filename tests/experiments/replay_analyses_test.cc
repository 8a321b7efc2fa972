// The analyses that replay a trained model (experiments/replay/model_replay.h): a replay reproduces
// the run's evaluation, entropy under log-n / YaRN / Lambda behaves as theory says, and the rotary
// pair analysis is consistent with the run (its unablated row is the run's loss, the supremum
// bounds the observed logits, the predicted boundary counts the pairs that complete a period).
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "experiments/replay/analyze.h"
#include "experiments/replay/empirical_expectation.h"
#include "experiments/replay/entropy_variants.h"
#include "experiments/replay/model_replay.h"
#include "experiments/replay/position_probes.h"
#include "experiments/replay/position_scores.h"
#include "experiments/replay/receptive_field.h"
#include "experiments/replay/rotary_pairs.h"
#include "experiments/training/trainer.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "pe/forwarding_encoding.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

class ReplayAnalyses : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(testing::FreshTempDir("replay"));
    const RecipeConfig c = testing::TinyCopyRecipe(
        {"model.encodings=rope,nope", "train.steps=40", "probe.samples=2", "probe.stored_samples=2",
         "eval.lengths=2,5,9,14", "encoding_options.rope.base=100"});
    RunOptions o;
    o.out_dir = dir_->string();
    ASSERT_EQ(TrainAndEvaluate(c, "rope", o).state, "completed");
    ASSERT_EQ(TrainAndEvaluate(c, "nope", o).state, "completed");
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static std::string Run(const std::string& e) { return RunFilePath(dir_->string(), e); }
  static std::filesystem::path* dir_;
};
std::filesystem::path* ReplayAnalyses::dir_ = nullptr;

TEST_F(ReplayAnalyses, ReplayReproducesTheRunsEvaluation) {
  std::vector<double> loss;
  std::vector<int64_t> lengths;
  {
    h5::Reader r(Run("rope"));
    loss = r.root().OpenGroup("eval").ReadDoubles("loss");
    lengths = r.root().OpenGroup("eval").ReadInts("length");
  }
  ModelReplay replay(Run("rope"));
  for (size_t e = 0; e < lengths.size(); ++e)
    EXPECT_NEAR(replay.EvalLoss(static_cast<int>(lengths[e])), loss[e], 1e-6 * loss[e])
        << "length " << lengths[e];
  // An override changes the model: freezing every pair changes the loss.
  ModelReplay frozen(Run("rope"), {"encoding_options.rope.ablate_from=0"});
  EXPECT_GT(std::abs(frozen.EvalLoss(9) - loss[2]), 1e-4);
}

TEST_F(ReplayAnalyses, EntropyUnderLogNLambdaAndYarn) {
  const EntropyVariants ev = EntropyUnderVariants(Run("rope"));
  const int T = ev.sequence_length, H = ev.heads;
  ASSERT_EQ(ev.variants.size(), 4u);
  for (const auto& v : ev.variants) ASSERT_TRUE(v.not_applicable.empty()) << v.name;
  const auto& plain = ev.variants[0].entropy;
  const auto& logn = ev.variants[1].entropy;
  // Layer 0 sees the same logits times max(1, ln(p+1)/ln L) >= 1: entropy of softmax(beta z) does
  // not grow with beta, and falls strictly where beta > 1 (queries beyond the training length).
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < T; ++i) {
      const size_t at = static_cast<size_t>(h) * T + i;
      EXPECT_LE(logn[at], plain[at] + 1e-5) << "head " << h << " query " << i;
      if (i > ev.train_tokens + 1 && plain[at] > 1e-3) {
        EXPECT_LT(logn[at], plain[at]) << i;
      }
    }
  // The Lambda mask caps the visible keys at the window plus the global tokens.
  const auto& lam = ev.variants[3];
  for (int i = 0; i < T; ++i) {
    EXPECT_EQ(ev.variants[0].visible[i], i + 1);
    EXPECT_LE(lam.visible[i], ev.train_tokens + 2) << i;
  }
  EXPECT_LT(lam.visible[T - 1], T);
  // The uniform reference of each variant is ln(the keys it lets the query see), not ln T.
  {
    h5::Writer scratch((*dir_ / "entropy_report.h5").string());
    const std::string report = WriteEntropyVariants(ev, scratch.root());
    EXPECT_NE(report.find(fmt::format(
                  "plain {:.2f} (uniform {:.2f})",
                  [&] {
                    double e = 0;
                    for (int lh = 0; lh < ev.layers * H; ++lh)
                      e += plain[static_cast<size_t>(lh) * T + T - 1];
                    return e / (ev.layers * H);
                  }(),
                  std::log(T))),
              std::string::npos)
        << report;
    EXPECT_NE(report.find(fmt::format("(uniform {:.2f})", std::log(lam.visible[T - 1]))),
              std::string::npos)
        << report;
  }
  // Plain = the entropy of the stored probe (every probe sequence stored).
  h5::Reader r(Run("rope"));
  const auto geo = r.root()
                       .OpenGroup("analysis")
                       .OpenGroup("geometry")
                       .OpenGroup("length_9")
                       .ReadDoubles("entropy_by_query");
  ASSERT_EQ(geo.size(), plain.size());
  for (size_t i = 0; i < geo.size(); ++i) EXPECT_NEAR(geo[i], plain[i], 1e-4);
  // NoPE: the rope-only variants name their reason; plain and lambda are there.
  const EntropyVariants en = EntropyUnderVariants(Run("nope"));
  EXPECT_TRUE(en.variants[0].not_applicable.empty());
  EXPECT_NE(en.variants[1].not_applicable.find("not rope"), std::string::npos);
  EXPECT_NE(en.variants[2].not_applicable.find("not rope"), std::string::npos);
  EXPECT_TRUE(en.variants[3].not_applicable.empty());
}

TEST_F(ReplayAnalyses, ExpectationAtEveryEvaluationLengthMatchesTheStoredProbe) {
  const EmpiricalExpectation e = MeasureExpectation(Run("rope"));
  ASSERT_EQ(e.lengths, (std::vector<int>{2, 5, 9, 14}));
  const uint64_t LH = e.layers * e.heads, M = e.max_tokens;
  // Length 9 is also a probe length whose every sequence is stored: same mean by distance.
  h5::Reader r(Run("rope"));
  const auto stored = r.root()
                          .OpenGroup("analysis")
                          .OpenGroup("geometry")
                          .OpenGroup("length_9")
                          .ReadDoubles("logit_mean_by_distance");
  const uint64_t T = e.sequence_lengths[2];
  ASSERT_EQ(stored.size(), LH * T);
  for (uint64_t lh = 0; lh < LH; ++lh)
    for (uint64_t n = 0; n < T; ++n)
      EXPECT_NEAR(e.mean[(2 * LH + lh) * M + n], stored[lh * T + n], 1e-4) << lh << " " << n;
  // Shorter lengths leave the distances they never reach as NaN.
  const uint64_t T0 = e.sequence_lengths[0];
  EXPECT_TRUE(std::isnan(e.mean[(0 * LH + 0) * M + T0]));
  EXPECT_FALSE(std::isnan(e.mean[(0 * LH + 0) * M + T0 - 1]));
  // The spread at distance n is the standard deviation of the logits z_{i, i-n} over the probe's
  // sequences and queries: recomputed here, in two passes, from the stored probe logits of length 9
  // ([sample, layer, head, query, key], -inf where masked).
  std::vector<uint64_t> dims;
  const auto z = r.root().OpenGroup("probe").OpenGroup("length_9").ReadDoubles("logits", &dims);
  ASSERT_EQ(dims, (std::vector<uint64_t>{2, e.layers, e.heads, T, T}));
  for (uint64_t lh = 0; lh < LH; ++lh)
    for (uint64_t n = 0; n < T; ++n) {
      std::vector<double> at_n;
      for (uint64_t s = 0; s < 2; ++s)
        for (uint64_t i = n; i < T; ++i) {
          const double x = z[((s * LH + lh) * T + i) * T + (i - n)];
          if (std::isfinite(x)) at_n.push_back(x);
        }
      ASSERT_EQ(at_n.size(), 2 * (T - n)) << "causal: every key at or before the query is seen";
      double mean = 0, var = 0;
      for (double x : at_n) mean += x / at_n.size();
      for (double x : at_n) var += (x - mean) * (x - mean) / at_n.size();
      const double sd = std::sqrt(var);
      EXPECT_NEAR(e.sd[(2 * LH + lh) * M + n], sd, 1e-4 * (1 + sd)) << lh << " " << n;
    }
  for (size_t i = 0; i < e.resolution.size(); ++i) EXPECT_LT(e.resolution_b[i], e.resolution[i]);
  // Length 5 is the training length: its training window is every distance. A flat curve over K
  // distances has resolution 1/K^2; beyond training the window keeps N fixed.
  ASSERT_EQ(e.train_tokens, static_cast<int>(e.sequence_lengths[1]));
  for (uint64_t lh = 0; lh < LH; ++lh)
    EXPECT_DOUBLE_EQ(e.resolution_window[1 * LH + lh], e.resolution[1 * LH + lh]);
  for (size_t x = 0; x < e.lengths.size(); ++x) {
    const double K = static_cast<double>(e.sequence_lengths[x]);
    EXPECT_NEAR(e.resolution_flat[x], 1 / (K * K), 1e-15) << x;
    const double W = std::min<double>(K, e.train_tokens);
    EXPECT_NEAR(e.resolution_flat_window[x], 1 / (W * W), 1e-15) << x;
  }
}

// Scores by position replay /eval: their mean over the scored targets is /eval/loss at each length,
// and the last window with its whole sequence is read off the same pass. Copy answers a prompt
// that lies before the last window, so the window alone is no fair input: the split is not
// computed and says why.
TEST_F(ReplayAnalyses, PositionScoresReplayTheEvaluationAndRefuseTheWindowSplitOnCopy) {
  for (const std::string enc : {"rope", "nope"}) {
    const PositionScores p = MeasurePositionScores(Run(enc));
    std::vector<double> loss;
    {
      h5::Reader r(Run(enc));
      loss = r.root().OpenGroup("eval").ReadDoubles("loss");
    }
    ASSERT_EQ(p.lengths, (std::vector<int>{2, 5, 9, 14}));
    EXPECT_EQ(p.window, 11);
    const uint64_t M = p.max_tokens;
    for (size_t x = 0; x < p.lengths.size(); ++x) {
      EXPECT_NEAR(p.loss[x], loss[x], 1e-5 * loss[x]) << enc << " " << x;
      double sum = 0, count = 0;
      for (uint64_t t = 0; t < M; ++t)
        if (p.scored_by_position[x * M + t] > 0) {
          sum += p.loss_by_position[x * M + t] * p.scored_by_position[x * M + t];
          count += p.scored_by_position[x * M + t];
        }
      EXPECT_NEAR(sum / count, p.loss[x], 1e-9 * p.loss[x]);
      EXPECT_TRUE(std::isnan(p.window_only_loss[x]) && std::isnan(p.window_shifted_loss[x]));
    }
    EXPECT_NE(p.window_split_not_applicable.find("not a stationary source"), std::string::npos);
    // Within training the window is the whole sequence.
    EXPECT_EQ(p.last_window_loss[0], p.loss[0]);
    EXPECT_NE(p.last_window_loss[3], p.loss[3]);
  }
}

// Linear probes for position: the embedded input of NoPE carries no position of its own (the probe
// for t does no better than the fit set's mean), and nothing of where the separator is; the fit
// set spans the evaluation lengths <= N (2 and 5), so the separator sits at two positions and the
// two probes are distinct.
TEST_F(ReplayAnalyses, PositionProbesReadPositionWhereTheInputCarriesIt) {
  const PositionProbes nope = MeasurePositionProbes(Run("nope"));
  EXPECT_EQ(nope.train_tokens, 11);
  EXPECT_EQ(nope.long_tokens, 29);
  EXPECT_EQ(nope.fit_lengths, (std::vector<int>{2, 5}));
  const PositionProbeReading& in = nope.residual[0];
  EXPECT_GT(in.index_rmse_in_range, 0.6 * in.index_chance_in_range) << "token identity alone";
  ASSERT_TRUE(in.separator_applicable) << in.separator_note;
  EXPECT_GT(in.separator_rmse_in_range, 0.6 * in.separator_chance_in_range);
  for (const PositionProbeReading& r : nope.residual) {
    EXPECT_TRUE(r.ood_seen >= 0 && r.ood_seen <= 1);
    EXPECT_TRUE(std::isnan(r.beyond_accuracy) ||
                (r.beyond_accuracy >= 0 && r.beyond_accuracy <= 1));
    EXPECT_GT(r.rows_seen, 0);
    EXPECT_GT(r.rows_unseen, 0);
  }
}

// The gradient receptive field: shares over distance sum to 1 at every length, the 50% context
// is within the 90% one, and nothing lies past the sequence.
TEST_F(ReplayAnalyses, ReceptiveFieldSharesSumToOneOverTheSequence) {
  const ReceptiveField rf = MeasureReceptiveField(Run("rope"));
  ASSERT_EQ(rf.lengths, (std::vector<int>{2, 5, 9, 14}));
  const uint64_t M = rf.max_tokens;
  for (size_t x = 0; x < rf.lengths.size(); ++x) {
    const uint64_t T = static_cast<uint64_t>(rf.sequence_lengths[x]);
    double sum = 0;
    for (uint64_t d = 0; d < T; ++d) {
      EXPECT_GE(rf.share[x * M + d], 0.0);
      sum += rf.share[x * M + d];
    }
    EXPECT_NEAR(sum, 1.0, 1e-9) << x;
    for (uint64_t d = T; d < M; ++d) EXPECT_TRUE(std::isnan(rf.share[x * M + d]));
    EXPECT_LE(rf.context50[x], rf.context90[x]);
    EXPECT_LT(rf.context90[x], static_cast<double>(T));
  }
  EXPECT_EQ(rf.share_beyond_window[0], 0.0) << "a 5-token sequence has no distance >= 11";
}

// The embedded input of a sinusoidal model holds sin/cos of t: a linear probe reads the index off
// it within the fit range, but not the distance to the separator, which no position's own input
// knows (a probe fitted at one length, where that distance is the index minus N, read one for the
// other).
TEST(PositionProbes, SinusoidalInputCarriesTheIndexButNotTheSeparatorDistance) {
  const auto dir = testing::FreshTempDir("position_probes");
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"model.encodings=sinusoidal", "train.steps=5", "eval.lengths=2,3,4,5,14", "probe.replay=0"});
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "sinusoidal", o).state, "completed");
  const PositionProbes p = MeasurePositionProbes(RunFilePath(dir.string(), "sinusoidal"));
  const PositionProbeReading& in = p.residual[0];
  EXPECT_LT(in.index_rmse_in_range, 0.3 * in.index_chance_in_range);
  ASSERT_TRUE(in.separator_applicable);
  EXPECT_GT(in.separator_rmse_in_range, 0.6 * in.separator_chance_in_range);
  std::filesystem::remove_all(dir);
}

// On a language-modelling source the window alone is a fair input; an absolute encoding scores it
// differently at its own positions and at a short sequence's (a relative one does not:
// tests/experiments/planted_position_scores_test.cc).
TEST(PositionScores, AnAbsoluteEncodingScoresTheShiftedWindowDifferently) {
  const auto dir = testing::FreshTempDir("position_scores");
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"task.name=markov_lm", "task.vocab=0", "model.encodings=sinusoidal", "train.steps=20",
       "train.max_length=16", "eval.lengths=16,48", "probe.lengths=16", "probe.replay=0"});
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "sinusoidal", o).state, "completed");
  const PositionScores p = MeasurePositionScores(RunFilePath(dir.string(), "sinusoidal"));
  EXPECT_TRUE(p.window_split_not_applicable.empty());
  EXPECT_GT(std::abs(p.window_only_loss[1] - p.window_shifted_loss[1]), 1e-3);
  std::filesystem::remove_all(dir);
}

// Keeps a copy of the rotated queries and keys each (layer, head) hands the logit-term site, for
// the pair contributions to be recomputed outside analysis/rotary_pair_probe.cc. A forward pass of
// one sequence runs each head of a layer as one task, so the slots are written by one thread each.
class QkRecorder final : public ForwardingEncoding<float> {
 public:
  QkRecorder(std::unique_ptr<PositionEncoding<float>> inner, int layers, int heads)
      : ForwardingEncoding<float>(std::move(inner)),
        heads_(heads),
        q_(layers * heads),
        k_(layers * heads) {}
  unsigned Sites() const override { return inner().Sites() | kSiteLogitTerm; }
  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<float>& qk, float* scores, long lds) const override {
    const int slot = ctx.layer * heads_ + ctx.head, D = ctx.head_dim;
    q_[slot].resize(static_cast<size_t>(ctx.T) * D);
    k_[slot].resize(static_cast<size_t>(ctx.T) * D);
    for (int i = i0; i < i1; ++i)
      for (int c = 0; c < D; ++c) q_[slot][i * D + c] = qk.q[i * qk.ld + c];
    for (int j = j0; j < j1; ++j)
      for (int c = 0; c < D; ++c) k_[slot][j * D + c] = qk.k[j * qk.ld + c];
    inner().AddLogitTerm(ctx, i0, i1, j0, j1, qk, scores, lds);
  }
  const std::vector<float>& q(int slot) const { return q_[slot]; }
  const std::vector<float>& k(int slot) const { return k_[slot]; }

 private:
  int heads_;
  mutable std::vector<std::vector<float>> q_, k_;
};

// Pair k's contribution to the logit of (query i, key j) is c_k = (q_a k_a + q_b k_b) / sqrt(D)
// with q, k after rotation and the run's "half" pairing (a, b) = (k, k + D/2) (pe/rope.h); near
// pairs are those with i - j below the training sequence (11 tokens: 5 copied, 5 written, the end
// token; identity positions, causal attention), and near_abs / far_abs are the mean |c_k| over
// them on the longest probe (9: 19 tokens). Recomputed here from the replayed queries and keys,
// whose contributions must also add up to the logits the run stored for the same probe.
void ExpectPairContributionsFromTheirDefinition(const std::string& run, const RotaryPairStats& c) {
  const int L = c.layers, H = c.heads, P = c.pairs, D = 2 * P, split = 11;
  std::vector<uint64_t> dims;
  std::vector<double> stored;
  {
    h5::Reader r(run);
    stored = r.root().OpenGroup("probe").OpenGroup("length_9").ReadDoubles("logits", &dims);
  }
  ASSERT_EQ(dims.size(), 5u);
  const int T = static_cast<int>(dims[3]);
  ASSERT_EQ(T, 19);
  QkRecorder* rec = nullptr;
  ModelReplay replay(run, {}, [&](std::unique_ptr<PositionEncoding<float>> inner) {
    auto r = std::make_unique<QkRecorder>(std::move(inner), L, H);
    rec = r.get();
    return r;
  });
  std::vector<double> near(L * H * P, 0.0), far(L * H * P, 0.0), near_n(L * H, 0.0),
      far_n(L * H, 0.0);
  const double inv_sqrt_d = 1 / std::sqrt(static_cast<double>(D));
  int sequences = 0;
  replay.ForEachProbeSequence(9, [&](int s, int T_seq) {
    ASSERT_EQ(T_seq, T);
    ++sequences;
    for (int lh = 0; lh < L * H; ++lh) {
      const std::vector<float>& q = rec->q(lh);
      const std::vector<float>& k = rec->k(lh);
      ASSERT_EQ(q.size(), static_cast<size_t>(T) * D);
      for (int i = 0; i < T; ++i)
        for (int j = 0; j <= i; ++j) {
          double logit = 0;
          for (int m = 0; m < P; ++m) {
            const double ck = (static_cast<double>(q[i * D + m]) * k[j * D + m] +
                               static_cast<double>(q[i * D + m + P]) * k[j * D + m + P]) *
                              inv_sqrt_d;
            logit += ck;
            (i - j < split ? near : far)[lh * P + m] += std::abs(ck);
          }
          (i - j < split ? near_n : far_n)[lh] += 1;
          const double z = stored[((static_cast<size_t>(s) * L * H + lh) * T + i) * T + j];
          EXPECT_NEAR(logit, z, 1e-4 * (1 + std::abs(z))) << "sample " << s << " " << i << "," << j;
        }
    }
  });
  EXPECT_EQ(sequences, 2);
  ASSERT_EQ(c.near_abs.size(), near.size());
  ASSERT_EQ(c.far_abs.size(), far.size());
  for (int lh = 0; lh < L * H; ++lh) {
    EXPECT_EQ(c.near_count[lh], near_n[lh]);
    EXPECT_EQ(c.far_count[lh], far_n[lh]);
    for (int m = 0; m < P; ++m) {
      const double n_abs = near[lh * P + m] / near_n[lh], f_abs = far[lh * P + m] / far_n[lh];
      EXPECT_NEAR(c.near_abs[lh * P + m], n_abs, 1e-6 * n_abs) << "near " << lh << " pair " << m;
      EXPECT_NEAR(c.far_abs[lh * P + m], f_abs, 1e-6 * f_abs) << "far " << lh << " pair " << m;
    }
  }
}

TEST_F(ReplayAnalyses, RotaryPairsAreConsistentWithTheRun) {
  const RotaryPairAnalysis a = AnalyzeRotaryPairs(Run("rope"));
  ASSERT_EQ(a.pairs, 4);
  int complete = 0;
  for (int k = 0; k < a.pairs; ++k) {
    complete += a.period[k] <= a.train_tokens;
    EXPECT_NEAR(a.train_angle[k], a.inv_freq[k] * (a.train_tokens - 1), 1e-9)
        << "identity positions: the largest training distance is T - 1";
  }
  EXPECT_EQ(a.predicted_boundary, complete);
  std::vector<double> loss;
  {
    h5::Reader r(Run("rope"));
    loss = r.root().OpenGroup("eval").ReadDoubles("loss");
  }
  const size_t E = a.eval_lengths.size();
  for (int m = 0; m < 2; ++m)
    for (size_t e = 0; e < E; ++e)
      EXPECT_NEAR(a.ablation_loss[(m * (a.pairs + 1) + a.pairs) * E + e], loss[e], 1e-6 * loss[e])
          << "cut = P ablates nothing";
  // Removing every pair leaves a model without position: a different loss.
  EXPECT_GT(std::abs(a.ablation_loss[(1 * (a.pairs + 1) + 0) * E + 1] - loss[1]), 1e-4);
  const auto& c = a.contributions;
  for (size_t lh = 0; lh < c.supremum.size(); ++lh)
    EXPECT_GE(c.supremum[lh], c.observed[lh] - 1e-5);
  ExpectPairContributionsFromTheirDefinition(Run("rope"), c);
  // The written file: report and datasets; NoPE has no rotary group.
  const std::string report = AnalyzeRunFile(Run("rope"));
  EXPECT_NE(report.find("post-critical ablation"), std::string::npos) << report;
  h5::Reader r(Run("rope"));
  const h5::Group rot = r.root().OpenGroup("analysis").OpenGroup("rotary");
  std::vector<uint64_t> dims;
  rot.ReadDoubles("ablation_loss", &dims);
  EXPECT_EQ(dims, (std::vector<uint64_t>{2, 5, E}));
  EXPECT_TRUE(r.root().OpenGroup("analysis").OpenGroup("entropy_variants").Has("lambda"));
  EXPECT_TRUE(r.root().OpenGroup("analysis").OpenGroup("expectation").Has("resolution"));
  EXPECT_NE(AnalyzeRunFile(Run("nope")).find("rotary pair analysis: not applicable"),
            std::string::npos);
  h5::Reader rn(Run("nope"));
  EXPECT_FALSE(rn.root().OpenGroup("analysis").Has("rotary"));
  // Figures 09, 10 and 12-15 from the files.
  AnalyzeRunFile(Run("nope"));
  for (const auto& png : {DrawEntropyVariants(dir_->string()), DrawRotaryPairs(dir_->string()),
                          DrawPositionScores(dir_->string()), DrawHeads(dir_->string()),
                          DrawPositionProbes(dir_->string()), DrawReceptiveField(dir_->string())})
    EXPECT_TRUE(std::filesystem::exists(png)) << png;
}

}  // namespace
}  // namespace lexp

namespace lexp {
namespace {

// Under randomized positions (Ruoss et al. 2023) training shows distances up to positions_max, far
// beyond the token count: the critical boundary counts the pairs whose period fits in the trained
// distances, not in the token count (with base 100 and head width 8 the periods are 6.3, 19.9,
// 62.8, 198.7 tokens: 1 fits in the 11 training tokens, all 4 in a span of ~256).
TEST(RotaryPairs, CriticalBoundaryUsesTheDistancesTrainingShowed) {
  const auto dir = testing::FreshTempDir("rotary_randomized");
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"model.encodings=rope", "train.steps=10", "model.positions=randomized",
       "model.positions_max=256", "encoding_options.rope.base=100", "probe.replay=0"});
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "rope", o).state, "completed");
  const RotaryPairAnalysis a = AnalyzeRotaryPairs(RunFilePath(dir.string(), "rope"));
  EXPECT_EQ(a.train_tokens, 11);
  EXPECT_GT(a.train_distance, 200) << "256 draws of 11 positions out of 256";
  EXPECT_EQ(a.train_span, a.train_distance + 1);
  int fits = 0;
  for (double p : a.period) fits += p <= a.train_span;
  EXPECT_EQ(a.predicted_boundary, fits);
  EXPECT_GE(a.predicted_boundary, 3) << "the token count alone would give 1";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp

namespace lexp {
namespace {

// With every evaluation length within training there is no "beyond" to measure the ablation on:
// the boundary is not applicable (-1, said in the report and the file), not cut 0.
TEST(RotaryPairs, NoLengthBeyondTrainingMakesTheMeasuredBoundaryNotApplicable) {
  const auto dir = testing::FreshTempDir("rotary_within");
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"model.encodings=rope", "train.steps=5", "eval.lengths=2,5", "probe.replay=0"});
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "rope", o).state, "completed");
  const std::string run = RunFilePath(dir.string(), "rope");
  const std::string report = AnalyzeRunFile(run);
  EXPECT_NE(report.find("measured boundary not applicable"), std::string::npos) << report;
  h5::Reader r(run);
  const h5::Group rot = r.root().OpenGroup("analysis").OpenGroup("rotary");
  EXPECT_EQ(rot.AttrInt("measured_boundary_freeze"), -1);
  EXPECT_EQ(rot.AttrInt("measured_boundary_remove"), -1);
  EXPECT_TRUE(rot.HasAttr("measured_boundary_not_applicable"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp

namespace lexp {
namespace {

// Rows of the rotary-pair figure compare runs: every column shares its axes across rows.
TEST(RotaryPairsFigure, RowsShareTheirAxes) {
  const auto dir = testing::FreshTempDir("rotary_axes");
  RecipeConfig c = testing::TinyCopyRecipe({"model.n_layers=1", "model.encodings=rope"});
  for (const char* base : {"100", "10000"}) {
    RecipeConfig one = c;
    ApplyOverrides(one, {std::string("encoding_options.rope.base=") + base});
    RunOptions o;
    o.out_dir = dir.string();
    o.name = std::string("rope-base") + base;
    ASSERT_EQ(TrainAndEvaluate(one, "rope", o).state, "completed");
  }
  DrawRotaryPairs(dir.string());
  std::ifstream f(dir / "figures" / "rotary_pairs.gp");
  std::map<std::string, int> ranges;
  for (std::string line; std::getline(f, line);)
    if (line.rfind("set yrange", 0) == 0 || line.rfind("set xrange", 0) == 0) ++ranges[line];
  EXPECT_FALSE(ranges.empty());
  for (const auto& [line, n] : ranges)
    EXPECT_EQ(n % 2, 0) << line << ": set " << n << " times for 2 rows (every row the same range)";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
