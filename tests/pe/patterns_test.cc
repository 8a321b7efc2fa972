// Attention patterns: index sets of formulas.md 8.15, distance bounds (8.16 item 11), gradients and
// the streaming path through a non-contiguous pattern, and recipe-level checks.
#include "pe/patterns.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>

#include "experiments/trainer.h"
#include "nn/io/hdf5.h"
#include "nn/ops/attention.h"
#include "pe/registry.h"
#include "tests/testing/gradcheck.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

std::set<int> VisibleKeys(const AttentionPattern& p, int i, int T) {
  int b, e;
  p.KeyBounds(i, T, &b, &e);
  std::set<int> s;
  for (int j = b; j < e; ++j)
    if (p.Contiguous() || p.Visible(i, j, T)) s.insert(j);
  return s;
}

std::set<int> Range(int a, int b) {  // [a, b]
  std::set<int> s;
  for (int j = a; j <= b; ++j) s.insert(j);
  return s;
}

TEST(Patterns, BlockwiseCausalMatchesReferenceIndexSets) {
  const BlockwiseCausalPattern bca(8);
  for (int q = 0; q < 8; ++q) EXPECT_EQ(VisibleKeys(bca, q, 12), Range(0, q)) << q;
  for (int q = 8; q < 12; ++q) EXPECT_EQ(VisibleKeys(bca, q, 12), Range(4, q)) << q;
  std::vector<double> pos(40);
  std::iota(pos.begin(), pos.end(), 0.0);
  for (int i = 0; i < 40; ++i)
    for (int j : VisibleKeys(bca, i, 40)) EXPECT_LE(bca.EffectiveDistance(i, j, pos.data()), 7);
  // Query at offset r inside its half-block c >= 1 sees distances 0..4+r.
  EXPECT_EQ(VisibleKeys(bca, 4 * 5 + 3, 40), Range(4 * 4, 4 * 5 + 3));
}

TEST(Patterns, LambdaMatchesReferenceIndexSetAndCapsDistance) {
  const LambdaPattern lam(2, 4, 4);
  std::vector<double> pos(30);
  std::iota(pos.begin(), pos.end(), 0.0);
  EXPECT_EQ(VisibleKeys(lam, 9, 30), (std::set<int>{0, 1, 6, 7, 8, 9}));
  for (int j : {6, 7, 8, 9}) EXPECT_EQ(lam.EffectiveDistance(9, j, pos.data()), 9 - j);
  for (int j : {0, 1}) EXPECT_EQ(lam.EffectiveDistance(9, j, pos.data()), 4);
  for (int i = 2 + 4 - 1; i < 30; ++i) EXPECT_EQ(VisibleKeys(lam, i, 30).size(), 6u) << i;
  // A global key inside the local window is counted once, at its true distance.
  EXPECT_EQ(VisibleKeys(lam, 4, 30), Range(0, 4));
  EXPECT_EQ(lam.EffectiveDistance(4, 1, pos.data()), 3);
  for (int i = 0; i < 30; ++i)
    for (int j : VisibleKeys(lam, i, 30)) EXPECT_LE(lam.EffectiveDistance(i, j, pos.data()), 4);
}

TEST(Patterns, SlidingWindowSeesTheLastWKeys) {
  const SlidingWindowPattern w(3);
  EXPECT_EQ(VisibleKeys(w, 0, 10), Range(0, 0));
  EXPECT_EQ(VisibleKeys(w, 7, 10), Range(5, 7));
  EXPECT_EQ(CreatePattern(PatternConfig{}), nullptr) << "full = the model's own mask";
  EXPECT_THROW(CreatePattern(PatternConfig{"diagonal", 3, 0, 0}), InputError);
  EXPECT_THROW(CreatePattern(PatternConfig{"bca", 5, 0, 0}), InputError);
}

TEST(Patterns, T5ThroughLambdaHasCorrectGradientsAndStreamingMatches) {
  const AttentionShape sh{1, 70, 2, 4};
  auto enc = CreateEncoding<double>("t5", {}, EncodingShape{8, 2, 1, true, 128});
  Rng rng(2);
  enc->Init(rng);
  const LambdaPattern pat(3, 9, 200);  // cap beyond the sequence: T5 must bucket it directly
  std::vector<double> pos(70);
  std::iota(pos.begin(), pos.end(), 0.0);
  MatD q(70, 8), k(70, 8), v(70, 8), w(70, 8);
  testing::FillNormal(q, rng);
  testing::FillNormal(k, rng);
  testing::FillNormal(v, rng);
  testing::FillNormal(w, rng);
  auto loss = [&] {
    enc->Prepare(pos);
    MatD out;
    AttentionCache<double> c;
    AttentionForward(q, k, v, sh, pos, pat, *enc, 0, false, c, out);
    return out.cwiseProduct(w).sum();
  };
  enc->Prepare(pos);
  MatD out, d_q = MatD::Zero(70, 8), d_k = MatD::Zero(70, 8), d_v = MatD::Zero(70, 8);
  AttentionCache<double> cache;
  AttentionForward(q, k, v, sh, pos, pat, *enc, 0, true, cache, out);
  EXPECT_NEAR(out.cwiseProduct(w).sum(), loss(), 1e-12);
  for (auto& p : enc->Parameters()) std::fill(p.grad, p.grad + p.size, 0.0);
  AttentionBackward(q, k, v, sh, pos, pat, *enc, 0, cache, w, d_q, d_k, d_v);
  std::vector<ParamRef<double>> params = {{"q", q.data(), d_q.data(), q.size()},
                                          {"v", v.data(), d_v.data(), v.size()}};
  for (auto& p : enc->Parameters()) params.push_back(p);
  testing::CheckGradients(loss, params, testing::CopyGrads(params), 40);
}

TEST(Patterns, RecipesRefuseWhatCannotWorkAndTrainWhatCan) {
  auto error_of = [](const std::vector<std::string>& sets) {
    try {
      testing::TinyCopyRecipe(sets);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of({"model.encodings=rope", "model.pattern=lambda"}).find("q/k rotation"),
            std::string::npos);
  EXPECT_NE(error_of({"model.layout=encoder", "model.pattern=bca"}).find("causal pattern"),
            std::string::npos);
  EXPECT_NE(error_of({"model.pattern=bca", "model.pattern_window=5"}).find("even"),
            std::string::npos);
  // ALiBi evaluated through a 4-key sliding window: the probe's uniform-attention bound is ln 4.
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"model.encodings=alibi", "model.pattern=sliding_window", "model.pattern_window=4"});
  const auto dir = testing::FreshTempDir("patterns");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "alibi", o).state, "completed");
  h5::Reader r(RunFilePath(dir.string(), "alibi"));
  for (double lv : r.root().OpenGroup("analysis").ReadDoubles("log_visible_keys"))
    EXPECT_LE(lv, std::log(4.0) + 1e-12);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
