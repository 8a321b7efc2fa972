// Landmark attention (nn/ops/landmark.h): the grouped softmax against its definition written out
// by hand, the weights of a row summing to 1 with landmarks never read as values, top-k retrieval
// keeping the blocks with the largest landmark logits, a sequence too short for a landmark equal to
// the plain model, and every gradient of a model with landmarks against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "nn/model/transformer.h"
#include "nn/ops/cross_entropy.h"
#include "pe/registry.h"
#include "tests/testing/gradcheck.h"
#include "tests/testing/tiny_model.h"

namespace lexp {
namespace {

using testing::CheckGradients;
using testing::CopyGrads;

// Block length 2: rows 0 1 [L0=2] 3 4 [L1=5] 6 7 [L2=8] 9 ...; query 7 is in block 2.
TEST(Landmark, GroupedSoftmaxIsThePapersDefinition) {
  const int L = 2, i = 7, n = 8;
  const std::vector<double> a = {0.3, -1.2, 0.8, 2.0, 0.1, -0.4, 1.1, 0.5};
  std::vector<double> w(n), g(n);
  std::vector<int> order;
  LandmarkSoftmaxRow(i, L, 0, a.data(), n, w.data(), g.data(), order);
  // Last group: own tokens 6, 7 and landmarks 2, 5.
  const double z = std::exp(1.1) + std::exp(0.5) + std::exp(0.8) + std::exp(-0.4);
  EXPECT_NEAR(w[6], std::exp(1.1) / z, 1e-15);
  EXPECT_NEAR(w[7], std::exp(0.5) / z, 1e-15);
  const double gate0 = std::exp(0.8) / z, gate1 = std::exp(-0.4) / z;
  const double z0 = std::exp(0.3) + std::exp(-1.2), z1 = std::exp(2.0) + std::exp(0.1);
  EXPECT_NEAR(w[0], gate0 * std::exp(0.3) / z0, 1e-15);
  EXPECT_NEAR(w[1], gate0 * std::exp(-1.2) / z0, 1e-15);
  EXPECT_NEAR(w[3], gate1 * std::exp(2.0) / z1, 1e-15);
  EXPECT_NEAR(w[4], gate1 * std::exp(0.1) / z1, 1e-15);
  EXPECT_EQ(w[2], 0) << "a landmark's value is never read";
  EXPECT_EQ(w[5], 0);
  EXPECT_NEAR(std::accumulate(w.begin(), w.end(), 0.0), 1, 1e-15);
  EXPECT_NEAR(g[2], gate0, 1e-15);
  // A landmark query sees its block's tokens but not itself.
  std::vector<double> wl(9), gl(9);
  std::vector<double> al = a;
  al.push_back(5.0);  // row 8: block 2's landmark, as a query
  LandmarkSoftmaxRow(8, L, 0, al.data(), 9, wl.data(), gl.data(), order);
  EXPECT_EQ(wl[8], 0);
  EXPECT_NEAR(wl[6] / wl[7], std::exp(1.1 - 0.5), 1e-12);
  // top_k = 1 keeps block 0 (landmark logit 0.8 > -0.4) and nothing of block 1.
  LandmarkSoftmaxRow(i, L, 1, a.data(), n, w.data(), g.data(), order);
  EXPECT_EQ(w[3] + w[4] + g[5], 0);
  const double z_top = std::exp(1.1) + std::exp(0.5) + std::exp(0.8);
  EXPECT_NEAR(w[0] + w[1], std::exp(0.8) / z_top, 1e-15);
  EXPECT_NEAR(std::accumulate(w.begin(), w.end(), 0.0), 1, 1e-15);
}

TEST(Landmark, RetrievedBlocksAreSeenJustBeforeTheQuerysBlock) {
  std::vector<double> pos(40);
  std::iota(pos.begin(), pos.end(), 0.0);
  const LandmarkPattern remapped(3, 2, true), plain(3, 2, false), training(3, 0, true);
  // Query 29 is in block 7 (rows 28..31); key 5 is token 1 of block 1: seen as if block 1 were
  // block 6, at distance 29 - (6 * 4 + 1) = 4.
  EXPECT_EQ(remapped.EffectiveDistance(29, 5, pos.data()), 4);
  EXPECT_EQ(remapped.EffectiveDistance(29, 28, pos.data()), 1) << "its own block: true distance";
  EXPECT_EQ(remapped.EffectiveDistance(29, 25, pos.data()), 4) << "the block before: true";
  for (int j = 0; j < 28; ++j) EXPECT_LE(remapped.EffectiveDistance(29, j, pos.data()), 8);
  EXPECT_FALSE(remapped.PlainDistance());
  EXPECT_EQ(plain.EffectiveDistance(29, 5, pos.data()), 24);
  EXPECT_TRUE(plain.PlainDistance());
  EXPECT_TRUE(training.PlainDistance()) << "every block in training: true distances";
}

TEST(Landmark, GroupedSoftmaxBackwardMatchesFiniteDifferences) {
  const int L = 3, n = 15;
  Rng rng(4);
  for (const int i : {2, 9, 11, 14})
    for (const int top_k : {0, 1}) {
      std::vector<double> a(n), dw(n), w(n), g(n);
      for (auto& x : a) x = rng.Normal();
      for (auto& x : dw) x = rng.Normal();
      std::vector<int> order;
      auto loss = [&](const std::vector<double>& logits) {
        std::vector<double> ww(n), gg(n);
        LandmarkSoftmaxRow(i, L, top_k, logits.data(), i + 1, ww.data(), gg.data(), order);
        double s = 0;
        for (int j = 0; j <= i; ++j) s += ww[j] * dw[j];
        return s;
      };
      LandmarkSoftmaxRow(i, L, top_k, a.data(), i + 1, w.data(), g.data(), order);
      std::vector<double> d = dw;
      LandmarkSoftmaxBackwardRow(i, L, g.data(), i + 1, d.data());
      for (int j = 0; j <= i; ++j) {
        std::vector<double> up = a, down = a;
        up[j] += 1e-6;
        down[j] -= 1e-6;
        EXPECT_NEAR(d[j], (loss(up) - loss(down)) / 2e-6, 1e-8) << i << " " << top_k << " " << j;
      }
    }
}

ModelConfig Tiny(int block) {
  ModelConfig cfg = testing::TinyModelConfig();
  cfg.landmark_block = block;
  return cfg;
}

TEST(Landmark, ASequenceShorterThanABlockIsThePlainModel) {
  const int B = 2, T = 4;
  EncodingShape es{8, 2, 2, true, T, T, 7};
  auto enc = CreateEncoding<double>("rope", {}, es);
  Transformer<double> plain(Tiny(0), enc.get()), landmark(Tiny(5), enc.get());
  Rng r1(2), r2(2);
  plain.Init(r1);
  landmark.Init(r2);
  std::vector<int> tokens = {1, 2, 3, 4, 5, 6, 0, 1};
  std::vector<double> pos = {0, 1, 2, 3};
  MatD a, b;
  plain.Forward(tokens, B, T, pos, false, false, a);
  landmark.Forward(tokens, B, T, pos, false, false, b);
  EXPECT_LT((a - b).cwiseAbs().maxCoeff(), 1e-14);
}

TEST(Landmark, CapturedMapsAreTheRealTokensAndSumToOne) {
  const int B = 1, T = 11;
  EncodingShape es{8, 2, 2, true, T, T, 7};
  auto enc = CreateEncoding<double>("alibi", {}, es);
  Transformer<double> model(Tiny(3), enc.get());
  Rng rng(3);
  model.Init(rng);
  std::vector<int> tokens(T);
  for (int& t : tokens) t = static_cast<int>(rng.UniformInt(0, 6));
  std::vector<double> pos(T);
  std::iota(pos.begin(), pos.end(), 0.0);
  MatD logits;
  model.Forward(tokens, B, T, pos, false, true, logits);
  ASSERT_EQ(logits.rows(), T);
  const MatD& p = model.Probs(1);
  ASSERT_EQ(p.rows(), 2 * T);
  ASSERT_EQ(p.cols(), T);
  for (int r = 0; r < 2 * T; ++r) {
    EXPECT_NEAR(p.row(r).sum(), 1, 1e-12) << r;
    EXPECT_EQ(p.row(r).tail(T - 1 - r % T).cwiseAbs().sum(), 0) << "causal";
  }
}

TEST(Landmark, EvaluationStreamsTheTrainingPassesWeights) {
  const int B = 2, T = 13;
  EncodingShape es{8, 2, 2, true, T, T, 7};
  auto enc = CreateEncoding<double>("rope", {}, es);
  Transformer<double> model(Tiny(4), enc.get());
  Rng rng(6);
  model.Init(rng);
  std::vector<int> tokens(B * T);
  for (int& t : tokens) t = static_cast<int>(rng.UniformInt(0, 6));
  std::vector<double> pos(T);
  std::iota(pos.begin(), pos.end(), 0.0);
  MatD train, eval;
  model.Forward(tokens, B, T, pos, true, false, train);
  model.Forward(tokens, B, T, pos, false, false, eval);
  EXPECT_LT((train - eval).cwiseAbs().maxCoeff(), 1e-12);
}

struct Case {
  std::string encoding;
  bool pre_ln;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.encoding << (c.pre_ln ? " pre-LN" : " post-LN");
}

class LandmarkGradients : public ::testing::TestWithParam<Case> {};

TEST_P(LandmarkGradients, EveryParameterMatchesFiniteDifferences) {
  const Case& tc = GetParam();
  const int B = 2, T = 10;
  ModelConfig cfg = Tiny(3);
  cfg.pre_ln = tc.pre_ln;
  EncodingShape es{8, 2, 2, true, 16, T, 7};
  auto enc = CreateEncoding<double>(tc.encoding, {}, es);
  Transformer<double> model(cfg, enc.get());
  Rng rng(8);
  model.Init(rng);
  const testing::TinyBatch batch = testing::MakeTinyBatch(B, T, 7, rng);
  // Training passes: every block, as the backward.
  auto loss = [&] { return testing::TinyLoss(model, batch, true); };
  testing::TinyGradients(model, batch);
  EXPECT_EQ(model.InputGradient().rows(), B * T);
  auto params = model.Parameters();
  bool has_landmark = false;
  for (const auto& p : params) has_landmark = has_landmark || p.name == "landmark_emb";
  EXPECT_TRUE(has_landmark);
  const auto res = CheckGradients(loss, params, CopyGrads(params), 6);
  EXPECT_GT(res.checked, 50);
}

INSTANTIATE_TEST_SUITE_P(Encodings, LandmarkGradients,
                         ::testing::Values(Case{"rope", true}, Case{"alibi", true},
                                           Case{"nope", true}, Case{"t5", true},
                                           Case{"rope", false}),
                         [](const auto& param_info) {
                           return param_info.param.encoding +
                                  (param_info.param.pre_ln ? "_preln" : "_postln");
                         });

}  // namespace
}  // namespace lexp
