// RoPE scaling rules (PI, NTK-aware, dynamic NTK, NTK-by-parts, YaRN, Giraffe, Llama 3.1) against
// reference tables computed from the published code (Hugging Face and jquesnelle/yarn), and their
// properties: monotone frequencies, identity at factor 1, the YaRN ramp's ends, and corr_dim(1) as
// the critical-dimension quantity.
#include "pe/rope_scaling.h"

#include <gtest/gtest.h>

#include <cmath>

#include "nn/check.h"

namespace lexp {
namespace {

// Reference numbers are float64 evaluations of the same formulas; ours agree to rounding.
constexpr double kRel = 1e-12;

void ExpectRel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, kRel * std::abs(want) + 1e-300) << what;
}

RopeScalingConfig Cfg(const std::string& rule, double s, double L) {
  RopeScalingConfig c;
  c.rule = rule;
  c.factor = s;
  c.original_length = L;
  return c;
}

TEST(RopeScaling, PositionInterpolationDividesEveryFrequency) {
  const auto base = ScaleRope(128, 1e4, Cfg("none", 1, 0), 0).inv_freq;
  const auto pi = ScaleRope(128, 1e4, Cfg("pi", 2, 4096), 0).inv_freq;
  for (int k = 0; k < 64; ++k) EXPECT_EQ(pi[k], base[k] / 2);
  ExpectRel(pi[63], 5.773909923447291e-05, "PI s=2 k=63");
  // Positions of the extended range map inside the trained range: (L'-1) theta/s < L theta.
  EXPECT_LT((8192 - 1) * pi[63], 4096 * base[63]);
}

TEST(RopeScaling, NtkBaseMatchesReferenceAndKeepsEndPoints) {
  const std::vector<std::pair<double, double>> bases = {{2, 20221.261689737912},
                                                        {4, 40889.94243248622},
                                                        {8, 82684.62264056221},
                                                        {16, 167198.73921320363}};
  const auto theta = ScaleRope(128, 1e4, Cfg("none", 1, 0), 0).inv_freq;
  for (auto [s, b] : bases) {
    const auto r = ScaleRope(128, 1e4, Cfg("ntk", s, 4096), 0);
    ExpectRel(r.effective_base, b, "NTK base");
    EXPECT_EQ(r.inv_freq[0], 1.0) << "highest frequency unchanged";
    ExpectRel(r.inv_freq[63], theta[63] / s, "lowest pair equals PI");
  }
}

TEST(RopeScaling, DynamicNtkFollowsTheCurrentLength) {
  auto base_at = [](double len) {
    return ScaleRope(128, 1e4, Cfg("dynamic_ntk", 2, 4096), len).effective_base;
  };
  EXPECT_EQ(base_at(100), 1e4);
  EXPECT_EQ(base_at(4096), 1e4);
  ExpectRel(base_at(4097), 10004.9603366797, "l=4097");
  ExpectRel(base_at(6144), 20221.261689737912, "l=6144");
  ExpectRel(base_at(8192), 30527.7367488067, "l=8192");
  ExpectRel(base_at(16384), 72195.86008650938, "l=16384");
  // With alpha = 1 at twice the length the base equals NTK-aware s = 2.
  ExpectRel(ScaleRope(128, 1e4, Cfg("dynamic_ntk", 1, 4096), 8192).effective_base,
            20221.261689737912, "alpha=1");
}

struct YarnRow {
  int k;
  double inv_freq;
};

void ExpectYarn(const RopeScalingConfig& c, int D, double base, double low, double high,
                double mscale, const std::vector<YarnRow>& rows) {
  const auto r = ScaleRope(D, base, c, 0);
  EXPECT_DOUBLE_EQ(r.low, low);
  EXPECT_NEAR(r.high, high, 1e-12);
  if (mscale > 0) ExpectRel(r.mscale, mscale, "mscale");
  for (const auto& row : rows)
    ExpectRel(r.inv_freq[row.k], row.inv_freq, "k=" + std::to_string(row.k));
}

TEST(RopeScaling, YarnMatchesReferenceTables) {
  // Reference table A: Llama-2, s = 16.
  ExpectRel(YarnCorrectionDim(128, 1e4, 4096, 32), 20.94448162063605, "corr_dim(32)");
  ExpectRel(YarnCorrectionDim(128, 1e4, 4096, 1), 45.02688127375455, "corr_dim(1)");
  ExpectYarn(Cfg("yarn", 16, 4096), 128, 1e4, 20, 46, 1.2772588722239782,
             {{0, 1.0},
              {19, 0.06493816315762113},
              {20, 0.056234132519034905},
              {21, 0.046940859997959404},
              {33, 0.004600435467850347},
              {45, 1.5177160473182487e-4},
              {46, 8.334508951020775e-05},
              {47, 7.217387404309113e-05},
              {63, 7.217387404309114e-06}});
  // B: s = 32.
  ExpectYarn(Cfg("yarn", 32, 4096), 128, 1e4, 20, 46, 1.3465735902799727,
             {{21, 0.04688233024733851},
              {33, 0.004465128542325336},
              {45, 1.0549977402090264e-4},
              {46, 4.167254475510388e-05},
              {63, 3.608693702154557e-06}});
  // C: s = 8, L = 2048 (the paper's 1.208).
  ExpectYarn(Cfg("yarn", 8, 2048), 128, 1e4, 16, 41, 1.2079441541679836,
             {{17, 0.08356555720424631},
              {28, 0.010314020578225752},
              {40, 5.059644256269407e-4},
              {41, 3.4230245428304516e-4},
              {63, 1.4434774808618228e-05}});
  // D: s = 2.
  ExpectYarn(Cfg("yarn", 2, 4096), 128, 1e4, 20, 46, 1.0693147180559945,
             {{21, 0.04776027650665196},
              {33, 0.006494732425200489},
              {45, 7.99577234684736e-4},
              {46, 6.66760716081662e-4}});
  // E: d = 64, s = 4, L = 2048.
  ExpectYarn(Cfg("yarn", 4, 2048), 64, 1e4, 8, 21, 1.138629436111989,
             {{9, 0.0706631081870968},
              {14, 0.011627211527177573},
              {20, 9.730085108210396e-4},
              {21, 5.928434264154137e-4},
              {31, 3.33380358040831e-05}});
  // F: base 1e6, s = 4, L = 32768.
  ExpectYarn(Cfg("yarn", 4, 32768), 128, 1e6, 23, 40, 0,
             {{24, 0.005375321490790102},
              {31, 8.029597275452302e-4},
              {39, 6.490394320837028e-05},
              {40, 4.445698525097307e-05},
              {63, 3.102344401879299e-07}});
  // G: truncate = false keeps the fractional bounds.
  RopeScalingConfig g = Cfg("yarn", 32, 4096);
  g.truncate = false;
  ExpectYarn(g, 64, 1.5e5, 8.092779115512402, 17.39802450158856, 1.3465735902799727,
             {{9, 0.03170569618466377},
              {10, 0.019335001126540362},
              {16, 4.5648391922324086e-4},
              {17, 1.2931870124506317e-4},
              {18, 3.8308812373753384e-05}});
  g.truncate = true;
  ExpectYarn(g, 64, 1.5e5, 8, 18, 0, {{9, 0.031620752275346484}});
  // Harmonic ("revised", PoSE) blend, config A.
  RopeScalingConfig h = Cfg("yarn", 16, 4096);
  h.blend = "harmonic";
  ExpectYarn(h, 128, 1e4, 20, 46, 0,
             {{21, 0.030880867449542545},
              {33, 0.0010187815568941945},
              {45, 9.984561016844586e-05},
              {0, 1.0},
              {63, 7.217387404309114e-06}});
}

TEST(RopeScaling, YarnMscaleTableAndLogitFactor) {
  const std::vector<std::pair<double, double>> t = {
      {2, 1.0693147180559945},  {4, 1.138629436111989},   {8, 1.2079441541679836},
      {16, 1.2772588722239782}, {32, 1.3465735902799727}, {64, 1.4158883083359672}};
  for (auto [s, m] : t) ExpectRel(ScaleRope(128, 1e4, Cfg("yarn", s, 4096), 0).mscale, m, "mscale");
  const double m16 = ScaleRope(128, 1e4, Cfg("yarn", 16, 4096), 0).mscale;
  ExpectRel(m16 * m16, 1.6313902266748685, "logits get mscale^2");
  EXPECT_EQ(ScaleRope(128, 1e4, Cfg("ntk_by_parts", 16, 4096), 0).mscale, 1.0) << "no temperature";
}

TEST(RopeScaling, YarnLiesBetweenPiAndRopeAndKeepsItsEnds) {
  for (double s : {2.0, 8.0, 32.0}) {
    const auto r = ScaleRope(128, 1e4, Cfg("yarn", s, 4096), 0);
    const auto theta = ScaleRope(128, 1e4, Cfg("none", 1, 0), 0).inv_freq;
    for (int k = 0; k < 64; ++k) {
      EXPECT_LE(r.inv_freq[k], theta[k] * (1 + 1e-15));
      EXPECT_GE(r.inv_freq[k], theta[k] / s * (1 - 1e-15));
      if (k <= r.low) {
        EXPECT_EQ(r.inv_freq[k], theta[k]);
      }
      if (k >= r.high) ExpectRel(r.inv_freq[k], theta[k] / s, "k >= high");
    }
  }
}

TEST(RopeScaling, PaperRampDiffersFromCodeRampMidway) {
  // Peng et al. 2023, section 3.2: d=128, s=16, L=4096; weight on the original theta at k=33 and
  // k=25.
  const auto theta = ScaleRope(128, 1e4, Cfg("none", 1, 0), 0).inv_freq;
  auto weight = [&](const std::string& ramp, int k) {
    RopeScalingConfig c = Cfg("ntk_by_parts", 16, 4096);
    c.ramp = ramp;
    const double f = ScaleRope(128, 1e4, c, 0).inv_freq[k];
    return (f - theta[k] / 16) / (theta[k] - theta[k] / 16);
  };
  EXPECT_NEAR(weight("paper", 33), 0.150, 5e-4);
  EXPECT_NEAR(weight("code", 33), 0.500, 5e-4);
  EXPECT_NEAR(weight("paper", 25), 0.544, 5e-4);
  EXPECT_NEAR(weight("code", 25), 0.808, 5e-4);
}

TEST(RopeScaling, DynamicYarnRecomputesTheScaleFromTheLength) {
  const auto at_train = ScaleRope(128, 1e4, Cfg("dynamic_yarn", 1, 4096), 4096);
  EXPECT_EQ(at_train.mscale, 1.0);
  EXPECT_EQ(at_train.inv_freq, ScaleRope(128, 1e4, Cfg("none", 1, 0), 0).inv_freq);
  const auto at_4x = ScaleRope(128, 1e4, Cfg("dynamic_yarn", 1, 4096), 16384);
  const auto yarn4 = ScaleRope(128, 1e4, Cfg("yarn", 4, 4096), 0);
  EXPECT_EQ(at_4x.inv_freq, yarn4.inv_freq);
  EXPECT_EQ(at_4x.mscale, yarn4.mscale);
}

TEST(RopeScaling, TruncatedBasisMatchesGiraffeNumbers) {
  RopeScalingConfig c = Cfg("truncated_basis", 1, 2048);
  const auto r = ScaleRope(128, 1e4, c, 0).inv_freq;
  const auto theta = ScaleRope(128, 1e4, Cfg("none", 1, 0), 0).inv_freq;
  int kept = 0, rho = 0, zero = 0;
  for (int k = 0; k < 64; ++k) {
    if (r[k] == theta[k])
      ++kept;
    else if (r[k] == 0)
      ++zero;
    else {
      EXPECT_NEAR(r[k], 0.0001917476, 5e-11);  // reference printed to 7 significant digits
      ++rho;
    }
  }
  EXPECT_EQ(kept, 41);
  EXPECT_EQ(rho, 14);
  EXPECT_EQ(zero, 9);
  EXPECT_EQ(r[40], theta[40]);
  EXPECT_EQ(r[55], 0.0);
}

TEST(RopeScaling, Llama3MatchesReferenceTableAndIsContinuous) {
  RopeScalingConfig c = Cfg("llama3", 8, 8192);
  const auto r = ScaleRope(128, 5e5, c, 0).inv_freq;
  const std::vector<std::pair<int, double>> rows = {{0, 1.0},
                                                    {28, 0.003211445994752591},
                                                    {29, 0.002166570763503359},
                                                    {30, 0.0013718935677611381},
                                                    {31, 8.567514129196321e-4},
                                                    {32, 5.248461609929547e-4},
                                                    {33, 3.1269375038406517e-4},
                                                    {34, 1.7850781276799638e-4},
                                                    {35, 9.556212353964683e-05},
                                                    {48, 6.647869871181236e-06},
                                                    {63, 3.068925988914511e-07}};
  for (auto [k, v] : rows) ExpectRel(r[k], v, "llama3 k=" + std::to_string(k));
  const auto theta = ScaleRope(128, 5e5, Cfg("none", 1, 0), 0).inv_freq;
  int keep = 0, divide = 0, smooth = 0;
  for (int k = 0; k < 64; ++k) {
    if (r[k] == theta[k])
      ++keep;
    else if (std::abs(r[k] - theta[k] / 8) < 1e-18 * theta[k] + 1e-30)
      ++divide;
    else
      ++smooth;
  }
  EXPECT_EQ(keep, 29);
  EXPECT_EQ(smooth, 6);
  EXPECT_EQ(divide, 29);
  // Continuity at both class boundaries: with D = 4 and base = (lambda / 2 pi)^2, pair 1 has
  // wavelength exactly lambda, so the rule can be probed just below and above each boundary.
  auto scaled_pair = [&](double lam) {
    const double b = std::pow(lam / 6.283185307179586, 2);
    const auto f = ScaleRope(4, b, c, 0).inv_freq[1];
    return f / std::pow(b, -0.5);  // ratio theta' / theta: 1 = kept, 1/8 = divided
  };
  for (double boundary : {8192.0 / 4, 8192.0}) {
    EXPECT_NEAR(scaled_pair(boundary * (1 - 1e-9)), scaled_pair(boundary * (1 + 1e-9)), 1e-8);
  }
  EXPECT_NEAR(scaled_pair(8192.0 / 4 * 0.99), 1.0, 1e-12);
  EXPECT_NEAR(scaled_pair(8192.0 * 1.01), 1.0 / 8, 1e-12);
}

TEST(RopeScaling, LogNFactorMatchesReference) {
  EXPECT_EQ(LogNFactor(4095, 4096), 1.0);
  EXPECT_EQ(LogNFactor(10, 4096), 1.0);
  EXPECT_NEAR(LogNFactor(4096, 4096), 1.0000293481233586, 1e-15);
  EXPECT_NEAR(LogNFactor(8191, 4096), 1.0833333333333333, 1e-15);
  EXPECT_NEAR(LogNFactor(16383, 4096), 1.1666666666666667, 1e-15);
  EXPECT_NEAR(LogNFactor(65535, 4096), 1.3333333333333335, 1e-15);
}

TEST(RopeScaling, UnknownRuleAndMissingLengthAreInputErrors) {
  EXPECT_THROW(ScaleRope(64, 1e4, Cfg("yarm", 2, 100), 0), InputError);
  EXPECT_THROW(ScaleRope(64, 1e4, Cfg("yarn", 2, 0), 0), InputError);
}

// LongRoPE (Ding et al. 2024) in the Hugging Face form: theta_k / lambda_k with the given factors,
// and the attention factor sqrt(1 + ln s / ln L) of `_compute_longrope_parameters`, whose computed
// values the reference notes list (squared on the logits here).
TEST(RopeScaling, LongropeDividesEachPairByItsFactorWithHfsAttentionFactor) {
  ExpectRel(LongropeAttentionFactor(131072.0 / 4096, 4096), 1.1902380714238083, "4096 -> 131072");
  ExpectRel(LongropeAttentionFactor(8192.0 / 4096, 4096), 1.0408329997330663, "4096 -> 8192");
  ExpectRel(LongropeAttentionFactor(131072.0 / 8192, 8192), 1.1435437497937313, "8192 -> 131072");
  ExpectRel(LongropeAttentionFactor(16384.0 / 2048, 2048), 1.1281521496355325, "2048 -> 16384");
  EXPECT_EQ(LongropeAttentionFactor(1, 4096), 1.0);
  RopeScalingConfig c = Cfg("longrope", 8, 2048);
  c.long_factors = {1.0, 1.5, 4.0, 16.0};
  const ScaledFrequencies f = ScaleRope(8, 1e4, c, 0);
  const double theta[] = {1, 0.1, 0.01, 0.001};
  for (int k = 0; k < 4; ++k) ExpectRel(f.inv_freq[k], theta[k] / c.long_factors[k], "pair");
  ExpectRel(f.mscale, 1.1281521496355325, "mscale");
  c.long_factors = {1.0, 1.5, 4.0};  // one short
  EXPECT_THROW(ScaleRope(8, 1e4, c, 0), InputError);
  c.long_factors = {1.0, 0.5, 4.0, 16.0};  // a pair sped up
  EXPECT_THROW(ScaleRope(8, 1e4, c, 0), InputError);
}

TEST(RopeScaling, ResonanceRoundsEveryWavelengthToWholeTokens) {
  // Wang et al. 2024 (Resonance RoPE): D = 8, base 1e4 gives theta = 1, 0.1, 0.01, 0.001, wavelengths
  // 6.283.., 62.83.., 628.3.., 6283.2.., rounded by hand to 6, 63, 628, 6283.
  const auto r = ScaleRope(8, 1e4, Cfg("resonance", 1, 0), 0).inv_freq;
  const double want[] = {6, 63, 628, 6283};
  for (int k = 0; k < 4; ++k) ExpectRel(r[k], 2 * M_PI / want[k], "resonance k=" + std::to_string(k));
  // The property the rounding buys: every pair's angle repeats exactly after its wavelength, so a
  // position past the training length shows the features of a trained one. Negative control:
  // plain RoPE's pair 1 does not repeat after 63 tokens.
  const auto plain = ScaleRope(8, 1e4, Cfg("none", 1, 0), 0).inv_freq;
  for (int k = 0; k < 3; ++k) {
    const double p = 5, lam = want[k];
    EXPECT_NEAR(std::cos(r[k] * (p + lam)), std::cos(r[k] * p), 1e-9) << k;
    EXPECT_NEAR(std::sin(r[k] * (p + lam)), std::sin(r[k] * p), 1e-9) << k;
  }
  EXPECT_GT(std::abs(std::sin(plain[1] * (5 + 63)) - std::sin(plain[1] * 5)), 1e-3);
}

}  // namespace
}  // namespace lexp
