// Golden test: the C++ model in double, loaded with the weights of tests/golden/tiny_<pos>.h5
// (written by PyTorch in float64, tests/golden/make_golden.py), reproduces PyTorch's logits, loss
// and every gradient. Both sides compute in double, so agreement is to rounding: 1e-10 relative.
#include <gtest/gtest.h>

#include "nn/io/hdf5.h"
#include "nn/model/transformer.h"
#include "nn/ops/cross_entropy.h"
#include "pe/registry.h"

namespace lexp {
namespace {

constexpr double kGoldenTol = 1e-10;

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, MatchesPyTorchLogitsLossAndGradients) {
  const std::string path =
      std::string(LEXP_SOURCE_DIR) + "/tests/golden/tiny_" + GetParam() + ".h5";
  h5::Reader f(path);
  const auto& r = f.root();
  ModelConfig mc;
  mc.vocab = static_cast<int>(r.AttrInt("vocab"));
  mc.d_model = static_cast<int>(r.AttrInt("d_model"));
  mc.n_heads = static_cast<int>(r.AttrInt("n_heads"));
  mc.n_layers = static_cast<int>(r.AttrInt("n_layers"));
  mc.d_ff = static_cast<int>(r.AttrInt("d_ff"));
  const int B = static_cast<int>(r.AttrInt("batch")), T = static_cast<int>(r.AttrInt("seq"));
  auto enc = CreateEncoding<double>(GetParam(), {},
                                    EncodingShape{mc.d_model, mc.n_heads, mc.n_layers, true, T});
  Transformer<double> model(mc, enc.get());
  auto params = model.Parameters();
  h5::Group pg = r.OpenGroup("params"), gg = r.OpenGroup("grads");
  for (auto& p : params) {
    const auto v = pg.ReadDoubles(p.name);
    ASSERT_EQ(static_cast<long>(v.size()), p.size) << p.name;
    std::copy(v.begin(), v.end(), p.value);
  }
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

}  // namespace
}  // namespace lexp
