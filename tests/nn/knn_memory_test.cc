// The retrieved memory of one layer (nn/ops/knn_memory.h): the Memorizing Transformer's gate and
// the Focused Transformer's single softmax. Retrieval against a naive search; with every earlier
// key retrieved and one softmax, a windowed layer plus its memory is plain causal attention; and
// the model's gradients are those of a reference whose memory keys and values are held fixed
// (the memory is read-only, as a stored one is).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
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

// group 2 over 3 sequences: sequences 0 and 1 read each other's memories (FoT's crossbatch), the
// last, alone in its group, its own.
TEST(KnnMemory, RetrievesTheTopKByInnerProductAndAttendsOverThem) {
  const int B = 3, T = 12, H = 2, D = 3;
  const long C = H * D;
  Rng rng(3);
  MatD qkv(B * T, 3 * C);
  for (long i = 0; i < qkv.size(); ++i) qkv.data()[i] = rng.Normal();
  const SlidingWindowPattern window(3);
  for (const int group : {1, 2})
    for (const int memory : {0, 4}) {
      KnnMemoryConfig cfg;
      cfg.layer = 0;
      cfg.top_k = 3;
      cfg.memory = memory;
      KnnMemoryCache<double> cache;
      KnnMemoryForward(qkv, B, T, H, window, cfg, cache, group);
      for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h)
          for (int i = 0; i < T; ++i) {
            const long row = (static_cast<long>(b) * H + h) * T + i;
            const int end = std::max(0, i - 2), begin = memory > 0 ? std::max(0, end - memory) : 0;
            std::vector<int> docs = {b};
            if (group == 2 && b < 2) docs = {0, 1};
            std::vector<std::pair<double, int>> scored;  // (-logit, key row): sorted = best first
            for (const int d : docs)
              for (int j = begin; j < end; ++j)
                scored.push_back({-qkv.row(b * T + i).segment(h * D, D).dot(
                                      qkv.row(d * T + j).segment(C + h * D, D)) /
                                      std::sqrt(3.0),
                                  d * T + j});
            std::sort(scored.begin(), scored.end());
            const int kept = std::min<int>(3, static_cast<int>(scored.size()));
            if (kept == 0) {
              EXPECT_EQ(cache.lse[row], -std::numeric_limits<double>::infinity());
              EXPECT_EQ(cache.idx[row * 3], -1);
              EXPECT_EQ(cache.out.row(b * T + i).segment(h * D, D).norm(), 0);
              continue;
            }
            double z = 0;
            for (int t = 0; t < kept; ++t) z += std::exp(-scored[t].first);
            RowVec<double> o = RowVec<double>::Zero(D);
            for (int t = 0; t < kept; ++t) {
              EXPECT_EQ(cache.idx[row * 3 + t], scored[t].second) << i;
              o += std::exp(-scored[t].first) / z *
                   qkv.row(scored[t].second).segment(2 * C + h * D, D);
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

// Crossbatch reads other sequences' memories in training only: evaluation (and decoding) give the
// bits of a model without it, a training pass does not.
TEST(KnnMemory, CrossbatchIsForTrainingOnly) {
  const int B = 4, T = 10;
  ModelConfig own = TinyModelConfig(), cross = own;
  own.knn = KnnMemoryConfig{1, 3, 0, true};
  cross.knn = own.knn;
  cross.knn.crossbatch = 2;
  EncodingShape es{8, 2, 2, true, T, T, 7};
  auto enc = CreateEncoding<double>("rope", {}, es);
  Transformer<double> a(own, enc.get()), b(cross, enc.get());
  Rng rng(4), rng2(4);
  a.Init(rng);
  b.Init(rng2);
  const SlidingWindowPattern window(3);
  a.set_pattern(&window);
  b.set_pattern(&window);
  const testing::TinyBatch batch = testing::MakeTinyBatch(B, T, 7, rng);
  enc->Prepare(batch.pos, T - 1);
  MatD za, zb;
  a.Forward(batch.tokens, B, T, batch.pos, false, false, za);
  b.Forward(batch.tokens, B, T, batch.pos, false, false, zb);
  EXPECT_EQ((za - zb).cwiseAbs().maxCoeff(), 0);
  a.Forward(batch.tokens, B, T, batch.pos, true, false, za);
  b.Forward(batch.tokens, B, T, batch.pos, true, false, zb);
  EXPECT_GT((za - zb).cwiseAbs().maxCoeff(), 1e-6);
}

struct Case {
  std::string encoding;
  bool softmax_merge;
  int crossbatch = 1;
  bool memory_gradient = false;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.encoding << (c.softmax_merge ? " softmax" : " gate") << " crossbatch "
      << c.crossbatch << (c.memory_gradient ? " differentiable" : "");
}

class KnnMemoryGradients : public ::testing::TestWithParam<Case> {};

TEST_P(KnnMemoryGradients, AreThoseOfTheModelWithItsMemoryHeldFixed) {
  const Case& tc = GetParam();
  const int B = 2, T = 10, H = 2;
  ModelConfig cfg = TinyModelConfig();
  // A differentiable memory retrieves every key (top_k >= d * memory), as FoT trains: the loss is
  // then smooth in every parameter.
  cfg.knn = KnnMemoryConfig{1, tc.memory_gradient ? 32 : 2, 5, tc.softmax_merge, tc.crossbatch,
                            tc.memory_gradient};
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
      KnnMemoryForward(mixed, B, T, H, window, cfg.knn, mem, cfg.knn.crossbatch);
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
  // A differentiable memory's gradients are those of the training pass itself, every key and value
  // moving with the parameters; a read-only one's those of the reference with its memory held.
  const auto live = [&] { return testing::TinyLoss(model, batch, true); };
  const auto res = tc.memory_gradient ? CheckGradients(live, params, analytic, 6)
                                      : CheckGradients(held, params, analytic, 6);
  EXPECT_GT(res.checked, 50);

  // The other loss has other gradients: the check above can fail.
  const double largest = testing::LargestGapToFiniteDifferences(
      params, "layer1.attn.qkv.w", tc.memory_gradient ? std::function<double()>(held) : live);
  EXPECT_GT(largest, 1e-5) << (tc.memory_gradient
                                   ? "the memory's keys and values must get their gradient"
                                   : "the memory's keys and values must get no gradient");
}

INSTANTIATE_TEST_SUITE_P(Merges, KnnMemoryGradients,
                         ::testing::Values(Case{"rope", false}, Case{"alibi", false},
                                           Case{"rope", true}, Case{"t5", true},
                                           Case{"nope", true}, Case{"rope", true, 2},
                                           Case{"alibi", false, 2},
                                           Case{"rope", true, 2, true},
                                           Case{"t5", true, 1, true}),
                         [](const auto& param_info) {
                           const Case& c = param_info.param;
                           return c.encoding + (c.softmax_merge ? "_softmax" : "_gate") +
                                  (c.crossbatch > 1 ? "_crossbatch" : "") +
                                  (c.memory_gradient ? "_differentiable" : "");
                         });

}  // namespace
}  // namespace lexp
