// Properties of the absolute encodings beyond sinusoidal and learned: CAPE (Likhomanenko et al.
// 2021: the neutral setting is the sinusoid, evaluation never augments, eps < 0.5 keeps the order,
// augmentation bounds), random_shift (SHAPE), complex word-order embeddings (1.4: shift
// equivariance and bounded modulus) and FLOATER (1.5: starts as the sinusoid; exact gradients
// through the RK4 solve).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "pe/floater.h"
#include "pe/registry.h"
#include "pe/sinusoidal.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

constexpr int kC = 8;

std::unique_ptr<PositionEncoding<double>> Make(const std::string& name,
                                               const std::map<std::string, std::string>& o = {},
                                               int vocab = 5) {
  auto enc = CreateEncoding<double>(name, o, EncodingShape{kC, 2, 1, true, 100, 16, vocab});
  Rng rng(3);
  enc->Init(rng);
  return enc;
}

MatD Embed(PositionEncoding<double>& enc, const std::vector<double>& pos,
           const std::vector<int>& tokens = {}) {
  MatD x = MatD::Zero(static_cast<long>(pos.size()), kC);
  enc.Prepare(pos, PositionSpan(pos));
  enc.AddEmbedding(pos, tokens, 1, x);
  return x;
}

MatD SinusoidAt(const std::vector<double>& pos) {
  MatD x(static_cast<long>(pos.size()), kC);
  for (size_t t = 0; t < pos.size(); ++t) SinusoidalRow(pos[t], kC, 10000.0, x.row(t).data());
  return x;
}

TEST(Cape, NeutralAugmentationIsTheSinusoidAndEvaluationNeverAugments) {
  auto neutral = Make(
      "cape", {{"max_global_shift", "0"}, {"max_local_shift", "0"}, {"max_global_scaling", "1"}});
  auto cape = Make("cape");
  Rng rng(1);
  std::vector<double> train, eval;
  neutral->PositionIds(20, true, rng, train);
  cape->PositionIds(20, false, rng, eval);
  for (int t = 0; t < 20; ++t) {
    EXPECT_EQ(train[t], t);
    EXPECT_EQ(eval[t], t);
  }
  EXPECT_LT((Embed(*neutral, train) - SinusoidAt(train)).cwiseAbs().maxCoeff(), 1e-15);
}

TEST(Cape, AugmentationStaysInItsBoundsAndKeepsTheOrder) {
  Rng rng(2);
  std::vector<double> pos;
  auto shift_only = Make("cape", {{"max_local_shift", "0"}, {"max_global_scaling", "1"}});
  auto scale_only = Make("cape", {{"max_global_shift", "0"}, {"max_local_shift", "0"}});
  auto full = Make("cape", {{"max_local_shift", "0.49"}});
  bool shifted = false;
  for (int draw = 0; draw < 200; ++draw) {
    shift_only->PositionIds(10, true, rng, pos);
    const double delta = pos[0];
    EXPECT_LE(std::abs(delta), 5.0);
    shifted |= std::abs(delta) > 1;
    for (int t = 0; t < 10; ++t) EXPECT_NEAR(pos[t] - t, delta, 1e-12);  // one shift per sequence
    scale_only->PositionIds(10, true, rng, pos);
    const double lambda = pos[9] / 9;
    EXPECT_GE(lambda, 1 / 1.03 - 1e-12);
    EXPECT_LE(lambda, 1.03 + 1e-12);
    full->PositionIds(50, true, rng, pos);
    for (int t = 1; t < 50; ++t) EXPECT_GT(pos[t], pos[t - 1]);  // eps < 0.5: order kept
  }
  EXPECT_TRUE(shifted);
  auto normalized = Make("cape", {{"normalize", "true"}});
  normalized->PositionIds(11, false, rng, pos);
  EXPECT_DOUBLE_EQ(pos[0], -5.0);
  EXPECT_DOUBLE_EQ(pos[10], 5.0);
}

TEST(RandomShift, TrainsOnShiftedWindowsAndEvaluatesFromZero) {
  auto enc = Make("random_shift", {{"max_shift", "30"}});
  EXPECT_EQ(enc->Name(), "random_shift");
  Rng rng(4);
  std::vector<double> pos;
  int max_k = 0;
  for (int draw = 0; draw < 300; ++draw) {
    enc->PositionIds(6, true, rng, pos);
    const int k = static_cast<int>(pos[0]);
    EXPECT_GE(k, 0);
    EXPECT_LE(k, 30);
    max_k = std::max(max_k, k);
    for (int t = 0; t < 6; ++t) EXPECT_EQ(pos[t], k + t);
  }
  EXPECT_EQ(max_k, 30);
  enc->PositionIds(6, false, rng, pos);
  EXPECT_EQ(pos[0], 0.0);
  EXPECT_LT((Embed(*enc, {7, 8}) - SinusoidAt({7, 8})).cwiseAbs().maxCoeff(), 1e-15);
}

TEST(ComplexOrder, IsShiftEquivariantWithBoundedModulus) {
  auto enc = Make("complex_order");
  auto omega = enc->Parameters()[0];
  Rng rng(5);
  for (long i = 0; i < omega.size; ++i) omega.value[i] = rng.Uniform(0.01, 2.0);  // per-word
  const std::vector<int> tokens = {3};
  MatD x0(1, kC);
  testing::FillNormal(x0, rng);  // token embedding: amplitudes | phases
  auto f = [&](double p) {
    MatD x = x0;
    enc->AddEmbedding({p}, tokens, 1, x);
    return x;
  };
  const int half = kC / 2;
  for (double p : {0.0, 3.0, 17.0})
    for (double d : {1.0, 5.0, 40.0}) {
      const MatD a = f(p), b = f(p + d);
      for (int c = 0; c < half; ++c) {
        const std::complex<double> za(a(0, c), a(0, half + c)), zb(b(0, c), b(0, half + c));
        const std::complex<double> rot = std::polar(1.0, omega.value[3 * half + c] * d);
        EXPECT_NEAR(std::abs(zb - za * rot), 0.0, 1e-12);
        EXPECT_NEAR(std::abs(za), std::abs(x0(0, c)), 1e-12);
      }
    }
}

TEST(Floater, StartsAsTheSinusoidalEncoding) {
  std::vector<double> pos(64);
  for (int t = 0; t < 64; ++t) pos[t] = t;
  auto error = [&](int steps) {
    auto enc = Make("floater", {{"steps", std::to_string(steps)}});
    return (Embed(*enc, pos) - SinusoidAt(pos)).cwiseAbs().maxCoeff();
  };
  // Fastest pair: 1 rad per position; RK4's phase error per step is ~ (1/steps)^5 / 120.
  const double e8 = error(8), e4 = error(4), e16 = error(16);
  EXPECT_LT(e8, 1.5 * 64 / (120 * std::pow(8.0, 4)));  // the default: 1.3e-4 predicted
  // Fourth-order convergence: 4x more steps, 256x less error.
  EXPECT_GT(e4 / e16, 150);
  EXPECT_LT(e4 / e16, 400);
  auto enc = Make("floater");
  std::vector<double> half = {0.5};
  MatD x(1, kC);
  EXPECT_THROW(enc->Prepare(half, PositionSpan(half)), InputError);
}

TEST(Floater, GradientsThroughTheSolverMatchFiniteDifferences) {
  auto enc = Make("floater", {{"steps", "3"}});
  Rng rng(6);
  auto params = enc->Parameters();
  for (auto& p : params)  // leave the sinusoidal start, so every parameter has a gradient
    for (long i = 0; i < p.size; ++i) p.value[i] = 0.3 * rng.Normal();
  const std::vector<double> pos = {0, 2, 3, 7, 3};
  const int B = 2;
  MatD w(B * 5, kC);
  testing::FillNormal(w, rng);
  auto loss = [&] {
    MatD x = MatD::Zero(B * 5, kC);
    enc->Prepare(pos, PositionSpan(pos));
    enc->AddEmbedding(pos, {}, B, x);
    return x.cwiseProduct(w).sum();
  };
  for (auto& p : params) std::fill(p.grad, p.grad + p.size, 0.0);
  loss();
  MatD d_x = w;
  enc->EmbeddingBackward(pos, {}, B, d_x);
  const auto res = testing::CheckGradients(loss, params, testing::CopyGrads(params), 40);
  EXPECT_GT(res.checked, 100);
}

}  // namespace
}  // namespace lexp
