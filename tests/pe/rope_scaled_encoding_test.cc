// `rope` with a scaling rule, at the level of the attention it plugs into (formulas.md 8.16 items
// 3, 5, 6 and pitfalls 2, 6, 7).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "experiments/recipe.h"
#include "experiments/trainer.h"
#include "nn/ops/attention.h"
#include "pe/registry.h"
#include "pe/rope.h"
#include "tests/testing/gradcheck.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

std::unique_ptr<PositionEncoding<double>> MakeRope(const std::map<std::string, std::string>& o,
                                                   int train_length = 64) {
  return CreateEncoding<double>("rope", o, EncodingShape{16, 2, 1, true, 1024, train_length});
}

TEST(RopeScaled, YarnTemperatureReachesTheLogitsExactlyOnce) {
  auto yarn = MakeRope({{"scaling", "yarn"}, {"factor", "4"}});
  auto* r = dynamic_cast<Rope<double>*>(yarn.get());
  ASSERT_NE(r, nullptr);
  const double m = 0.1 * std::log(4.0) + 1;
  EXPECT_NEAR(r->mscale(), m, 1e-15);
  EXPECT_TRUE(yarn->Uses(kSiteLogitScale));
  // Logits with yarn = mscale^2 * logits of the same rotation without temperature.
  auto by_parts = MakeRope({{"scaling", "ntk_by_parts"}, {"factor", "4"}});
  EXPECT_FALSE(by_parts->Uses(kSiteLogitScale));
  const AttentionShape sh{1, 9, 2, 8};
  Rng rng(4);
  MatD q(9, 16), k(9, 16), v(9, 16), out;
  testing::FillNormal(q, rng);
  testing::FillNormal(k, rng);
  testing::FillNormal(v, rng);
  std::vector<double> pos(9);
  std::iota(pos.begin(), pos.end(), 0.0);
  AttentionPattern pat(true);
  auto logits_of = [&](PositionEncoding<double>& enc) {
    enc.Prepare(pos);
    MatD qr = q, kr = k;
    for (int h = 0; h < 2; ++h) {
      AttentionContext ctx{0, h, 2, 8, 9, pos.data(), &pat, true};
      enc.TransformQK(ctx, true, qr.data() + h * 8, 16);
      enc.TransformQK(ctx, false, kr.data() + h * 8, 16);
    }
    AttentionCache<double> c;
    c.capture_logits = true;
    AttentionForward(qr, kr, v, sh, pos, pat, enc, 0, true, c, out);
    return c.logits;
  };
  const MatD a = logits_of(*yarn), b = logits_of(*by_parts);
  for (long i = 0; i < a.rows(); ++i)
    for (long j = 0; j <= i % 9; ++j) EXPECT_NEAR(a(i, j), m * m * b(i, j), 1e-12);
}

TEST(RopeScaled, LogNScalesEachQueryByItsPositionAndComposesWithYarn) {
  auto enc = MakeRope({{"log_n", "true"}, {"scaling", "yarn"}, {"factor", "2"}}, 16);
  ASSERT_TRUE(enc->Uses(kSiteLogitScale));
  std::vector<double> pos(64);
  std::iota(pos.begin(), pos.end(), 0.0);
  AttentionPattern pat(true);
  AttentionContext ctx{0, 0, 2, 8, 64, pos.data(), &pat, true};
  const double m = 0.1 * std::log(2.0) + 1;
  EXPECT_NEAR(enc->LogitScale(ctx, 10), m * m, 1e-15) << "inside L: only the temperature";
  EXPECT_NEAR(enc->LogitScale(ctx, 63), m * m * std::log(64.0) / std::log(16.0), 1e-15);
  EXPECT_THROW(MakeRope({{"log_n", "true"}}, 0), InputError);
}

TEST(RopeScaled, PositionInterpolationRotatesLikeThePositionDividedByS) {
  auto pi = MakeRope({{"scaling", "pi"}, {"factor", "2"}}), plain = MakeRope({});
  AttentionPattern pat(true);
  std::vector<double> x = {0.3, -1, 2, 0.5, 1, 1, -2, 0.1};
  auto rotate = [&](PositionEncoding<double>& e, double p) {
    std::vector<double> y = x;
    std::vector<double> pos = {p};
    e.Prepare(pos);
    AttentionContext ctx{0, 0, 1, 8, 1, pos.data(), &pat, true};
    e.TransformQK(ctx, true, y.data(), 8);
    return y;
  };
  const auto a = rotate(*pi, 126), b = rotate(*plain, 63);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
}

TEST(RopeScaled, DynamicNtkUsesTheCurrentLengthAndTheTrainingLength) {
  auto dyn = MakeRope({{"scaling", "dynamic_ntk"}, {"factor", "2"}}, 64);
  auto* r = dynamic_cast<Rope<double>*>(dyn.get());
  std::vector<double> short_pos(40), long_pos(128);
  std::iota(short_pos.begin(), short_pos.end(), 0.0);
  std::iota(long_pos.begin(), long_pos.end(), 0.0);
  dyn->Prepare(short_pos);
  EXPECT_EQ(r->inverse_frequencies(), RopeInverseFrequencies(8, 1e4)) << "no change within L";
  dyn->Prepare(long_pos);
  const double b = 1e4 * std::pow(2.0 * 128 / 64 - 1, 8.0 / 6);
  EXPECT_NEAR(r->inverse_frequencies()[3], std::pow(b, -6.0 / 8), 1e-15);
  dyn->Prepare(short_pos);
  EXPECT_EQ(r->inverse_frequencies(), RopeInverseFrequencies(8, 1e4)) << "restored below L";
}

TEST(RopeScaled, YarnAttentionHasCorrectGradients) {
  auto enc = MakeRope({{"scaling", "dynamic_yarn"}, {"factor", "1"}}, 20);
  const AttentionShape sh{1, 70, 2, 8};
  std::vector<double> pos(70);
  std::iota(pos.begin(), pos.end(), 0.0);
  enc->Prepare(pos);
  AttentionPattern pat(true);
  Rng rng(8);
  MatD q(70, 16), k(70, 16), v(70, 16), w(70, 16);
  testing::FillNormal(q, rng);
  testing::FillNormal(k, rng);
  testing::FillNormal(v, rng);
  testing::FillNormal(w, rng);
  auto loss = [&] {
    MatD out;
    AttentionCache<double> c;
    AttentionForward(q, k, v, sh, pos, pat, *enc, 0, false, c, out);
    return out.cwiseProduct(w).sum();
  };
  MatD out, d_q = MatD::Zero(70, 16), d_k = MatD::Zero(70, 16), d_v = MatD::Zero(70, 16);
  AttentionCache<double> cache;
  AttentionForward(q, k, v, sh, pos, pat, *enc, 0, true, cache, out);
  AttentionBackward(q, k, v, sh, pos, pat, *enc, 0, cache, w, d_q, d_k, d_v);
  std::vector<ParamRef<double>> params = {{"q", q.data(), d_q.data(), q.size()},
                                          {"k", k.data(), d_k.data(), k.size()}};
  testing::CheckGradients(loss, params, testing::CopyGrads(params), 40);
}

TEST(RopeScaled, OptionErrorsNameTheRulesAndTheMissingLength) {
  try {
    MakeRope({{"scaling", "yarm"}});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("dynamic_yarn"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MakeRope({{"scaling", "yarn"}, {"factor", "2"}}, 0), InputError);
  EXPECT_NO_THROW(MakeRope({{"scaling", "yarn"}, {"factor", "2"}, {"original_length", "32"}}, 0));
}

TEST(RopeScaled, TrainsFromARecipeWithATrainingTimeRule) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"model.n_layers=1", "model.encodings=rope", "encoding_options.rope.scaling=yarn",
       "encoding_options.rope.factor=4", "train.steps=80", "eval.lengths=5,20", "probe.lengths=5",
       "probe.samples=1"});
  const auto dir = testing::FreshTempDir("yarn");
  RunOptions o;
  o.out_dir = dir.string();
  const RunSummary s = TrainAndEvaluate(c, "rope", o);
  EXPECT_EQ(s.state, "completed") << s.message;
  EXPECT_LT(s.final_train_loss, std::log(12.0 + 2));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
