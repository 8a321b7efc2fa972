// Attention patterns: reference index sets, distance bounds, gradients and
// the streaming path through a non-contiguous pattern, and recipe-level checks.
#include "pe/patterns.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>

#include "experiments/training/trainer.h"
#include "nn/io/hdf5.h"
#include "nn/ops/attention.h"
#include "pe/registry.h"
#include "tests/testing/attention_gradcheck.h"
#include "tests/testing/gradcheck.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

std::set<int> VisibleKeys(const AttentionPattern& p, int i, int T) {
  int b, e;
  p.KeyBounds(i, T, &b, &e);
  std::set<int> s;
  for (int j = b; j < e; ++j)
    if (p.Contiguous() || p.Visible(i, j, T)) s.insert(j);
  return s;
}

std::set<int> Range(int a, int b) {  // [a, b]
  std::set<int> s;
  for (int j = a; j <= b; ++j) s.insert(j);
  return s;
}

TEST(Patterns, BlockwiseCausalMatchesReferenceIndexSets) {
  const BlockwiseCausalPattern bca(8);
  for (int q = 0; q < 8; ++q) EXPECT_EQ(VisibleKeys(bca, q, 12), Range(0, q)) << q;
  for (int q = 8; q < 12; ++q) EXPECT_EQ(VisibleKeys(bca, q, 12), Range(4, q)) << q;
  std::vector<double> pos(40);
  std::iota(pos.begin(), pos.end(), 0.0);
  for (int i = 0; i < 40; ++i)
    for (int j : VisibleKeys(bca, i, 40)) EXPECT_LE(bca.EffectiveDistance(i, j, pos.data()), 7);
  // Query at offset r inside its half-block c >= 1 sees distances 0..4+r.
  EXPECT_EQ(VisibleKeys(bca, 4 * 5 + 3, 40), Range(4 * 4, 4 * 5 + 3));
}

TEST(Patterns, LambdaMatchesReferenceIndexSetAndCapsDistance) {
  const LambdaPattern lam(2, 4, 4);
  std::vector<double> pos(30);
  std::iota(pos.begin(), pos.end(), 0.0);
  EXPECT_EQ(VisibleKeys(lam, 9, 30), (std::set<int>{0, 1, 6, 7, 8, 9}));
  for (int j : {6, 7, 8, 9}) EXPECT_EQ(lam.EffectiveDistance(9, j, pos.data()), 9 - j);
  for (int j : {0, 1}) EXPECT_EQ(lam.EffectiveDistance(9, j, pos.data()), 4);
  for (int i = 2 + 4 - 1; i < 30; ++i) EXPECT_EQ(VisibleKeys(lam, i, 30).size(), 6u) << i;
  // A global key inside the local window is counted once, at its true distance.
  EXPECT_EQ(VisibleKeys(lam, 4, 30), Range(0, 4));
  EXPECT_EQ(lam.EffectiveDistance(4, 1, pos.data()), 3);
  for (int i = 0; i < 30; ++i)
    for (int j : VisibleKeys(lam, i, 30)) EXPECT_LE(lam.EffectiveDistance(i, j, pos.data()), 4);
}

// AnchorAttention (Wang et al. 2024): token 0 shared, documents of W tokens after it, each seeing
// itself up to the query; distances are the plain ones (position ids run on).
TEST(Patterns, AnchorSeesTheAnchorAndItsOwnDocumentOnly) {
  const AnchorPattern anchor(4);
  EXPECT_EQ(VisibleKeys(anchor, 0, 14), Range(0, 0));
  EXPECT_EQ(VisibleKeys(anchor, 1, 14), Range(0, 1));
  EXPECT_EQ(VisibleKeys(anchor, 4, 14), Range(0, 4)) << "the first document is tokens 1..4";
  EXPECT_EQ(VisibleKeys(anchor, 5, 14), (std::set<int>{0, 5}));
  EXPECT_EQ(VisibleKeys(anchor, 7, 14), (std::set<int>{0, 5, 6, 7}));
  EXPECT_EQ(VisibleKeys(anchor, 9, 14), (std::set<int>{0, 9}));
  std::vector<double> pos(14);
  std::iota(pos.begin(), pos.end(), 0.0);
  EXPECT_TRUE(anchor.PlainDistance());
  EXPECT_EQ(anchor.EffectiveDistance(13, 0, pos.data()), 13) << "the anchor keeps position 0";
  PatternConfig c;
  c.name = "anchor";
  c.window = 4;
  EXPECT_EQ(CreatePattern(c)->Name(), "anchor");
}

TEST(Patterns, RopeThroughAnchorHasCorrectGradientsAndStreamingMatches) {
  auto enc = CreateEncoding<double>("rope", {}, EncodingShape{8, 2, 1, true, 128});
  Rng rng(3);
  enc->Init(rng);
  const AnchorPattern pat(7);
  testing::AttentionGradCase gc;
  gc.shape = AttentionShape{1, 40, 2, 4};
  gc.pattern = &pat;
  gc.encoding = enc.get();
  gc.pos.resize(40);
  std::iota(gc.pos.begin(), gc.pos.end(), 0.0);
  gc.transform_qk = true;
  gc.seed = 3;
  AttentionCache<double> cache;
  testing::CheckAttentionGradients(gc, &cache);
  // Query 10 (second document: tokens 8..14) gives weight to the anchor and to its own document
  // only.
  const int T = 40;
  for (int h = 0; h < 2; ++h) {
    const auto row = cache.probs.row(static_cast<long>(h) * T + 10);
    EXPECT_GT(row(0), 0.0);
    for (int j = 1; j < 8; ++j) EXPECT_EQ(row(j), 0.0) << j;
    EXPECT_GT(row(8), 0.0);
    EXPECT_NEAR(row.sum(), 1.0, 1e-12);
  }
}

TEST(Patterns, SlidingWindowSeesTheLastWKeys) {
  const SlidingWindowPattern w(3);
  EXPECT_EQ(VisibleKeys(w, 0, 10), Range(0, 0));
  EXPECT_EQ(VisibleKeys(w, 7, 10), Range(5, 7));
  EXPECT_EQ(CreatePattern(PatternConfig{}), nullptr) << "full = the model's own mask";
  PatternConfig unknown;
  unknown.name = "diagonal";
  unknown.window = 3;
  EXPECT_THROW(CreatePattern(unknown), InputError);
  PatternConfig bca_in_decoder;
  bca_in_decoder.name = "bca";
  bca_in_decoder.window = 5;
  EXPECT_THROW(CreatePattern(bca_in_decoder), InputError);
}

TEST(Patterns, LongNetMatchesReferenceIndexSets) {  // N = 16, w = 8, r = 2
  const DilatedHeadPattern g0({8}, {2}, 0), g1({8}, {2}, 1), g2({8}, {2}, 2);
  EXPECT_EQ(VisibleKeys(g0, 6, 16), (std::set<int>{0, 2, 4, 6}));
  EXPECT_EQ(VisibleKeys(g0, 14, 16), (std::set<int>{8, 10, 12, 14}));
  EXPECT_EQ(VisibleKeys(g1, 7, 16), (std::set<int>{1, 3, 5, 7}));
  EXPECT_EQ(VisibleKeys(g1, 15, 16), (std::set<int>{9, 11, 13, 15}));
  EXPECT_EQ(VisibleKeys(g2, 6, 16), VisibleKeys(g0, 6, 16)) << "head 2 is in group 2 mod 2 = 0";
  EXPECT_TRUE(VisibleKeys(g0, 5, 16).empty()) << "an odd query is not kept by group 0";
  // Two sets: keys in both get ln 2, in one ln 1.
  const DilatedHeadPattern two({8, 16}, {1, 2}, 0);
  EXPECT_EQ(two.Sets(10, 8), 2);
  EXPECT_EQ(two.Sets(10, 9), 1);
  EXPECT_EQ(two.Sets(10, 2), 1);
  EXPECT_DOUBLE_EQ(two.LogitOffset(10, 8, 16), std::log(2.0));
  EXPECT_EQ(two.Sets(11, 2), 0) << "odd query, far key: only the w = 16, r = 2 set reaches it";
}

// Output of LongNet's reference procedure for one head: dense causal softmax attention inside each
// (w, r) set, merged with weights proportional to exp(lse) of each set.
MatD LongNetByMerging(const MatD& q, const MatD& k, const MatD& v, const std::vector<int>& w,
                      const std::vector<int>& r, int head) {
  const int T = static_cast<int>(q.rows()), D = static_cast<int>(q.cols());
  MatD out = MatD::Zero(T, D);
  for (int i = 0; i < T; ++i) {
    std::vector<double> lse;
    std::vector<RowVec<double>> o;
    for (size_t a = 0; a < w.size(); ++a) {
      const int start = (i / w[a]) * w[a], g = head % r[a];
      if ((i - start) % r[a] != g) continue;
      std::vector<int> keys;
      for (int j = start; j <= i; ++j)
        if ((j - start) % r[a] == g) keys.push_back(j);
      double mx = -1e300, z = 0;
      for (int j : keys) mx = std::max(mx, q.row(i).dot(k.row(j)) / std::sqrt(D * 1.0));
      RowVec<double> acc = RowVec<double>::Zero(D);
      for (int j : keys) {
        const double e = std::exp(q.row(i).dot(k.row(j)) / std::sqrt(D * 1.0) - mx);
        z += e;
        acc += e * v.row(j);
      }
      lse.push_back(mx + std::log(z));
      o.push_back(acc / z);
    }
    double m = -1e300, s = 0;
    for (double l : lse) m = std::max(m, l);
    for (double l : lse) s += std::exp(l - m);
    for (size_t a = 0; a < o.size(); ++a) out.row(i) += std::exp(lse[a] - m) / s * o[a];
  }
  return out;
}

TEST(Patterns, LongNetUnionWithMultiplicityOffsetEqualsTheLseMerge) {
  const std::vector<int> w = {4, 16, 32}, r = {1, 2, 4};
  const DilatedPattern pat(w, r, 4);
  const AttentionShape sh{1, 40, 4, 4};
  auto nope = CreateEncoding<double>("nope", {}, EncodingShape{16, 4, 1, true, 64});
  Rng rng(9);
  MatD q(40, 16), k(40, 16), v(40, 16), out, dense_out;
  for (MatD* m : {&q, &k, &v}) testing::FillNormal(*m, rng);
  std::vector<double> pos(40);
  std::iota(pos.begin(), pos.end(), 0.0);
  for (bool materialize : {true, false}) {
    AttentionCache<double> c;
    AttentionForward(q, k, v, sh, pos, pat, *nope, 0, materialize, c, out);
    for (int h = 0; h < 4; ++h) {
      const MatD want = LongNetByMerging(q.middleCols(4 * h, 4), k.middleCols(4 * h, 4),
                                         v.middleCols(4 * h, 4), w, r, h);
      EXPECT_LT((out.middleCols(4 * h, 4) - want).cwiseAbs().maxCoeff(), 1e-12) << h;
    }
  }
  // One set with w >= N and r = 1 is dense causal attention.
  const DilatedPattern one({64}, {1}, 4);
  AttentionCache<double> c1, c2;
  AttentionForward(q, k, v, sh, pos, one, *nope, 0, true, c1, out);
  AttentionForward(q, k, v, sh, pos, AttentionPattern(true), *nope, 0, true, c2, dense_out);
  EXPECT_LT((out - dense_out).cwiseAbs().maxCoeff(), 1e-14);
}

TEST(Patterns, ShiftedSparseGroupsWithoutWrapAround) {  // N = 16, ratio 1/4: G = 4
  const ShiftedSparsePattern s2(0.25);
  const AttentionPattern& plain = s2.ForHead(0, 2);
  const AttentionPattern& shifted = s2.ForHead(1, 2);
  EXPECT_EQ(VisibleKeys(plain, 3, 16), Range(0, 3));
  EXPECT_EQ(VisibleKeys(plain, 5, 16), Range(4, 5));
  EXPECT_EQ(VisibleKeys(plain, 15, 16), Range(12, 15));
  // Shifted groups {0,1}, {2..5}, {6..9}, {10..13}, {14,15}: the reference's {14,15,0,1} group
  // (which lets token 0 see 14 and 15 through the roll) is split, so nothing leaks backwards.
  EXPECT_EQ(VisibleKeys(shifted, 1, 16), Range(0, 1));
  EXPECT_EQ(VisibleKeys(shifted, 5, 16), Range(2, 5));
  EXPECT_EQ(VisibleKeys(shifted, 13, 16), Range(10, 13));
  EXPECT_EQ(VisibleKeys(shifted, 15, 16), Range(14, 15));
  EXPECT_EQ(&s2.ForHead(2, 4), &s2.ForHead(3, 4));
  EXPECT_NE(&s2.ForHead(1, 4), &s2.ForHead(2, 4));
}

TEST(Patterns, SinksMatchTheReferenceCacheAndRenumberPositions) {  // start 4, recent 6
  const SinksPattern sinks(4, 6);
  std::vector<double> pos(30);
  std::iota(pos.begin(), pos.end(), 0.0);
  std::set<int> want = Range(15, 20);
  for (int j = 0; j < 4; ++j) want.insert(j);
  EXPECT_EQ(VisibleKeys(sinks, 20, 30), want);
  // Cache positions 0..9: the query at 9, sink j at j, recent key 15 + m at 4 + m.
  for (int j = 0; j < 4; ++j) EXPECT_EQ(sinks.EffectiveDistance(20, j, pos.data()), 9 - j);
  for (int j = 15; j <= 20; ++j) EXPECT_EQ(sinks.EffectiveDistance(20, j, pos.data()), 20 - j);
  // Before anything is evicted every key is cached at its own position.
  EXPECT_EQ(VisibleKeys(sinks, 8, 30), Range(0, 8));
  for (int j = 0; j <= 8; ++j) EXPECT_EQ(sinks.EffectiveDistance(8, j, pos.data()), 8 - j);
}

TEST(Patterns, RopeSeesRemappedKeysAtTheirDistanceWithCorrectGradients) {
  const AttentionShape sh{1, 70, 2, 4};
  auto rope = CreateEncoding<double>("rope", {}, EncodingShape{8, 2, 1, true, 128, 16});
  const SinksPattern pat(3, 9);
  std::vector<double> pos(70);
  std::iota(pos.begin(), pos.end(), 0.0);
  rope->Prepare(pos, PositionSpan(pos));
  Rng rng(3);
  MatD q(70, 8), k(70, 8), v(70, 8), w(70, 8);
  for (MatD* m : {&q, &k, &v, &w}) testing::FillNormal(*m, rng);
  auto rotate = [&](const MatD& x, bool query, bool back) {
    MatD r = x;
    for (int h = 0; h < 2; ++h) {
      AttentionContext ctx{0, h, 2, 4, 70, pos.data(), &pat, false};
      if (back)
        rope->TransformQKBackward(ctx, query, r.data() + 4 * h, 8);
      else
        rope->TransformQK(ctx, query, r.data() + 4 * h, 8);
    }
    return r;
  };
  auto forward = [&](bool materialize, AttentionCache<double>& c) {
    MatD out;
    AttentionForward(rotate(q, true, false), rotate(k, false, false), v, sh, pos, pat, *rope, 0,
                     materialize, c, out);
    return out;
  };
  AttentionCache<double> cache;
  cache.capture_logits = true;
  const MatD out = forward(true, cache);
  // Sink key j seen by query 50 at distance 3 + 9 - 1 - j: logit q^T R(11 - j) k.
  auto plain = CreateEncoding<double>("rope", {}, EncodingShape{8, 2, 1, true, 128, 16});
  for (int j = 0; j < 3; ++j) {
    plain->Prepare({11.0 - j, 0.0}, 11.0 - j);
    MatD two(2, 4);
    two.row(0) = q.block(50, 0, 1, 4);
    two.row(1) = k.block(j, 0, 1, 4);
    AttentionContext ctx{0, 0, 1, 4, 2, nullptr, &pat, true};
    plain->TransformQK(ctx, true, two.data(), 4);
    EXPECT_NEAR(cache.logits(50, j), two.row(0).dot(two.row(1)) / 2, 1e-12) << j;
  }
  auto loss = [&] {
    AttentionCache<double> c;
    return forward(false, c).cwiseProduct(w).sum();
  };
  EXPECT_NEAR(out.cwiseProduct(w).sum(), loss(), 1e-12);
  MatD d_q = MatD::Zero(70, 8), d_k = MatD::Zero(70, 8), d_v = MatD::Zero(70, 8);
  AttentionBackward(rotate(q, true, false), rotate(k, false, false), v, sh, pos, pat, *rope, 0,
                    cache, w, d_q, d_k, d_v);
  d_q = rotate(d_q, true, true);
  d_k = rotate(d_k, false, true);
  std::vector<ParamRef<double>> params = {{"q", q.data(), d_q.data(), q.size()},
                                          {"k", k.data(), d_k.data(), k.size()}};
  testing::CheckGradients(loss, params, testing::CopyGrads(params), 60);
}

// Self-Extend (Jin et al. 2024): the reference's positions, q_pos = i // G + W - W // G and
// k_pos = j // G for keys at least W away (LongLM apply_group_rotary_pos_emb), and plain distances
// inside the neighbour window; G = 1 changes nothing (the negative control).
TEST(Patterns, SelfExtendMatchesTheReferenceGroupedPositions) {
  const int W = 8, G = 3, T = 40;
  const SelfExtendPattern se(G, W);
  std::vector<double> pos(T);
  std::iota(pos.begin(), pos.end(), 0.0);
  EXPECT_EQ(VisibleKeys(se, 30, T), Range(0, 30));  // every key stays visible
  EXPECT_EQ(se.EffectiveDistance(20, 2, pos.data()), 12);  // (6 + 8 - 2) - 0, plain 18
  EXPECT_EQ(se.EffectiveDistance(20, 13, pos.data()), 7);  // inside the window
  EXPECT_EQ(se.EffectiveDistance(20, 12, pos.data()), 8);  // (6 + 6) - 4: the window's edge
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) {
      const int want = i - j < W ? i - j : (i / G + W - W / G) - j / G;
      ASSERT_EQ(se.EffectiveDistance(i, j, pos.data()), want) << i << " " << j;
      ASSERT_LE(want, se.MaxDistance(T - 1));
    }
  const SelfExtendPattern none(1, W);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) ASSERT_EQ(none.EffectiveDistance(i, j, pos.data()), i - j);
  // The largest distance a query at 39 sees: 13 + 6 - 0 = 19, about a third of the plain 39.
  EXPECT_EQ(se.EffectiveDistance(39, 0, pos.data()), 19);
}

// STRING (An et al. 2024): the reference's shifted query positions i - S + W for the keys at least S
// away (string_for_llama.py: position_ids - diag_size + local_window), plain distances nearer; S
// beyond every distance changes nothing (the negative control).
TEST(Patterns, StringShiftsTheFarDistancesDownBySMinusW) {
  const int S = 12, W = 3, T = 30;
  const StringPattern st(S, W);
  std::vector<double> pos(T);
  std::iota(pos.begin(), pos.end(), 0.0);
  EXPECT_EQ(VisibleKeys(st, 25, T), Range(0, 25));  // every key stays visible
  EXPECT_EQ(st.EffectiveDistance(25, 14, pos.data()), 11);  // d = 11 < S: plain
  EXPECT_EQ(st.EffectiveDistance(25, 13, pos.data()), 3);   // d = S: seen at W
  EXPECT_EQ(st.EffectiveDistance(29, 0, pos.data()), 20);   // the largest: 29 - 12 + 3
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) {
      const int want = i - j >= S ? (i - S + W) - j : i - j;  // the reference's query shift
      ASSERT_EQ(st.EffectiveDistance(i, j, pos.data()), want) << i << " " << j;
    }
  const StringPattern none(T, W);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) ASSERT_EQ(none.EffectiveDistance(i, j, pos.data()), i - j);
  PatternConfig bad;
  bad.name = "string";
  bad.window = 8;
  bad.shift = 8;
  EXPECT_THROW(CreatePattern(bad), InputError);
}

// RoPE under Self-Extend: a grouped key's logit is q^T R(grouped distance) k, and gradients through
// the remapped logits match finite differences.
TEST(Patterns, RopeSeesSelfExtendsGroupedDistancesWithCorrectGradients) {
  const AttentionShape sh{1, 40, 2, 4};
  auto rope = CreateEncoding<double>("rope", {}, EncodingShape{8, 2, 1, true, 128, 16});
  const SelfExtendPattern pat(4, 6);
  std::vector<double> pos(40);
  std::iota(pos.begin(), pos.end(), 0.0);
  rope->Prepare(pos, pat.MaxDistance(PositionSpan(pos)));
  Rng rng(5);
  MatD q(40, 8), k(40, 8), v(40, 8), w(40, 8);
  for (MatD* m : {&q, &k, &v, &w}) testing::FillNormal(*m, rng);
  auto rotate = [&](const MatD& x, bool query, bool back) {
    MatD r = x;
    for (int h = 0; h < 2; ++h) {
      AttentionContext ctx{0, h, 2, 4, 40, pos.data(), &pat, false};
      if (back)
        rope->TransformQKBackward(ctx, query, r.data() + 4 * h, 8);
      else
        rope->TransformQK(ctx, query, r.data() + 4 * h, 8);
    }
    return r;
  };
  auto forward = [&](bool materialize, AttentionCache<double>& c) {
    MatD out;
    AttentionForward(rotate(q, true, false), rotate(k, false, false), v, sh, pos, pat, *rope, 0,
                     materialize, c, out);
    return out;
  };
  AttentionCache<double> cache;
  cache.capture_logits = true;
  forward(true, cache);
  auto plain = CreateEncoding<double>("rope", {}, EncodingShape{8, 2, 1, true, 128, 16});
  // Query 37 and keys 3, 20 (grouped: 9 + 6 - 1 - j // 4) and 33 (inside the window: 4).
  for (const auto& [j, d] : std::vector<std::pair<int, double>>{{3, 14}, {20, 9}, {33, 4}}) {
    ASSERT_EQ(pat.EffectiveDistance(37, j, pos.data()), d);
    plain->Prepare({d, 0.0}, d);
    MatD two(2, 4);
    two.row(0) = q.block(37, 0, 1, 4);
    two.row(1) = k.block(j, 0, 1, 4);
    AttentionContext ctx{0, 0, 1, 4, 2, nullptr, &pat, true};
    plain->TransformQK(ctx, true, two.data(), 4);
    EXPECT_NEAR(cache.logits(37, j), two.row(0).dot(two.row(1)) / 2, 1e-12) << j;
  }
  auto loss = [&] {
    AttentionCache<double> c;
    return forward(false, c).cwiseProduct(w).sum();
  };
  MatD d_q = MatD::Zero(40, 8), d_k = MatD::Zero(40, 8), d_v = MatD::Zero(40, 8);
  AttentionBackward(rotate(q, true, false), rotate(k, false, false), v, sh, pos, pat, *rope, 0,
                    cache, w, d_q, d_k, d_v);
  d_q = rotate(d_q, true, true);
  d_k = rotate(d_k, false, true);
  std::vector<ParamRef<double>> params = {{"q", q.data(), d_q.data(), q.size()},
                                          {"k", k.data(), d_k.data(), k.size()}};
  testing::CheckGradients(loss, params, testing::CopyGrads(params), 60);
}

TEST(Patterns, T5ThroughLambdaHasCorrectGradientsAndStreamingMatches) {
  auto enc = CreateEncoding<double>("t5", {}, EncodingShape{8, 2, 1, true, 128});
  Rng rng(2);
  enc->Init(rng);
  const LambdaPattern pat(3, 9, 200);  // cap beyond the sequence: Prepare must cover it
  testing::AttentionGradCase gc;
  gc.shape = AttentionShape{1, 70, 2, 4};
  gc.pattern = &pat;
  gc.encoding = enc.get();
  gc.pos.resize(70);
  std::iota(gc.pos.begin(), gc.pos.end(), 0.0);
  gc.check_k = false;
  gc.seed = 2;
  testing::CheckAttentionGradients(gc);
}

TEST(Patterns, RecipesRefuseWhatCannotWorkAndTrainWhatCan) {
  const auto error_of = testing::TinyRecipeError;
  EXPECT_NE(error_of({"model.encodings=xpos", "model.pattern=lambda"}).find("per key"),
            std::string::npos);
  EXPECT_NE(error_of({"model.encodings=xpos", "model.pattern=sinks"}).find("per key"),
            std::string::npos);
  EXPECT_EQ(error_of({"model.encodings=rope", "model.pattern=sinks"}), "");
  EXPECT_EQ(error_of({"model.encodings=rope", "model.pattern=anchor", "model.pattern_window=4"}),
            "");
  EXPECT_NE(error_of({"model.pattern=shifted_sparse"}).find("training-time"), std::string::npos);
  EXPECT_NE(error_of({"model.pattern=dilated", "model.pattern_segments=8,16",
                      "model.pattern_dilations=2,4"})
                .find("dilation of 1"),
            std::string::npos);
  EXPECT_NE(
      error_of({"model.pattern=dilated", "model.pattern_segments=8", "model.pattern_dilations=1,2"})
          .find("as many"),
      std::string::npos);
  EXPECT_NE(error_of({"model.layout=encoder", "model.pattern=bca"}).find("causal pattern"),
            std::string::npos);
  EXPECT_NE(error_of({"model.pattern=bca", "model.pattern_window=5"}).find("even"),
            std::string::npos);
  // ALiBi evaluated through a 4-key sliding window: the probe's uniform-attention bound is ln 4.
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"model.encodings=alibi", "model.pattern=sliding_window", "model.pattern_window=4"});
  const auto dir = testing::FreshTempDir("patterns");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "alibi", o).state, "completed");
  h5::Reader r(RunFilePath(dir.string(), "alibi"));
  for (double lv : r.root().OpenGroup("analysis").ReadDoubles("log_visible_keys"))
    EXPECT_LE(lv, std::log(4.0) + 1e-12);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
