// Golden tests: the C++ model in double, loaded with the weights of tests/golden/tiny_<pos>.h5
// (written by PyTorch in float64, tests/golden/make_golden.py), reproduces PyTorch's logits, loss
// and every gradient; and twelve optimizer steps reproduce PyTorch's AdamW trajectory. Both sides
// compute in double, so agreement is to rounding.
#include <gtest/gtest.h>

#include "nn/io/hdf5.h"
#include "nn/model/transformer.h"
#include "nn/ops/cross_entropy.h"
#include "nn/optim/adamw.h"
#include "pe/registry.h"

namespace lexp {
namespace {

constexpr double kGoldenTol = 1e-10;

// The model a golden file describes (root attributes vocab, d_model, n_heads, n_layers, d_ff).
ModelConfig ModelConfigOf(const h5::Group& r) {
  ModelConfig mc;
  mc.vocab = static_cast<int>(r.AttrInt("vocab"));
  mc.d_model = static_cast<int>(r.AttrInt("d_model"));
  mc.n_heads = static_cast<int>(r.AttrInt("n_heads"));
  mc.n_layers = static_cast<int>(r.AttrInt("n_layers"));
  mc.d_ff = static_cast<int>(r.AttrInt("d_ff"));
  return mc;
}

// Copies the file's /params/<name> into every parameter of the model.
void LoadParams(const h5::Group& r, const std::vector<ParamRef<double>>& params) {
  const h5::Group pg = r.OpenGroup("params");
  for (const auto& p : params) {
    const auto v = pg.ReadDoubles(p.name);
    ASSERT_EQ(static_cast<long>(v.size()), p.size) << p.name;
    std::copy(v.begin(), v.end(), p.value);
  }
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, MatchesPyTorchLogitsLossAndGradients) {
  const std::string path =
      std::string(LEXP_SOURCE_DIR) + "/tests/golden/tiny_" + GetParam() + ".h5";
  h5::Reader f(path);
  const auto& r = f.root();
  const ModelConfig mc = ModelConfigOf(r);
  const int B = static_cast<int>(r.AttrInt("batch")), T = static_cast<int>(r.AttrInt("seq"));
  auto enc = CreateEncoding<double>(GetParam(), {},
                                    EncodingShape{mc.d_model, mc.n_heads, mc.n_layers, true, T});
  Transformer<double> model(mc, enc.get());
  auto params = model.Parameters();
  LoadParams(r, params);
  h5::Group gg = r.OpenGroup("grads");
  auto to_int = [](const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); };
  const std::vector<int> tokens = to_int(r.ReadInts("tokens")),
                         targets = to_int(r.ReadInts("targets"));
  std::vector<uint8_t> mask;
  for (auto m : r.ReadInts("mask")) mask.push_back(static_cast<uint8_t>(m));
  std::vector<double> pos(T);
  for (int t = 0; t < T; ++t) pos[t] = t;
  MatD logits, d_logits;
  model.ZeroGrad();
  model.Forward(tokens, B, T, pos, true, false, logits);
  const auto ref_logits = r.ReadDoubles("logits");
  for (long i = 0; i < logits.size(); ++i)
    ASSERT_NEAR(logits.data()[i], ref_logits[i], kGoldenTol * (1 + std::abs(ref_logits[i]))) << i;
  const auto ce =
      CrossEntropyForwardBackward<double>(logits, targets, mask, &d_logits, nullptr, nullptr);
  EXPECT_NEAR(ce.MeanLoss(), r.ReadDoubles("loss")[0], kGoldenTol);
  model.Backward(tokens, d_logits);
  int checked = 0;
  for (const auto& p : params) {
    const auto g = gg.ReadDoubles(p.name);
    for (long i = 0; i < p.size; ++i)
      ASSERT_NEAR(p.grad[i], g[i], kGoldenTol * (1 + std::abs(g[i]))) << p.name << "[" << i << "]";
    ++checked;
  }
  EXPECT_EQ(checked, 1 + 12 * mc.n_layers + 4);  // embedding, 12 per block, final norm, head
}

INSTANTIATE_TEST_SUITE_P(Positions, Golden, ::testing::Values("rope", "alibi"));

// Twelve training steps against PyTorch in float64 (tests/golden/adamw_trajectory.h5): the
// learning rate of every step (warm-up then cosine), the gradient norm before clipping, the loss,
// and every parameter after every AdamW step with decoupled weight decay and clipping. A wrong bias
// correction, decay, clip coefficient or schedule drifts the parameters within a few steps.
TEST(Golden, AdamWTrajectoryMatchesPyTorchStepByStep) {
  h5::Reader f(std::string(LEXP_SOURCE_DIR) + "/tests/golden/adamw_trajectory.h5");
  const auto& r = f.root();
  const ModelConfig mc = ModelConfigOf(r);
  const int B = static_cast<int>(r.AttrInt("batch")), T = static_cast<int>(r.AttrInt("seq"));
  const int steps = static_cast<int>(r.AttrInt("steps"));
  auto enc = CreateEncoding<double>("rope", {},
                                    EncodingShape{mc.d_model, mc.n_heads, mc.n_layers, true, T});
  Transformer<double> model(mc, enc.get());
  auto params = model.Parameters();
  LoadParams(r, params);
  h5::Group after = r.OpenGroup("after");
  AdamWConfig ac;
  ac.lr = r.AttrDouble("lr");
  ac.beta1 = r.AttrDouble("beta1");
  ac.beta2 = r.AttrDouble("beta2");
  ac.eps = r.AttrDouble("eps");
  ac.weight_decay = r.AttrDouble("weight_decay");
  ac.clip_norm = r.AttrDouble("clip_norm");
  ac.warmup_steps = static_cast<int>(r.AttrInt("warmup_steps"));
  ac.total_steps = static_cast<int>(r.AttrInt("total_steps"));
  ac.min_lr_ratio = r.AttrDouble("min_lr_ratio");
  AdamW<double> adam(ac);
  adam.Attach(params);
  const auto tokens = r.ReadInts("tokens"), targets = r.ReadInts("targets"),
             masks = r.ReadInts("mask");
  const auto loss_ref = r.ReadDoubles("loss"), lr_ref = r.ReadDoubles("lr"),
             norm_ref = r.ReadDoubles("grad_norm");
  std::vector<double> pos(T);
  for (int t = 0; t < T; ++t) pos[t] = t;
  bool clipped = false;
  for (int step = 0; step < steps; ++step) {
    const long n = static_cast<long>(B) * T, at = step * n;
    const std::vector<int> tok(tokens.begin() + at, tokens.begin() + at + n),
        tgt(targets.begin() + at, targets.begin() + at + n);
    std::vector<uint8_t> mask(masks.begin() + at, masks.begin() + at + n);
    MatD logits, d_logits;
    model.ZeroGrad();
    model.Forward(tok, B, T, pos, true, false, logits);
    const auto ce =
        CrossEntropyForwardBackward<double>(logits, tgt, mask, &d_logits, nullptr, nullptr);
    EXPECT_NEAR(ce.MeanLoss(), loss_ref[step], 1e-9) << "step " << step;
    model.Backward(tok, d_logits);
    const double lr = ScheduledLr(ac, step);
    EXPECT_NEAR(lr, lr_ref[step], 1e-15 * ac.lr) << "step " << step;
    const double norm = adam.Step(params, lr);
    EXPECT_NEAR(norm, norm_ref[step], 1e-9 * norm_ref[step]) << "step " << step;
    clipped = clipped || norm > ac.clip_norm;
    for (const auto& p : params) {
      const auto want = after.ReadDoubles(p.name);  // [steps, size]
      for (long i = 0; i < p.size; ++i)
        ASSERT_NEAR(p.value[i], want[step * p.size + i],
                    1e-9 * (1 + std::abs(want[step * p.size + i])))
            << p.name << "[" << i << "] after step " << step;
    }
  }
  EXPECT_TRUE(clipped) << "the trajectory should exercise the clipping";
}

}  // namespace
}  // namespace lexp
