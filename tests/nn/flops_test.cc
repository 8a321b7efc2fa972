// The compute axis of the claims about training cost (nn/model/flops.h): the pairs a pattern
// shows, counted against closed forms, and one forward pass's products counted one by one.
#include "nn/model/flops.h"

#include <gtest/gtest.h>

namespace lexp {
namespace {

// Query i sees keys max(0, i - w + 1) .. i: a sliding window of w keys.
class WindowForTest final : public AttentionPattern {
 public:
  explicit WindowForTest(int w) : AttentionPattern(true), w_(w) {}
  void KeyBounds(int i, int /*T*/, int* begin, int* end) const override {
    *begin = std::max(0, i - w_ + 1);
    *end = i + 1;
  }

 private:
  int w_;
};

// Causal, but only keys of the query's parity: not contiguous.
class SameParityForTest final : public AttentionPattern {
 public:
  SameParityForTest() : AttentionPattern(true) {}
  bool Contiguous() const override { return false; }
  bool Visible(int i, int j, int /*T*/) const override { return (i - j) % 2 == 0; }
};

// Head 0 causal, every other head a window of 2: patterns that differ by head.
class PerHeadForTest final : public AttentionPattern {
 public:
  PerHeadForTest() : AttentionPattern(true), window_(2) {}
  const AttentionPattern& ForHead(int head, int /*heads*/) const override {
    return head == 0 ? static_cast<const AttentionPattern&>(*this) : window_;
  }

 private:
  WindowForTest window_;
};

TEST(Flops, VisiblePairsMatchTheirClosedForms) {
  for (const int T : {1, 2, 7, 64}) {
    EXPECT_EQ(VisiblePairs(AttentionPattern(true), 0, 1, T), T * (T + 1) / 2) << T;
    EXPECT_EQ(VisiblePairs(AttentionPattern(false), 0, 1, T), T * T) << T;
    long window = 0, parity = 0;
    for (int i = 0; i < T; ++i) {
      window += std::min(i + 1, 4);
      parity += i / 2 + 1;  // keys i, i - 2, ..., down to 0 or 1
    }
    EXPECT_EQ(VisiblePairs(WindowForTest(4), 0, 1, T), window) << T;
    EXPECT_EQ(VisiblePairs(SameParityForTest(), 0, 1, T), parity) << T;
  }
  const PerHeadForTest per_head;
  EXPECT_EQ(VisiblePairs(per_head, 0, 2, 5), 15);
  EXPECT_EQ(VisiblePairs(per_head, 1, 2, 5), 1 + 2 + 2 + 2 + 2);
}

// Every product of one forward pass of a 2-layer model over B = 3 sequences of T = 5 tokens,
// written out one by one: an m x k by k x n product costs 2 m k n.
TEST(Flops, AForwardPassCostsEachOfItsProducts) {
  ModelConfig cfg;
  cfg.vocab = 11;
  cfg.d_model = 12;
  cfg.n_heads = 3;
  cfg.n_layers = 2;
  cfg.d_ff = 20;
  const double B = 3, T = 5, N = B * T, C = 12, D = 4, F = 20, V = 11;
  auto product = [](double m, double k, double n) { return 2 * m * k * n; };
  double per_layer = product(N, C, 3 * C) + product(N, C, C) + product(N, C, F) + product(N, F, C);
  // Per sequence and head: q.k and p.v over each visible pair, D multiply-adds each.
  const double causal_pairs = 15, window_pairs = 1 + 2 + 2 + 2 + 2;
  const double causal = 2 * product(1, D, causal_pairs) * B * 3;
  EXPECT_DOUBLE_EQ(ForwardMatmulFlops(cfg, AttentionPattern(true), 3, 5),
                   2 * (per_layer + causal) + product(N, C, V));
  const double mixed = 2 * (product(1, D, causal_pairs) + 2 * product(1, D, window_pairs)) * B;
  // PerHeadForTest: head 0 causal, heads 1 and 2 a window of 2.
  EXPECT_DOUBLE_EQ(ForwardMatmulFlops(cfg, PerHeadForTest(), 3, 5),
                   2 * (per_layer + mixed) + product(N, C, V));
}

}  // namespace
}  // namespace lexp
