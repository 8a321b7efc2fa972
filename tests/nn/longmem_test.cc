// LongMem (Wang et al. 2023): a side network beside a frozen backbone, whose memory layer reads the
// backbone's cached keys and values in chunks. Chunk retrieval from another layer's keys against a
// naive search; the whole model against a reference built block by block from lexp's ops (the
// backbone's streams, the side blocks with what their backbone blocks added, the memory merged by
// its gate); its gradients against finite differences, for the side network only (the backbone
// gets none although the loss depends on it); the side's start as copies of backbone blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
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

using testing::ReadWeights;
using testing::ReferenceBlock;
using testing::ReferenceHeadLoss;

// Chunks of s rows, whole ones inside the memory, scored by q . (their mean key) / sqrt(D): the
// best floor(top_k / s) retrieved whole, keys and values from the memory's matrix, not the
// querying layer's.
TEST(KnnMemory, ChunksOfAnotherLayersKeysAreRetrievedWholeByTheirMeanKey) {
  const int B = 2, T = 14, H = 2, D = 3, s = 3;
  const long C = H * D;
  Rng rng(5);
  MatD qkv(B * T, 3 * C), memory(B * T, 3 * C);
  testing::FillNormal(qkv, rng);
  testing::FillNormal(memory, rng);
  const SlidingWindowPattern window(2);
  for (const int top_k : {3, 7}) {
    KnnMemoryConfig cfg;
    cfg.layer = 0;
    cfg.top_k = top_k;
    cfg.chunk = s;
    KnnMemoryCache<double> cache;
    KnnMemoryForward(qkv, B, T, H, window, cfg, cache, 1, &memory);
    const int chunks_kept = top_k / s;
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < T; ++i) {
          const long row = (static_cast<long>(b) * H + h) * T + i;
          const auto q = qkv.row(b * T + i).segment(h * D, D);
          const int end = std::max(0, i - 1);          // the window shows keys i - 1 and i
          std::vector<std::pair<double, int>> scored;  // (-score, first row): best first
          for (int c = 0; (c + 1) * s <= end; ++c) {
            RowVec<double> mean = RowVec<double>::Zero(D);
            for (int u = 0; u < s; ++u)
              mean += memory.row(b * T + c * s + u).segment(C + h * D, D) / s;
            scored.push_back({-q.dot(mean) / std::sqrt(3.0), b * T + c * s});
          }
          std::sort(scored.begin(), scored.end());
          const int kept = std::min<int>(chunks_kept, static_cast<int>(scored.size()));
          if (kept == 0) {
            EXPECT_EQ(cache.lse[row], -std::numeric_limits<double>::infinity()) << i;
            continue;
          }
          std::vector<int> rows;
          for (int t = 0; t < kept; ++t)
            for (int u = 0; u < s; ++u) rows.push_back(scored[t].second + u);
          double z = 0;
          for (const int j : rows)
            z += std::exp(q.dot(memory.row(j).segment(C + h * D, D)) / std::sqrt(3.0));
          RowVec<double> o = RowVec<double>::Zero(D);
          for (size_t t = 0; t < rows.size(); ++t) {
            EXPECT_EQ(cache.idx[row * top_k + t], rows[t]) << i;
            o += std::exp(q.dot(memory.row(rows[t]).segment(C + h * D, D)) / std::sqrt(3.0)) / z *
                 memory.row(rows[t]).segment(2 * C + h * D, D);
          }
          if (static_cast<int>(rows.size()) < top_k) {
            EXPECT_EQ(cache.idx[row * top_k + rows.size()], -1) << "only whole chunks";
          }
          EXPECT_NEAR(cache.lse[row], std::log(z), 1e-12);
          EXPECT_LT((cache.out.row(b * T + i).segment(h * D, D) - o).norm(), 1e-12) << i;
        }
  }
}

// A 2-block backbone with a 1-block side network (r = 2) whose block reads backbone block 1's keys
// and values in chunks of 2 under a window of 3, merged by its gate.
struct LongMemCase {
  std::string encoding;
};
void PrintTo(const LongMemCase& c, std::ostream* os) { *os << c.encoding; }

class LongMemModel : public ::testing::TestWithParam<LongMemCase> {};

TEST_P(LongMemModel, IsItsBackboneThenItsSideBlocksAndOnlyTheSideGetsGradients) {
  const int B = 2, T = 10, H = 2;
  ModelConfig cfg = testing::TinyModelConfig();
  cfg.side = SideNetConfig{1, 0};
  cfg.knn.top_k = 4;
  cfg.knn.chunk = 2;
  EncodingShape es{8, 2, 2, true, T, T, 7};
  auto enc = CreateEncoding<double>(GetParam().encoding, {}, es);
  Transformer<double> model(cfg, enc.get());
  EXPECT_EQ(model.config().knn.layer, 2) << "the side's memory layer follows the backbone's";
  EXPECT_EQ(model.config().knn.source_layer, 1) << "it reads the block it copies: r (i + 1) - 1";
  const SlidingWindowPattern window(3);
  model.set_pattern(&window);
  Rng rng(11);
  model.Init(rng);
  model.CopyBackboneIntoSide();
  auto params = model.Parameters();
  std::map<std::string, ParamRef<double>> by_name;
  for (const auto& p : params) by_name.emplace(p.name, p);
  for (const std::string part : {"ln1.g", "attn.qkv.w", "mlp.fc2.b"}) {
    const auto& a = by_name.at("side0." + part);
    const auto& b = by_name.at("layer1." + part);
    EXPECT_TRUE(std::equal(a.value, a.value + a.size, b.value)) << part << ": a copy of block 1";
  }
  // The side moves off its copy, so that the reference must use the side's own weights.
  for (auto& p : params)
    if (p.name.rfind("side", 0) == 0)
      for (long i = 0; i < p.size; ++i) p.value[i] += 0.2 * rng.Normal();
  const testing::TinyBatch batch = testing::MakeTinyBatch(B, T, 7, rng);
  const double one_pass = testing::TinyGradients(model, batch);
  const auto analytic = testing::CopyGrads(params);

  auto reference = [&] {
    const auto w = ReadWeights(model);
    enc->Prepare(batch.pos, T - 1);
    MatD bank;  // backbone block 1's q | k | v: the memory's keys and values
    auto keep_bank = [&](int layer, const MatD& qkv, const Vec<double>&, MatD&) {
      if (layer == 1) bank = qkv;
    };
    std::vector<MatD> h(3, MatD(B * T, 8));
    for (int r = 0; r < B * T; ++r) h[0].row(r) = w.tok_emb.row(batch.tokens[r]);
    for (int l = 0; l < 2; ++l)
      h[l + 1] =
          ReferenceBlock(w.blocks[l], *enc, l, true, B, T, H, batch.pos, window, h[l], keep_bank);
    const RowVec<double>& gate = w.extra.at("side0.attn.knn_gate");
    auto merge = [&](int, const MatD& qkv, const Vec<double>&, MatD& att) {
      KnnMemoryCache<double> mem;
      KnnMemoryForward(qkv, B, T, H, window, model.config().knn, mem, 1, &bank);
      for (int r = 0; r < B * T; ++r)
        for (int hd = 0; hd < H; ++hd) {
          if (std::isinf(mem.lse[((r / T) * H + hd) * T + r % T])) continue;
          const double g = 1 / (1 + std::exp(-gate[hd]));
          att.row(r).segment(4 * hd, 4) =
              (1 - g) * att.row(r).segment(4 * hd, 4) + g * mem.out.row(r).segment(4 * hd, 4);
        }
    };
    // The side block sees the encoding of block 1, the block it copies.
    const MatD y =
        ReferenceBlock(w.side_blocks[0], *enc, 1, true, B, T, H, batch.pos, window, h[0], merge) +
        (h[2] - h[0]);
    const auto [sum, count] = ReferenceHeadLoss(w, y, batch.targets, batch.mask, true);
    return sum / count;
  };
  EXPECT_NEAR(reference(), one_pass, 1e-12);

  // The side network's gradients are the loss's; the backbone's are none, although it moves the
  // loss (a frozen backbone, not an absent one).
  std::vector<ParamRef<double>> side, backbone;
  std::vector<std::vector<double>> side_grads;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].name.rfind("side", 0) == 0) {
      side.push_back(params[i]);
      side_grads.push_back(analytic[i]);
    } else if (params[i].name.rfind("pe.", 0) != 0) {
      backbone.push_back(params[i]);
      for (const double g : analytic[i]) EXPECT_EQ(g, 0) << params[i].name;
    }
  }
  const auto live = [&] { return testing::TinyLoss(model, batch, true); };
  const auto res = testing::CheckGradients(live, side, side_grads, 6);
  EXPECT_GT(res.checked, 40);
  EXPECT_GT(testing::LargestGapToFiniteDifferences(backbone, "layer1.attn.qkv.w", live), 1e-5)
      << "the backbone's block 1 feeds the memory and the side's deltas";
}

INSTANTIATE_TEST_SUITE_P(Encodings, LongMemModel,
                         ::testing::Values(LongMemCase{"rope"}, LongMemCase{"alibi"},
                                           LongMemCase{"t5"}),
                         [](const auto& param_info) { return param_info.param.encoding; });

}  // namespace
}  // namespace lexp
