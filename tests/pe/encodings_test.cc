// Property tests and published numbers (the papers' and reference implementations' vectors) for
// the encodings of the skeleton: nope, sinusoidal, learned, alibi, rope, t5.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "nn/model/transformer.h"
#include "nn/ops/attention.h"
#include "pe/alibi.h"
#include "pe/registry.h"
#include "pe/rope.h"
#include "pe/sinusoidal.h"
#include "pe/t5.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

// Reference vectors are float64 results printed to ~16 digits; our double math agrees to rounding.
constexpr double kVectorTol = 1e-12;

std::unique_ptr<PositionEncoding<double>> Make(const std::string& name, int d_model, int heads,
                                               const std::map<std::string, std::string>& o = {},
                                               bool causal = true) {
  return CreateEncoding<double>(name, o, EncodingShape{d_model, heads, 1, causal, 64});
}

// Applies site 3 to one vector x at position p (a single head of width x.size()).
std::vector<double> Rotate(const PositionEncoding<double>& enc, std::vector<double> x, double p) {
  AttentionPattern pat(true);
  std::vector<double> pos = {p};
  AttentionContext ctx{0, 0, 1, static_cast<int>(x.size()), 1, pos.data(), &pat};
  enc.TransformQK(ctx, true, x.data(), static_cast<long>(x.size()));
  return x;
}

std::vector<double> RotateAt(PositionEncoding<double>& enc, const std::vector<double>& x,
                             double p) {
  enc.Prepare({p}, 0);
  return Rotate(enc, x, p);
}

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

TEST(Rope, InverseFrequenciesMatchReference) {
  const auto f64 = RopeInverseFrequencies(64, 1e4);
  EXPECT_NEAR(f64[1], 0.7498942093324559, kVectorTol);
  EXPECT_NEAR(f64[15], 0.01333521432163324, kVectorTol);
  EXPECT_NEAR(f64[31], 1.333521432163324e-4, kVectorTol);
  const auto f128 = RopeInverseFrequencies(128, 1e4);
  EXPECT_NEAR(f128[1], 0.8659643233600653, kVectorTol);
  EXPECT_NEAR(f128[10], 0.23713737056616555, kVectorTol);
  EXPECT_NEAR(f128[45], 0.0015399265260594918, kVectorTol);
  EXPECT_NEAR(f128[63], 1.1547819846894582e-4, kVectorTol);
  EXPECT_NEAR(RopeInverseFrequencies(128, 5e5)[63], 2.455140791131609e-06, 1e-18);
}

TEST(Rope, RotationMatchesReferenceVectorsForBothPairings) {
  auto inter = Make("rope", 4, 1, {{"pairing", "interleaved"}});
  auto half = Make("rope", 4, 1, {{"pairing", "half"}});
  const std::vector<double> x = {1, 2, 3, 4};
  const std::vector<std::pair<double, std::vector<double>>> inter_ref = {
      {1, {-1.1426396637476532, 1.922075596544176, 2.9598506679133294, 4.029799501669161}},
      {7, {-0.5600709430942735, 2.1647911074053985, 2.7128816114097076, 4.200032543025717}}};
  const std::vector<std::pair<double, std::vector<double>>> half_ref = {
      {1, {-1.9841106485555495, 1.959900667496664, 2.4623779024123156, 4.019799668334994}},
      {7, {-1.2170575418130625, 1.7153306111564282, 2.9186933617487028, 4.130089695688184}}};
  for (const auto& [p, ref] : inter_ref) {
    const auto y = RotateAt(*inter, x, p);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], ref[i], kVectorTol) << "interleaved pos " << p;
  }
  for (const auto& [p, ref] : half_ref) {
    const auto y = RotateAt(*half, x, p);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], ref[i], kVectorTol) << "half pos " << p;
  }
  auto inter8 = Make("rope", 8, 1, {{"pairing", "interleaved"}});
  auto half8 = Make("rope", 8, 1);
  const std::vector<double> x8 = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<double> i8 = {-1.27223251272, -1.838864985141, 1.683928640731, 4.707906576486,
                                  4.81777716753,  6.147277703506,  6.975968536024, 8.020963968527};
  const std::vector<double> h8 = {-1.6955925369,   0.137551738283, 2.788681599829, 3.975982036013,
                                  -4.808842474942, 6.323059348076, 7.08683673685,  8.011963982027};
  const auto yi = RotateAt(*inter8, x8, 3), yh = RotateAt(*half8, x8, 3);
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(yi[i], i8[i], 1e-11);  // reference rounded to 1e-12
    EXPECT_NEAR(yh[i], h8[i], 1e-11);
  }
}

TEST(Rope, ScoreDependsOnlyOnRelativeOffset) {
  const std::vector<double> q = {0.1, -0.2, 0.3, 0.4}, k = {0.5, 0.6, -0.7, 0.8};
  for (const auto& [pairing, expected] : std::vector<std::pair<std::string, double>>{
           {"interleaved", 0.21742683986929637}, {"half", 0.3152642043516997}}) {
    auto enc = Make("rope", 4, 1, {{"pairing", pairing}});
    for (auto [m, n] : std::vector<std::pair<int, int>>{{5, 2}, {13, 10}, {3, 0}, {1003, 1000}}) {
      const double s = Dot(RotateAt(*enc, q, m), RotateAt(*enc, k, n));
      EXPECT_NEAR(s, expected, 1e-12) << pairing << " m=" << m << " n=" << n;
    }
  }
}

TEST(Rope, PreservesNormAndComposes) {
  auto enc = Make("rope", 16, 1);
  Rng rng(3);
  std::vector<double> x(16);
  for (double& v : x) v = rng.Normal();
  for (double p : {1.0, 17.0, 4096.0}) {
    const auto y = RotateAt(*enc, x, p);
    EXPECT_NEAR(Dot(y, y), Dot(x, x), 1e-12);
  }
  // R(m) R(n) = R(m + n)
  const auto a = RotateAt(*enc, RotateAt(*enc, x, 5), 9), b = RotateAt(*enc, x, 14);
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
}

TEST(Rope, HalfSplitEqualsPermutedInterleaved) {
  auto half = Make("rope", 8, 1), inter = Make("rope", 8, 1, {{"pairing", "interleaved"}});
  const std::vector<double> x = {0.3, -1.2, 2.5, 0.7, -0.4, 1.9, 0.05, -2.2};
  std::vector<double> y(8);  // y[2k] = x[k], y[2k+1] = x[k + 4]
  for (int k = 0; k < 4; ++k) {
    y[2 * k] = x[k];
    y[2 * k + 1] = x[k + 4];
  }
  const auto hx = RotateAt(*half, x, 11), iy = RotateAt(*inter, y, 11);
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(hx[k], iy[2 * k], 1e-14);
    EXPECT_NEAR(hx[k + 4], iy[2 * k + 1], 1e-14);
  }
}

TEST(Alibi, SlopesMatchReferenceTable) {
  auto expect = [](int heads, const std::vector<double>& ref) {
    const auto s = AlibiSlopes(heads);
    ASSERT_EQ(s.size(), ref.size()) << heads;
    for (size_t i = 0; i < ref.size(); ++i)
      EXPECT_NEAR(s[i], ref[i], 1e-15) << heads << " head " << i;
  };
  expect(1, {0.00390625});
  expect(2, {0.0625, 0.00390625});
  expect(4, {0.25, 0.0625, 0.015625, 0.00390625});
  expect(6, {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125});
  std::vector<double> eight;
  for (int i = 1; i <= 8; ++i) eight.push_back(std::pow(2.0, -i));
  expect(8, eight);
  std::vector<double> twelve = eight;
  for (double v :
       {0.7071067811865476, 0.35355339059327384, 0.17677669529663692, 0.08838834764831849})
    twelve.push_back(v);
  expect(12, twelve);
  std::vector<double> sixteen;
  for (int i = 1; i <= 16; ++i) sixteen.push_back(std::pow(2.0, -0.5 * i));
  expect(16, sixteen);
  std::vector<double> twenty = sixteen;
  for (double v : {0.8408964152537145, 0.5946035575013604, 0.42044820762685714, 0.2973017787506802})
    twenty.push_back(v);
  expect(20, twenty);
}

// The logit term of `enc` for head h on zero scores: an explicit [T, T] bias matrix.
MatD BiasMatrix(const PositionEncoding<double>& enc, int h, int heads, int T, bool causal) {
  AttentionPattern pat(causal);
  std::vector<double> pos(T);
  std::iota(pos.begin(), pos.end(), 0.0);
  AttentionContext ctx{0, h, heads, 4, T, pos.data(), &pat};
  MatD s = MatD::Zero(T, T);
  enc.AddLogitTerm(ctx, 0, T, 0, T, HeadQK<double>{nullptr, nullptr, 0}, s.data(), T);
  return s;
}

TEST(Alibi, BiasIsAPerHeadToeplitzRamp) {
  auto enc = Make("alibi", 24, 6);
  const auto slopes = AlibiSlopes(6);
  for (int h = 0; h < 6; ++h) {
    const MatD b = BiasMatrix(*enc, h, 6, 12, true);
    for (int i = 0; i < 12; ++i)
      for (int j = 0; j <= i; ++j) {
        EXPECT_DOUBLE_EQ(b(i, j), -slopes[h] * (i - j));
        if (j + 1 <= i) {
          EXPECT_NEAR(b(i, j) - b(i, j + 1), -slopes[h], 1e-12);
        }
      }
  }
}

// Consecutive integer positions take a row of terms by offset (computed once a call): every score
// must still lose exactly its own float(m |p_i - p_j|), at any offset of the positions, for blocks
// on and off the diagonal; shifted by half a position they take the per-element path, same values.
TEST(Alibi, TermsByOffsetAreEachElementsOwnRoundedTerm) {
  const int T = 64, heads = 12;  // slopes 2^(-k/2) too: m |d| rounds differently in float
  auto enc = CreateEncoding<float>("alibi", {}, EncodingShape{24, heads, 1, true, 64});
  const auto slopes = AlibiSlopes(heads);
  AttentionPattern pat(true);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  const int blocks[][4] = {{0, 32, 0, 32}, {32, 64, 0, 64}, {5, 12, 3, 40}, {40, 44, 50, 64}};
  for (double p0 : {0.0, 1000.0, 123456.0, 0.5}) {
    std::vector<double> pos(T);
    for (int k = 0; k < T; ++k) pos[k] = p0 + k;
    for (int h = 0; h < heads; ++h) {
      const AttentionContext ctx{0, h, heads, 4, T, pos.data(), &pat};
      for (const auto& b : blocks) {
        const int i0 = b[0], i1 = b[1], j0 = b[2], j1 = b[3], w = j1 - j0;
        std::vector<float> s((i1 - i0) * w), want(s.size());
        for (float& v : s) v = u(rng);
        for (int i = i0; i < i1; ++i)
          for (int j = j0; j < j1; ++j) {
            const float term = static_cast<float>(slopes[h] * std::abs(pos[i] - pos[j]));
            want[(i - i0) * w + (j - j0)] = s[(i - i0) * w + (j - j0)] - term;
          }
        enc->AddLogitTerm(ctx, i0, i1, j0, j1, HeadQK<float>{nullptr, nullptr, 0}, s.data(), w);
        for (size_t e = 0; e < s.size(); ++e)
          ASSERT_EQ(s[e], want[e]) << "p0 " << p0 << " head " << h << " block " << i0 << ".." << i1
                                   << " x " << j0 << ".." << j1 << " element " << e;
      }
    }
  }
}

TEST(Alibi, ExplicitBiasEqualsRowConstantTrickOnlyUnderCausalMask) {
  // Reference code adds +m*j instead of -m*(i-j); equal after a causal softmax (pitfall 9).
  const int T = 9;
  const double m = 0.25;
  Rng rng(5);
  MatD z(T, T);
  testing::FillNormal(z, rng);
  auto softmax_rows = [&](const MatD& a, bool causal) {
    MatD p = MatD::Zero(T, T);
    for (int i = 0; i < T; ++i) {
      const int end = causal ? i + 1 : T;
      double mx = -1e300, sum = 0;
      for (int j = 0; j < end; ++j) mx = std::max(mx, a(i, j));
      for (int j = 0; j < end; ++j) sum += std::exp(a(i, j) - mx);
      for (int j = 0; j < end; ++j) p(i, j) = std::exp(a(i, j) - mx) / sum;
    }
    return p;
  };
  MatD explicit_bias = z, trick = z, symmetric = z;
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j) {
      explicit_bias(i, j) -= m * (i - j);
      trick(i, j) += m * j;
      symmetric(i, j) -= m * std::abs(i - j);
    }
  EXPECT_LT((softmax_rows(explicit_bias, true) - softmax_rows(trick, true)).cwiseAbs().maxCoeff(),
            1e-12);
  EXPECT_GT((softmax_rows(symmetric, false) - softmax_rows(trick, false)).cwiseAbs().maxCoeff(),
            1e-3);
  // And lexp's encoder bias is the symmetric one.
  auto enc = Make("alibi", 4, 1, {}, false);
  const MatD b = BiasMatrix(*enc, 0, 1, T, false);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j) EXPECT_DOUBLE_EQ(b(i, j), -AlibiSlopes(1)[0] * std::abs(i - j));
}

TEST(Sinusoidal, MatchesPaperVectors) {
  std::vector<double> row(8);
  SinusoidalRow(1, 8, 1e4, row.data());
  const std::vector<double> p1 = {0.841470984808, 0.540302305868, 0.099833416647, 0.995004165278,
                                  0.009999833334, 0.999950000417, 0.000999999833, 0.9999995};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(row[i], p1[i], 1e-12);
  SinusoidalRow(5, 8, 1e4, row.data());
  const std::vector<double> p5 = {-0.958924274663, 0.283662185463, 0.479425538604, 0.87758256189,
                                  0.049979169271,  0.998750260395, 0.004999979167, 0.999987500026};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(row[i], p5[i], 1e-11);
}

TEST(Sinusoidal, DotProductDependsOnlyOnOffsetAndNormIsHalfWidth) {
  const int C = 16;
  std::vector<double> a(C), b(C);
  auto dot_at = [&](double p, double q) {
    SinusoidalRow(p, C, 1e4, a.data());
    SinusoidalRow(q, C, 1e4, b.data());
    return Dot(a, b);
  };
  EXPECT_NEAR(dot_at(3, 10), dot_at(100, 107), 1e-10);
  EXPECT_NEAR(dot_at(0, 7), dot_at(1000, 1007), 1e-10);
  EXPECT_NEAR(dot_at(37, 37), C / 2.0, 1e-12);
  // And the encoding adds exactly that row to every sequence of the batch.
  auto enc = Make("sinusoidal", C, 2);
  MatD x = MatD::Zero(2 * 3, C);
  enc->AddEmbedding({0, 1, 2}, {}, 2, x);
  SinusoidalRow(2, C, 1e4, a.data());
  for (int c = 0; c < C; ++c) {
    EXPECT_DOUBLE_EQ(x(2, c), a[c]);
    EXPECT_DOUBLE_EQ(x(5, c), a[c]);
  }
}

TEST(T5, BucketTableMatchesReference) {
  struct Row {
    long rp;
    int bidirectional, causal;
  };
  const std::vector<Row> rows = {
      {0, 0, 0},    {-1, 1, 1},      {1, 17, 0},   {-7, 7, 7},    {7, 23, 0},  {-8, 8, 8},
      {8, 24, 0},   {-9, 8, 9},      {9, 24, 0},   {-12, 9, 12},  {12, 25, 0}, {-16, 10, 16},
      {16, 26, 0},  {-32, 12, 21},   {32, 28, 0},  {-64, 14, 26}, {64, 30, 0}, {-128, 15, 31},
      {128, 31, 0}, {-1000, 15, 31}, {1000, 31, 0}};
  for (const auto& r : rows) {
    EXPECT_EQ(T5Bucket(r.rp, true, 32, 128), r.bidirectional) << "rp " << r.rp;
    EXPECT_EQ(T5Bucket(r.rp, false, 32, 128), r.causal) << "rp " << r.rp;
  }
  // First distance of each causal log bucket, and of each bidirectional bucket per side.
  const std::vector<std::pair<int, int>> causal_first = {
      {16, 16}, {17, 19}, {18, 21}, {19, 24}, {20, 27}, {21, 31}, {22, 35}, {23, 40},
      {24, 46}, {25, 52}, {26, 59}, {27, 67}, {28, 77}, {29, 87}, {30, 99}, {31, 113}};
  for (const auto& [bucket, n] : causal_first) {
    EXPECT_EQ(T5Bucket(-n, false, 32, 128), bucket);
    EXPECT_LT(T5Bucket(-(n - 1), false, 32, 128), bucket);
  }
  const std::vector<std::pair<int, int>> bidi_first = {{8, 8},   {9, 12},  {10, 16}, {11, 23},
                                                       {12, 32}, {13, 46}, {14, 64}, {15, 91}};
  for (const auto& [bucket, n] : bidi_first) {
    EXPECT_EQ(T5Bucket(-n, true, 32, 128), bucket);
    EXPECT_EQ(T5Bucket(n, true, 32, 128), bucket + 16);
    EXPECT_LT(T5Bucket(-(n - 1), true, 32, 128), bucket);
  }
}

TEST(T5, BucketsAreMonotoneAndSaturate) {
  int prev = 0;
  for (long n = 0; n < 5000; ++n) {
    const int b = T5Bucket(-n, false, 32, 128);
    EXPECT_GE(b, prev);
    prev = b;
    if (n >= 113) {
      EXPECT_EQ(b, 31);
    }
    if (n >= 91) {
      EXPECT_EQ(T5Bucket(-n, true, 32, 128), 15);
    }
  }
  // The bias therefore "helps" by saturation: every distance past 113 looks the same.
  auto enc = Make("t5", 8, 2);
  Rng rng(1);
  enc->Init(rng);
  std::vector<double> pos(300);
  std::iota(pos.begin(), pos.end(), 0.0);
  enc->Prepare(pos, PositionSpan(pos));
  AttentionPattern pat(true);
  AttentionContext ctx{0, 1, 2, 4, 300, pos.data(), &pat};
  MatD s = MatD::Zero(1, 300);
  enc->AddLogitTerm(ctx, 299, 300, 0, 300, HeadQK<double>{nullptr, nullptr, 0}, s.data(), 300);
  for (int j = 0; j <= 299 - 113; ++j) EXPECT_EQ(s(0, j), s(0, 0));
  EXPECT_NE(s(0, 299), s(0, 0));
}

TEST(NoPE, LeavesLogitsUntouchedAndUsesNoSite) {
  auto enc = Make("nope", 8, 2);
  EXPECT_EQ(enc->Sites(), 0u);
  EXPECT_TRUE(enc->Parameters().empty());
  // Attention logits equal q.k / sqrt(D) exactly.
  const AttentionShape sh{1, 5, 2, 4};
  Rng rng(2);
  MatD q(5, 8), k(5, 8), v(5, 8), out;
  testing::FillNormal(q, rng);
  testing::FillNormal(k, rng);
  testing::FillNormal(v, rng);
  std::vector<double> pos = {0, 1, 2, 3, 4};
  AttentionPattern pat(true);
  AttentionCache<double> cache;
  cache.capture_logits = true;
  AttentionForward(q, k, v, sh, pos, pat, *enc, 0, true, cache, out);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j <= i; ++j)
        EXPECT_NEAR(cache.logits(h * 5 + i, j),
                    q.row(i).segment(4 * h, 4).dot(k.row(j).segment(4 * h, 4)) / 2.0,
                    1e-15);  // GEMM and dot sum in different orders
}

TEST(NoPE, UniformCausalAttentionCountsPosition) {
  // Kazemnejad et al. 2023, theorem 1: zero queries and v = e_0
  // give 1/(t+1).
  auto enc = Make("nope", 4, 1);
  const int T = 20;
  const AttentionShape sh{1, T, 1, 4};
  MatD q = MatD::Zero(T, 4), k = MatD::Random(T, 4), v = MatD::Zero(T, 4), out;
  v(0, 0) = 1;
  std::vector<double> pos(T);
  std::iota(pos.begin(), pos.end(), 0.0);
  AttentionPattern pat(true);
  AttentionCache<double> cache;
  AttentionForward(q, k, v, sh, pos, pat, *enc, 0, false, cache, out);
  for (int t = 0; t < T; ++t) EXPECT_NEAR(out(t, 0), 1.0 / (t + 1), 1e-15);
}

TEST(Learned, PositionsPastTheTableAreAnExplicitChoice) {
  auto strict =
      CreateEncoding<double>("learned", {{"max_len", "4"}}, EncodingShape{4, 1, 1, true, 64});
  MatD x = MatD::Zero(5, 4);
  EXPECT_THROW(strict->AddEmbedding({0, 1, 2, 3, 4}, {}, 1, x), Error);
  auto clamp = CreateEncoding<double>("learned", {{"max_len", "4"}, {"beyond", "clamp"}},
                                      EncodingShape{4, 1, 1, true, 64});
  Rng rng(1);
  clamp->Init(rng);
  x.setZero();
  clamp->AddEmbedding({0, 1, 2, 3, 4}, {}, 1, x);
  EXPECT_EQ(x.row(3), x.row(4));
}

TEST(Registry, UnknownNamesAndOptionsListWhatExists) {
  try {
    Make("ropee", 8, 2);
    FAIL() << "no error";
  } catch (const Error& e) {
    for (const auto& info : ListEncodings())
      EXPECT_NE(std::string(e.what()).find(info.name), std::string::npos) << e.what();
  }
  try {
    Make("rope", 8, 2, {{"bse", "10"}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no option 'bse'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("base (default 10000)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Make("rope", 8, 2, {{"pairing", "diagonal"}}), Error);
  EXPECT_THROW(Make("rope", 8, 2, {{"base", "ten"}}), Error);
}

}  // namespace
}  // namespace lexp
