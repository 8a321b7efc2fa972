// Blocks run fused (BlockForward: each group of sequences from LN1 to the last residual in one
// parallel region; BlockBackward: each group's input gradients in one region, with the weight
// gradients of each 1024-row weight group run by the task that completes it) against the same
// blocks step by step: the same bits in the logits, the captured maps, every gradient, and the
// evaluation logits, for encodings acting at every site kind (rotary queries and keys, a fixed
// logit bias, a learned one with per-task gradient sums, an added embedding), pre-LN and post-LN
// (whose backward runs step by step).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nn/model/transformer.h"
#include "pe/registry.h"

namespace lexp {
namespace {

// 128 / 32 = 4 sequences a forward group: 32 groups; 512 / 32 = 16 a backward group: 8 groups.
constexpr int kB = 128, kT = 32, kC = 32, kL = 2;

struct Outputs {
  MatF logits, eval_logits, probs, d_x;
  std::vector<std::vector<float>> grads;
  long fused_passes = 0;  // block passes that ran fused
};

Outputs RunOnce(const std::string& encoding, bool pre_ln, bool fuse, int B, int C = kC,
                PrecisionPolicy precision = {}) {
  ModelConfig mc;
  mc.precision = precision;
  mc.vocab = 13;
  mc.d_model = C;
  mc.n_heads = 4;
  mc.n_layers = kL;
  mc.pre_ln = pre_ln;
  mc.causal = true;
  auto enc = CreateEncoding<float>(encoding, {}, EncodingShape{C, 4, kL, true, kT, kT, 13});
  Transformer<float> net(mc, enc.get());
  Rng rng(5);
  net.Init(rng);
  net.set_fuse_blocks(fuse);
  std::vector<int> tokens(static_cast<size_t>(B) * kT);
  Rng data(9);
  for (int& t : tokens) t = static_cast<int>(data.UniformInt(0, 12));
  std::vector<double> pos(kT);
  for (int t = 0; t < kT; ++t) pos[t] = t;
  Outputs r;
  net.Forward(tokens, B, kT, pos, /*training=*/true, /*capture=*/false, r.logits);
  MatF d_logits(r.logits.rows(), r.logits.cols());
  for (long i = 0; i < d_logits.size(); ++i)
    d_logits.data()[i] = static_cast<float>(data.Normal() * 1e-2);
  for (auto& p : net.Parameters()) std::fill(p.grad, p.grad + p.size, 0.f);
  net.Backward(tokens, d_logits);
  r.d_x = net.InputGradient();
  for (auto& p : net.Parameters()) r.grads.emplace_back(p.grad, p.grad + p.size);
  net.Forward(tokens, B, kT, pos, /*training=*/false, /*capture=*/true, r.probs);
  r.probs = net.Probs(kL - 1);
  net.Forward(tokens, B, kT, pos, /*training=*/false, /*capture=*/false, r.eval_logits);
  r.fused_passes = net.fused_passes();
  return r;
}

void ExpectSameBits(const Outputs& fused, const Outputs& steps, int B) {
  EXPECT_TRUE((fused.logits.array() == steps.logits.array()).all());
  EXPECT_TRUE((fused.eval_logits.array() == steps.eval_logits.array()).all());
  ASSERT_EQ(fused.probs.rows(), static_cast<long>(B) * 4 * kT);
  EXPECT_TRUE((fused.probs.array() == steps.probs.array()).all());
  EXPECT_TRUE((fused.d_x.array() == steps.d_x.array()).all());
  ASSERT_EQ(fused.grads.size(), steps.grads.size());
  for (size_t k = 0; k < fused.grads.size(); ++k) EXPECT_EQ(fused.grads[k], steps.grads[k]) << k;
}

TEST(FusedBlock, HasTheBitsOfTheStepByStepBlock) {
  for (const std::string encoding : {"rope", "alibi", "t5", "sinusoidal"})
    for (const bool pre_ln : {true, false}) {
      SCOPED_TRACE(encoding + (pre_ln ? " pre-LN" : " post-LN"));
      const Outputs fused = RunOnce(encoding, pre_ln, true, kB);
      const Outputs steps = RunOnce(encoding, pre_ln, false, kB);
      // Three forward passes fused, and the backward pass too under pre-LN: 2 layers each.
      EXPECT_EQ(fused.fused_passes, (pre_ln ? 4 : 3) * kL);
      EXPECT_EQ(steps.fused_passes, 0);
      ExpectSameBits(fused, steps, kB);
    }
}

// Layers whose weight gradients have different numbers of column chunks (d_model 96: qkv 288 and
// fc1 384 wide, three chunks each; proj and fc2 one), a batch whose last group is ragged (146
// sequences of 32: the forward's 37th group and the backward's 10th hold 64 rows, the last weight
// group a whole chunk and that ragged one), and bf16
// products (their operands prepared, converted where the CPU has native bf16, in the fused
// backward's first region).
TEST(FusedBlock, HasTheBitsOfTheStepByStepBlockWithRaggedGroupsAndWiderLayers) {
  constexpr int B = 146, C = 96;
  const PrecisionPolicy bf16{Precision::kBf16, Precision::kBf16, Precision::kBf16};
  for (const std::string encoding : {"rope", "t5"})
    for (const PrecisionPolicy precision : {PrecisionPolicy{}, bf16}) {
      SCOPED_TRACE(encoding + (precision.AllFp32() ? " fp32" : " bf16"));
      const Outputs fused = RunOnce(encoding, true, true, B, C, precision);
      const Outputs steps = RunOnce(encoding, true, false, B, C, precision);
      EXPECT_EQ(fused.fused_passes, 4 * kL);
      ExpectSameBits(fused, steps, B);
    }
}

// The fused path must be the one taken at this size, or the test above compares a path with
// itself: a batch too small to share among the threads runs step by step even when allowed, and
// its logits are those of the same sequences in the fused batch, row for row.
TEST(FusedBlock, IsTakenWithEnoughSequencesAndAgreesWithASmallBatchRowForRow) {
  EXPECT_TRUE(Transformer<float>::FusesBlocks(kB, kT));
  EXPECT_TRUE(Transformer<float>::FusesBlockBackward(kB, kT));
  EXPECT_FALSE(Transformer<float>::FusesBlockBackward(kB - 1, kT));  // 7 groups and a part
  EXPECT_FALSE(Transformer<float>::FusesBlockBackward(kB, 48));      // 48 rows do not divide 512
  EXPECT_FALSE(Transformer<float>::FusesBlocks(7 * 128 / kT, kT));  // 7 groups of 128 rows
  EXPECT_FALSE(Transformer<float>::FusesBlocks(1, 4096));
  EXPECT_FALSE(Transformer<float>::FusesBlocks(64, 1024));  // a group's rows exceed an MLP chunk
  EXPECT_FALSE(Transformer<float>::FusesBlocks(kB, 48));  // 48 rows do not divide 512
  EXPECT_TRUE(Transformer<float>::FusesBlocks(64, 512));
  const Outputs small = RunOnce("rope", true, true, 8);
  const Outputs fused = RunOnce("rope", true, true, kB);
  EXPECT_TRUE((fused.logits.topRows(small.logits.rows()).array() == small.logits.array()).all());
}

}  // namespace
}  // namespace lexp
