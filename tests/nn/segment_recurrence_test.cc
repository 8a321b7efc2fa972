// Transformer-XL's segment recurrence (Dai et al. 2019, arXiv:1901.02860) as lexp runs it: one
// pass over the whole sequence with the recurrence pattern, whose memory keys are read without a
// gradient into their states. The reference here is Transformer-XL as its paper describes it,
// segment after segment: each segment's layers attend over [cached memory; segment], the memory is
// the previous segments' layer inputs held as constants (their states at the unperturbed
// parameters), and the loss is summed over the segments. Built from lexp's ops in double, it must
// give the one pass's loss, and its finite differences (memory held fixed) the one pass's gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
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

struct Segments {
  bool pre_ln = true;
  int B = 2, T = 10, S = 3, M = 4;  // memory longer than a segment: it spans two of them
};

// Transformer-XL's loss, segment after segment: memory[l] holds the layer inputs of every position
// (from a pass at the unperturbed parameters); a segment's layer l reads the M rows before it.
double SegmentBySegmentLoss(Transformer<double>& model, PositionEncoding<double>& enc,
                            const Segments& st, const std::vector<MatD>& memory,
                            const std::vector<int>& tokens, const std::vector<int>& targets,
                            const std::vector<uint8_t>& mask) {
  const auto w = ReadWeights(model);
  const ModelConfig& cfg = model.config();
  const long C = cfg.d_model;
  const AttentionPattern causal(true);
  double loss = 0;
  long count = 0;
  for (int s0 = 0; s0 < st.T; s0 += st.S) {
    const int n = std::min(st.S, st.T - s0), m0 = std::max(0, s0 - st.M), m = s0 - m0,
              R = m + n;
    std::vector<double> pos(R);
    for (int r = 0; r < R; ++r) pos[r] = m0 + r;
    enc.Prepare(pos, R - 1);
    MatD x(st.B * n, C);  // the segment's embedded tokens
    for (int b = 0; b < st.B; ++b)
      for (int r = 0; r < n; ++r) x.row(b * n + r) = w.tok_emb.row(tokens[b * st.T + s0 + r]);
    for (int l = 0; l < cfg.n_layers; ++l) {
      MatD in(st.B * R, C);
      for (int b = 0; b < st.B; ++b) {
        in.middleRows(b * R, m) = memory[l].middleRows(b * st.T + m0, m);  // constants
        in.middleRows(b * R + m, n) = x.middleRows(b * n, n);
      }
      const MatD out =
          ReferenceBlock(w.blocks[l], enc, l, cfg.pre_ln, st.B, R, cfg.n_heads, pos, causal, in);
      for (int b = 0; b < st.B; ++b) x.middleRows(b * n, n) = out.middleRows(b * R + m, n);
    }
    std::vector<int> seg_targets;
    std::vector<uint8_t> seg_mask;
    for (int b = 0; b < st.B; ++b)
      for (int r = 0; r < n; ++r) {
        seg_targets.push_back(targets[b * st.T + s0 + r]);
        seg_mask.push_back(mask[b * st.T + s0 + r]);
      }
    const auto [sum, n_scored] = ReferenceHeadLoss(w, x, seg_targets, seg_mask);
    loss += sum;
    count += n_scored;
  }
  return loss / count;
}

struct Case {
  std::string encoding;
  bool pre_ln;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.encoding << (c.pre_ln ? " pre-LN" : " post-LN");
}

class SegmentRecurrence : public ::testing::TestWithParam<Case> {};

// Loss and gradients of the one pass against Transformer-XL segment by segment; and, so that the
// check can fail, the one pass's own finite differences (memory not held fixed) differ from them.
TEST_P(SegmentRecurrence, OnePassIsTransformerXLSegmentBySegmentWithItsStopGradient) {
  const Case& tc = GetParam();
  Segments st;
  st.pre_ln = tc.pre_ln;
  ModelConfig cfg = testing::TinyModelConfig();
  cfg.pre_ln = tc.pre_ln;
  EncodingShape es{cfg.d_model, cfg.n_heads, cfg.n_layers, true, st.T, st.T, cfg.vocab};
  auto enc = CreateEncoding<double>(tc.encoding, {}, es);
  Transformer<double> model(cfg, enc.get());
  const RecurrencePattern recurrence(st.S, st.M);
  model.set_pattern(&recurrence);
  Rng rng(17);
  model.Init(rng);
  testing::PerturbVectors(model, rng, 0.2);
  const testing::TinyBatch batch = testing::MakeTinyBatch(st.B, st.T, 7, rng, 4, 1);
  const double one_pass = testing::TinyGradients(model, batch);
  std::vector<MatD> memory;
  for (int l = 0; l < cfg.n_layers; ++l) memory.push_back(model.Residual(l));
  auto params = model.Parameters();
  const auto analytic = CopyGrads(params);

  auto txl = [&] {
    return SegmentBySegmentLoss(model, *enc, st, memory, batch.tokens, batch.targets, batch.mask);
  };
  EXPECT_NEAR(txl(), one_pass, 1e-12) << "the one-pass forward is Transformer-XL's";
  const auto res = CheckGradients(txl, params, analytic, 6);
  EXPECT_GT(res.checked, 50);

  // Without the stop-gradient the gradients of the first layer would include what later
  // segments' queries send into the memory: the one pass's loss, memory not held, differs.
  const double largest = testing::LargestGapToFiniteDifferences(
      params, "layer0.attn.qkv.w", [&] { return testing::TinyLoss(model, batch, false); });
  EXPECT_GT(largest, 1e-4) << "the memory's gradient must have been cut";
}

INSTANTIATE_TEST_SUITE_P(Encodings, SegmentRecurrence,
                         ::testing::Values(Case{"rope", true}, Case{"alibi", true},
                                           Case{"t5", true}, Case{"transformer_xl", true},
                                           Case{"nope", true}, Case{"rope", false},
                                           Case{"transformer_xl", false}),
                         [](const auto& param_info) {
                           return param_info.param.encoding +
                                  (param_info.param.pre_ln ? "_preln" : "_postln");
                         });

TEST(Patterns, RecurrenceSeesItsSegmentAndTheMemoryBeforeIt) {
  const RecurrencePattern r(4, 6);
  for (int i = 0; i < 20; ++i) {
    int b, e;
    r.KeyBounds(i, 20, &b, &e);
    EXPECT_EQ(r.MemoryEnd(i), (i / 4) * 4) << i;
    EXPECT_EQ(b, std::max(0, (i / 4) * 4 - 6)) << i;
    EXPECT_EQ(e, i + 1) << i;
  }
  // bca(l) is recurrence(l/2, l/2) without the stop-gradient.
  const BlockwiseCausalPattern bca(8);
  const RecurrencePattern half(4, 4);
  for (int i = 0; i < 30; ++i) {
    int b1, e1, b2, e2;
    bca.KeyBounds(i, 30, &b1, &e1);
    half.KeyBounds(i, 30, &b2, &e2);
    EXPECT_EQ(b1, b2) << i;
    EXPECT_EQ(e1, e2) << i;
  }
  EXPECT_FALSE(bca.HasMemory());
  PatternConfig pc;
  pc.name = "recurrence";
  pc.window = 5;
  const auto made = CreatePattern(pc);
  ASSERT_NE(made, nullptr);
  EXPECT_EQ(made->MemoryEnd(12), 10);
  int b, e;
  made->KeyBounds(12, 20, &b, &e);
  EXPECT_EQ(b, 5) << "memory = the segment length by default";
}

}  // namespace
}  // namespace lexp
