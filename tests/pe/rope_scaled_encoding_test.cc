// `rope` with a scaling rule, at the level of the attention it plugs into: the frequencies the
// attention sees, gradients through the scaled logits, and pitfalls 2, 6 and 7.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "experiments/core/recipe.h"
#include "experiments/training/trainer.h"
#include "nn/ops/attention.h"
#include "pe/registry.h"
#include "pe/rope.h"
#include "tests/testing/attention_gradcheck.h"
#include "tests/testing/gradcheck.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

std::unique_ptr<PositionEncoding<double>> MakeRope(const std::map<std::string, std::string>& o,
                                                   int train_length = 64) {
  return CreateEncoding<double>("rope", o, EncodingShape{16, 2, 1, true, 1024, train_length});
}

// LongRoPE's n-hat (Ding et al. 2024): the first start_tokens positions are rotated by the
// unscaled theta_k, the others by theta_k / lambda_k; with start_tokens = 0 every position is
// scaled (the negative control). Head width 8 (4 pairs, theta = 1, 0.1, 0.01, 0.001).
TEST(RopeScaled, LongropeKeepsTheFirstPositionsUnscaled) {
  const std::map<std::string, std::string> o = {
      {"scaling", "longrope"}, {"long_factors", "1, 2, 4, 8"}, {"factor", "4"}};
  auto with_start = o;
  with_start["start_tokens"] = "3";
  auto scaled = MakeRope(o), kept = MakeRope(with_start);
  std::vector<double> pos(6);
  std::iota(pos.begin(), pos.end(), 0.0);
  AttentionPattern pat(true);
  auto rotated = [&](PositionEncoding<double>& enc) {
    enc.Prepare(pos, PositionSpan(pos));
    MatD x = MatD::Zero(6, 16);
    for (int t = 0; t < 6; ++t) x(t, 1) = 1;  // pair 1's first component (half pairing: 1, 5)
    AttentionContext ctx{0, 0, 2, 8, 6, pos.data(), &pat, true};
    enc.TransformQK(ctx, true, x.data(), 16);
    return x;
  };
  const MatD a = rotated(*scaled), b = rotated(*kept);
  for (int t = 0; t < 6; ++t) {
    EXPECT_NEAR(a(t, 1), std::cos(t * 0.1 / 2), 1e-12) << t;  // every position scaled
    const double theta = t < 3 ? 0.1 : 0.1 / 2;
    EXPECT_NEAR(b(t, 1), std::cos(t * theta), 1e-12) << t;
    EXPECT_NEAR(b(t, 5), std::sin(t * theta), 1e-12) << t;
  }
  EXPECT_TRUE(kept->Uses(kSiteLogitScale));  // 1 + ln 4 / ln 64 on the logits
  EXPECT_NEAR(dynamic_cast<Rope<double>*>(kept.get())->mscale(),
              std::sqrt(1 + std::log(4.0) / std::log(64.0)), 1e-15);
  EXPECT_THROW(MakeRope({{"scaling", "longrope"}, {"long_factors", "1, x, 4, 8"}}), InputError);
  EXPECT_THROW(MakeRope({{"scaling", "yarn"}, {"factor", "2"}, {"start_tokens", "4"}}),
               InputError);
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
    enc.Prepare(pos, PositionSpan(pos));
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
    e.Prepare(pos, PositionSpan(pos));
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
  dyn->Prepare(short_pos, PositionSpan(short_pos));
  EXPECT_EQ(r->inverse_frequencies(), RopeInverseFrequencies(8, 1e4)) << "no change within L";
  dyn->Prepare(long_pos, PositionSpan(long_pos));
  const double b = 1e4 * std::pow(2.0 * 128 / 64 - 1, 8.0 / 6);
  EXPECT_NEAR(r->inverse_frequencies()[3], std::pow(b, -6.0 / 8), 1e-15);
  dyn->Prepare(short_pos, PositionSpan(short_pos));
  EXPECT_EQ(r->inverse_frequencies(), RopeInverseFrequencies(8, 1e4)) << "restored below L";
}

TEST(RopeScaled, YarnAttentionHasCorrectGradients) {
  auto enc = MakeRope({{"scaling", "dynamic_yarn"}, {"factor", "1"}}, 20);
  AttentionPattern pat(true);
  testing::AttentionGradCase gc;
  gc.shape = AttentionShape{1, 70, 2, 8};
  gc.pattern = &pat;
  gc.encoding = enc.get();
  gc.pos.resize(70);
  std::iota(gc.pos.begin(), gc.pos.end(), 0.0);
  gc.transform_qk = true;  // the rotation and the temperature
  gc.check_v = false;
  gc.seed = 8;
  testing::CheckAttentionGradients(gc);
}

TEST(Rerope, DistanceMapMatchesTheReferenceTable) {  // the paper, w = 512, k = 16
  const std::vector<std::array<double, 3>> rows = {{511, 511, 511},      {512, 512, 512},
                                                   {513, 512, 512.0625}, {1000, 512, 542.5},
                                                   {4096, 512, 736},     {16384, 512, 1504}};
  for (const auto& [d, hard, leaky] : rows) {
    EXPECT_DOUBLE_EQ(ReropeDistance(d, 512, 0), hard) << d;
    EXPECT_DOUBLE_EQ(ReropeDistance(d, 512, 16), leaky) << d;
  }
}

// Rotary attention with a rerope rule, run as the model runs it: rotate (site 3), then attention.
struct RotaryRun {
  static constexpr int kT = 70, kH = 2, kD = 8;
  std::unique_ptr<PositionEncoding<double>> enc;
  std::vector<double> pos = std::vector<double>(kT);
  AttentionPattern pat{true};
  explicit RotaryRun(const std::map<std::string, std::string>& o) : enc(MakeRope(o, 20)) {
    std::iota(pos.begin(), pos.end(), 0.0);
    enc->Prepare(pos, PositionSpan(pos));
  }
  MatD Rotate(const MatD& x, bool query, bool backward = false) const {
    MatD r = x;
    for (int h = 0; h < kH; ++h) {
      AttentionContext ctx{0, h, kH, kD, kT, pos.data(), &pat, true};
      if (backward)
        enc->TransformQKBackward(ctx, query, r.data() + h * kD, kH * kD);
      else
        enc->TransformQK(ctx, query, r.data() + h * kD, kH * kD);
    }
    return r;
  }
  MatD Forward(const MatD& q, const MatD& k, const MatD& v, bool materialize,
               AttentionCache<double>& c) const {
    MatD out;
    AttentionForward(Rotate(q, true), Rotate(k, false), v, AttentionShape{1, kT, kH, kD}, pos, pat,
                     *enc, 0, materialize, c, out);
    return out;
  }
};

// Su's ReRoPE patches always multiply queries by the log-n factor; log_n = auto follows them, and
// stays off for plain rope.
TEST(Rerope, AppliesTheLogNFactorByDefaultAsItsReference) {
  for (const std::string rule : {"rerope", "leaky_rerope"}) {
    RotaryRun run({{"scaling", rule}});
    ASSERT_TRUE(run.enc->Uses(kSiteLogitScale)) << rule;
    AttentionContext ctx{0,        0,   RotaryRun::kH, RotaryRun::kD, RotaryRun::kT, run.pos.data(),
                         &run.pat, true};
    for (int i : {0, 19, 20, 45, 69})
      EXPECT_DOUBLE_EQ(run.enc->LogitScale(ctx, i), LogNFactor(i, 20)) << rule << " " << i;
    EXPECT_GT(run.enc->LogitScale(ctx, 69), 1.0);
    RotaryRun off({{"scaling", rule}, {"log_n", "false"}});
    EXPECT_FALSE(off.enc->Uses(kSiteLogitScale)) << rule;
  }
  RotaryRun plain({});
  EXPECT_FALSE(plain.enc->Uses(kSiteLogitScale));
}

TEST(Rerope, FarLogitsSeeTheMappedDistanceAndNearOnesArePlainRope) {
  for (const std::string rule : {"rerope", "leaky_rerope"}) {
    // Without the log-n query factor their reference adds (tested below): the distance map alone.
    RotaryRun run({{"scaling", rule}, {"window", "6"}, {"leaky_factor", "4"}, {"log_n", "false"}});
    EXPECT_TRUE(run.enc->Uses(kSiteLogitTerm));
    const int T = RotaryRun::kT, D = RotaryRun::kD;
    Rng rng(12);
    MatD q(T, 16), k(T, 16), v(T, 16);
    testing::FillNormal(q, rng);
    testing::FillNormal(k, rng);
    testing::FillNormal(v, rng);
    AttentionCache<double> c;
    c.capture_logits = true;
    run.Forward(q, k, v, true, c);
    auto plain = MakeRope({});
    for (int i = 0; i < T; i += 3)
      for (int j = 0; j <= i; j += 2) {
        const double d = ReropeDistance(i - j, 6, rule == "leaky_rerope" ? 4 : 0);
        plain->Prepare({d, 0.0}, d);  // q at position d', k at 0: q^T R(d') k
        AttentionContext ctx{0, 0, 1, D, 2, nullptr, &run.pat, true};
        for (int h = 0; h < 2; ++h) {
          MatD two(2, D);
          two.row(0) = q.block(i, h * D, 1, D);
          two.row(1) = k.block(j, h * D, 1, D);
          plain->TransformQK(ctx, true, two.data(), D);
          const double want = two.row(0).dot(two.row(1)) / std::sqrt(D * 1.0);
          EXPECT_NEAR(c.logits(h * T + i, j), want, 1e-12) << rule << " " << i << "," << j;
        }
      }
  }
}

TEST(Rerope, AttentionHasCorrectGradientsAndStreamingMatches) {
  for (const std::string rule : {"rerope", "leaky_rerope"}) {
    RotaryRun run({{"scaling", rule}, {"window", "5"}, {"log_n", "true"}});
    const int T = RotaryRun::kT;
    Rng rng(13);
    MatD q(T, 16), k(T, 16), v(T, 16), w(T, 16);
    for (MatD* m : {&q, &k, &v, &w}) testing::FillNormal(*m, rng);
    auto loss = [&] {
      AttentionCache<double> c;
      return run.Forward(q, k, v, false, c).cwiseProduct(w).sum();  // streaming path
    };
    AttentionCache<double> cache;
    const MatD out = run.Forward(q, k, v, true, cache);
    EXPECT_NEAR(out.cwiseProduct(w).sum(), loss(), 1e-10);
    MatD d_q = MatD::Zero(T, 16), d_k = MatD::Zero(T, 16), d_v = MatD::Zero(T, 16);
    AttentionBackward(run.Rotate(q, true), run.Rotate(k, false), v, AttentionShape{1, T, 2, 8},
                      run.pos, run.pat, *run.enc, 0, cache, w, d_q, d_k, d_v);
    d_q = run.Rotate(d_q, true, true);
    d_k = run.Rotate(d_k, false, true);
    std::vector<ParamRef<double>> params = {{"q", q.data(), d_q.data(), q.size()},
                                            {"k", k.data(), d_k.data(), k.size()},
                                            {"v", v.data(), d_v.data(), v.size()}};
    const auto res = testing::CheckGradients(loss, params, testing::CopyGrads(params), 40);
    EXPECT_EQ(res.checked, 120) << rule;
  }
}

TEST(Rerope, IsRefusedForBidirectionalAttention) {
  try {
    CreateEncoding<double>("rope", {{"scaling", "rerope"}}, EncodingShape{16, 2, 1, false, 64, 20});
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("causal"), std::string::npos) << e.what();
  }
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
