// The empirical attention expectation measured on a RoPE model equals the closed form when the
// query and key projections are set by hand: with W_q = W_k = 0 and biases of ones every query and
// key is the all-ones vector, so the logit at distance n is s(n) / sqrt(D) with the proxy s of
// Sun et al. 2022, sections 2-3 (analysis/rope_theory.h), whatever the tokens.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/attention_geometry.h"
#include "analysis/rope_theory.h"
#include "nn/model/transformer.h"
#include "pe/registry.h"

namespace lexp {
namespace {

TEST(ExpectationOnAModel, EqualsTheClosedFormForHandSetProjections) {
  ModelConfig cfg;
  cfg.vocab = 11;
  cfg.d_model = 32;
  cfg.n_heads = 2;
  cfg.n_layers = 1;
  cfg.d_ff = 16;
  const int D = 16, T = 300;
  auto enc = CreateEncoding<double>("rope", {}, EncodingShape{32, 2, 1, true, T, 64});
  Transformer<double> model(cfg, enc.get());
  Rng rng(1);
  model.Init(rng);
  for (auto& p : model.Parameters()) {
    if (p.name == "layer0.attn.qkv.w") {
      for (long i = 0; i < p.size; ++i) {
        const long col = i % (3 * 32);
        if (col < 2 * 32) p.value[i] = 0;  // q and k ignore the input
      }
    }
    if (p.name == "layer0.attn.qkv.b")
      for (long c = 0; c < 2 * 32; ++c) p.value[c] = 1;  // q = k = all ones
  }
  std::vector<int> tokens(T);
  for (int t = 0; t < T; ++t) tokens[t] = static_cast<int>(rng.UniformInt(0, 10));
  std::vector<double> pos(T);
  for (int t = 0; t < T; ++t) pos[t] = t;
  MatD logits;
  model.Forward(tokens, 1, T, pos, false, true, logits);
  const MatD& z = model.Logits(0);  // [H*T, T]
  const auto s = theory::ExpectationProxy(D, 1e4, T - 1);
  for (int h = 0; h < 2; ++h) {
    std::vector<float> map(static_cast<size_t>(T) * T);
    for (long i = 0; i < static_cast<long>(map.size()); ++i)
      map[i] = static_cast<float>(z.data()[h * T * T + i]);
    std::vector<double> sum(T, 0.0), count(T, 0.0);
    AccumulateLogitsByDistance(map.data(), T, T, sum, count);
    for (int n : {0, 1, 5, 50, 299})
      EXPECT_NEAR(sum[n] / count[n], s[n] / std::sqrt(static_cast<double>(D)), 1e-5)
          << h << " " << n;
  }
}

}  // namespace
}  // namespace lexp
