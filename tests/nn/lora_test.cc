// LoRA adapters (nn/optim/lora.h): the merged weight is W0 + (alpha / r) A B, training starts at
// W0 exactly, and the adapters' gradients through a whole model match finite differences.
#include "nn/optim/lora.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nn/model/transformer.h"
#include "nn/ops/cross_entropy.h"
#include "pe/registry.h"
#include "tests/testing/gradcheck.h"
#include "tests/testing/tiny_model.h"

namespace lexp {
namespace {

using testing::TinyModelConfig;

TEST(Lora, MergedWeightIsW0PlusScaledLowRankProductAndStartsAtW0) {
  const ModelConfig cfg = TinyModelConfig();
  auto enc = CreateEncoding<double>("rope", {}, EncodingShape{8, 2, 2, true, 16, 6, 7});
  Transformer<double> model(cfg, enc.get());
  Rng rng(3);
  model.Init(rng);
  auto params = model.Parameters();
  std::vector<double> w0;
  for (const auto& p : params)
    if (p.name == "layer1.attn.qkv.w") w0.assign(p.value, p.value + p.size);
  Rng lora_rng(4);
  LoraAdapters<double> lora(LoraTargetsOf(params, {"k", "o", "mlp"}), 3, 6.0, lora_rng);
  EXPECT_EQ(lora.Parameters().size(), 2u * 2 * 4) << "k, o, fc1, fc2 in two layers";
  lora.Merge();
  for (const auto& p : params)
    if (p.name == "layer1.attn.qkv.w") {
      EXPECT_EQ(std::vector<double>(p.value, p.value + p.size), w0) << "B = 0: W0 exactly";
    }
  // With B set, the k columns (8..15) of layer 1's fused projection are W0 + (6 / 3) A B and the
  // q and v columns are untouched.
  auto lp = lora.Parameters();
  for (auto& p : lp)
    for (long i = 0; i < p.size; ++i) p.value[i] = rng.Normal();
  lora.Merge();
  const ParamRef<double>* A = nullptr;
  const ParamRef<double>* B = nullptr;
  for (const auto& p : lp) {
    if (p.name == "layer1.attn.k.lora_A") A = &p;
    if (p.name == "layer1.attn.k.lora_B") B = &p;
  }
  ASSERT_TRUE(A && B);
  EXPECT_EQ(A->shape, (std::vector<uint64_t>{8, 3}));
  EXPECT_EQ(B->shape, (std::vector<uint64_t>{3, 8}));
  for (const auto& p : params)
    if (p.name == "layer1.attn.qkv.w")
      for (long i = 0; i < 8; ++i)
        for (long j = 0; j < 24; ++j) {
          double want = w0[i * 24 + j];
          if (j >= 8 && j < 16)
            for (int r = 0; r < 3; ++r) want += 2.0 * A->value[i * 3 + r] * B->value[r * 8 + j - 8];
          EXPECT_NEAR(p.value[i * 24 + j], want, 1e-12) << i << "," << j;
        }
  EXPECT_THROW(LoraTargetsOf(params, {"w"}), InputError);
}

TEST(Lora, AdapterGradientsThroughAWholeModelMatchFiniteDifferences) {
  const ModelConfig cfg = TinyModelConfig();
  for (const bool pre_ln : {true, false}) {
    ModelConfig c = cfg;
    c.pre_ln = pre_ln;
    auto enc = CreateEncoding<double>("alibi", {}, EncodingShape{8, 2, 2, true, 16, 6, 7});
    Transformer<double> model(c, enc.get());
    Rng rng(11);
    model.Init(rng);
    Rng lora_rng(12);
    LoraAdapters<double> lora(LoraTargetsOf(model.Parameters(), {"q", "v", "o", "mlp"}), 2, 4.0,
                              lora_rng);
    auto lp = lora.Parameters();
    for (auto& p : lp)  // B away from 0, so that dA is not trivially zero
      for (long i = 0; i < p.size; ++i)
        if (p.name.find("lora_B") != std::string::npos) p.value[i] = 0.3 * rng.Normal();
    const int B = 2, T = 5;
    std::vector<int> tokens(B * T), targets(B * T);
    std::vector<uint8_t> mask(B * T, 1);
    for (int i = 0; i < B * T; ++i) {
      tokens[i] = static_cast<int>(rng.UniformInt(0, 6));
      targets[i] = static_cast<int>(rng.UniformInt(0, 6));
    }
    std::vector<double> pos(T);
    for (int t = 0; t < T; ++t) pos[t] = t;
    auto loss = [&] {
      lora.Merge();
      MatD logits;
      model.Forward(tokens, B, T, pos, false, false, logits);
      return CrossEntropyForwardBackward<double>(logits, targets, mask, nullptr, nullptr, nullptr)
          .MeanLoss();
    };
    model.ZeroGrad();
    lora.ZeroGrad();
    lora.Merge();
    MatD logits, d_logits;
    model.Forward(tokens, B, T, pos, true, false, logits);
    CrossEntropyForwardBackward<double>(logits, targets, mask, &d_logits, nullptr, nullptr);
    model.Backward(tokens, d_logits);
    lora.Backward();
    const auto res = testing::CheckGradients(loss, lp, testing::CopyGrads(lp), 40);
    EXPECT_GT(res.checked, 16 * 20) << (pre_ln ? "pre-LN" : "post-LN");
  }
}

}  // namespace
}  // namespace lexp
