// The retrieved memory of one layer (nn/ops/knn_memory.h): the Memorizing Transformer's gate and
// the Focused Transformer's single softmax. Retrieval against a naive search; with every earlier
// key retrieved and one softmax, a windowed layer plus its memory is plain causal attention; and
// the model's gradients are those of a reference whose memory keys and values are held fixed
// (the memory is read-only, as a stored one is).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "nn/model/transformer.h"
#include "nn/ops/cross_entropy.h"
#include "pe/patterns.h"
#include "pe/registry.h"
#include "tests/testing/gradcheck.h"
#include "tests/testing/reference_transformer.h"
#include "tests/testing/tiny_model.h"

namespace lexp {
namespace {

using testing::CheckGradients;
using testing::CopyGrads;
using testing::ReadWeights;
using testing::ReferenceBlock;
using testing::ReferenceHeadLoss;
using testing::TinyModelConfig;

TEST(KnnMemory, RetrievesTheTopKByInnerProductAndAttendsOverThem) {
  const int B = 2, T = 12, H = 2, D = 3;
  const long C = H * D;
  Rng rng(3);
  MatD qkv(B * T, 3 * C);
  for (long i = 0; i < qkv.size(); ++i) qkv.data()[i] = rng.Normal();
  const SlidingWindowPattern window(3);
  for (const int memory : {0, 4}) {
    KnnMemoryConfig cfg;
    cfg.layer = 0;
    cfg.top_k = 2;
    cfg.memory = memory;
    KnnMemoryCache<double> cache;
    KnnMemoryForward(qkv, B, T, H, window, cfg, cache);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < T; ++i) {
          const long row = (static_cast<long>(b) * H + h) * T + i;
          const int end = std::max(0, i - 2), begin = memory > 0 ? std::max(0, end - memory) : 0;
          std::vector<std::pair<double, int>> scored;  // (-logit, key): sorted = best first
          for (int j = begin; j < end; ++j)
            scored.push_back({-qkv.row(b * T + i).segment(h * D, D).dot(
                                  qkv.row(b * T + j).segment(C + h * D, D)) /
                                  std::sqrt(3.0),
                              j});
          std::sort(scored.begin(), scored.end());
          const int kept = std::min<int>(2, static_cast<int>(scored.size()));
          if (kept == 0) {
            EXPECT_EQ(cache.lse[row], -std::numeric_limits<double>::infinity());
            EXPECT_EQ(cache.idx[row * 2], -1);
            EXPECT_EQ(cache.out.row(b * T + i).segment(h * D, D).norm(), 0);
            continue;
          }
          double z = 0;
          for (int t = 0; t < kept; ++t) z += std::exp(-scored[t].first);
          RowVec<double> o = RowVec<double>::Zero(D);
          for (int t = 0; t < kept; ++t) {
            EXPECT_EQ(cache.idx[row * 2 + t], scored[t].second) << i;
            o += std::exp(-scored[t].first) / z *
                 qkv.row(b * T + scored[t].second).segment(2 * C + h * D, D);
          }
          EXPECT_NEAR(cache.lse[row], std::log(z), 1e-12);
          EXPECT_LT((cache.out.row(b * T + i).segment(h * D, D) - o).norm(), 1e-12) << i;
        }
  }
}

// A window of 2 keys plus a memory that retrieves every older key into the same softmax is causal
// attention over every key (NoPE: the memory's keys are scored as the local ones).
TEST(KnnMemory, OneSoftmaxOverEveryRetrievedKeyIsFullCausalAttention) {
  const int B = 2, T = 9;
  ModelConfig plain = TinyModelConfig(), with_memory = plain;
  with_memory.knn = KnnMemoryConfig{1, T, 0, true};
  EncodingShape es{8, 2, 2, true, T, T, 7};
  auto enc = CreateEncoding<double>("nope", {}, es);
  Transformer<double> a(plain, enc.get()), b(with_memory, enc.get());
  Rng rng(5), rng2(5);
  a.Init(rng);
  b.Init(rng2);
  // Layer 0 windowed in both; layer 1 plain causal in the first, window + memory in the second.
  const SlidingWindowPattern window(2);
  std::vector<int> tokens(B * T);
  for (int& t : tokens) t = static_cast<int>(rng.UniformInt(0, 6));
  std::vector<double> pos(T);
  std::iota(pos.begin(), pos.end(), 0.0);
  b.set_pattern(&window);
  MatD with, without;
  b.Forward(tokens, B, T, pos, false, false, with);
  // The first model, layer by layer from the reference: window at layer 0, causal at layer 1.
  const auto w = ReadWeights(a);
  MatD x(B * T, 8);
  for (int r = 0; r < B * T; ++r) x.row(r) = w.tok_emb.row(tokens[r]);
  const AttentionPattern causal(true);
  x = ReferenceBlock(w.blocks[0], *enc, 0, true, B, T, 2, pos, window, x);
  x = ReferenceBlock(w.blocks[1], *enc, 1, true, B, T, 2, pos, causal, x);
  LayerNormCache<double> ln;
  MatD hf;
  LayerNormForward(x, w.ln_f, hf, ln);
  LinearForward(hf, w.head, without);
  EXPECT_LT((with - without).cwiseAbs().maxCoeff(), 1e-12);
}

struct Case {
  std::string encoding;
  bool softmax_merge;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.encoding << (c.softmax_merge ? " softmax" : " gate");
}

class KnnMemoryGradients : public ::testing::TestWithParam<Case> {};

TEST_P(KnnMemoryGradients, AreThoseOfTheModelWithItsMemoryHeldFixed) {
  const Case& tc = GetParam();
  const int B = 2, T = 10, H = 2;
  ModelConfig cfg = TinyModelConfig();
  cfg.knn = KnnMemoryConfig{1, 2, 5, tc.softmax_merge};
  EncodingShape es{8, 2, 2, true, T, T, 7};
  auto enc = CreateEncoding<double>(tc.encoding, {}, es);
  Transformer<double> model(cfg, enc.get());
  const SlidingWindowPattern window(3);
  model.set_pattern(&window);
  Rng rng(9);
  model.Init(rng);
  testing::PerturbVectors(model, rng, 0.3, "knn_gate");
  const testing::TinyBatch batch = testing::MakeTinyBatch(B, T, 7, rng);
  const double one_pass = testing::TinyGradients(model, batch);
  const MatD frozen = model.Cache(1).qkv;  // the memory: layer 1's keys and values at theta_0
  auto params = model.Parameters();
  const auto analytic = CopyGrads(params);

  const std::string gate = "layer1.attn.knn_gate";
  auto held = [&] {
    const auto w = ReadWeights(model);
    enc->Prepare(batch.pos, T - 1);
    auto merge = [&](int layer, const MatD& qkv, const Vec<double>& lse, MatD& att) {
      if (layer != 1) return;
      MatD mixed = qkv;  // live queries, the stored keys and values
      mixed.rightCols(16) = frozen.rightCols(16);
      KnnMemoryCache<double> mem;
      KnnMemoryForward(mixed, B, T, H, window, cfg.knn, mem);
      for (int r = 0; r < B * T; ++r)
        for (int h = 0; h < H; ++h) {
          const long idx = ((r / T) * H + h) * T + r % T;
          if (std::isinf(mem.lse[idx])) continue;
          const double g = tc.softmax_merge
                               ? 1 / (1 + std::exp(lse[idx] - mem.lse[idx]))
                               : 1 / (1 + std::exp(-w.extra.at(gate)[h]));
          att.row(r).segment(4 * h, 4) =
              (1 - g) * att.row(r).segment(4 * h, 4) + g * mem.out.row(r).segment(4 * h, 4);
        }
    };
    MatD x(B * T, 8);
    for (int r = 0; r < B * T; ++r) x.row(r) = w.tok_emb.row(batch.tokens[r]);
    for (int l = 0; l < 2; ++l)
      x = ReferenceBlock(w.blocks[l], *enc, l, true, B, T, H, batch.pos, window, x, merge);
    const auto [sum, count] = ReferenceHeadLoss(w, x, batch.targets, batch.mask);
    return sum / count;
  };
  EXPECT_NEAR(held(), one_pass, 1e-12);
  const auto res = CheckGradients(held, params, analytic, 6);
  EXPECT_GT(res.checked, 50);

  // The model's own loss, its memory moving with the parameters, has other gradients: the check
  // above can fail.
  const double largest = testing::LargestGapToFiniteDifferences(
      params, "layer1.attn.qkv.w", [&] { return testing::TinyLoss(model, batch, false); });
  EXPECT_GT(largest, 1e-5) << "the memory's keys and values must get no gradient";
}

INSTANTIATE_TEST_SUITE_P(Merges, KnnMemoryGradients,
                         ::testing::Values(Case{"rope", false}, Case{"alibi", false},
                                           Case{"rope", true}, Case{"t5", true},
                                           Case{"nope", true}),
                         [](const auto& param_info) {
                           return param_info.param.encoding +
                                  (param_info.param.softmax_merge ? "_softmax" : "_gate");
                         });

}  // namespace
}  // namespace lexp
