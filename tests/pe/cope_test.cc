// CoPE (Golovneva et al. 2024, arXiv:2405.18719) against its equations written out here, and on a
// planted counting mechanism: keys that open their gate fully are counted, the others not, so the
// position of a key is the number of marked keys between it and the query, whatever the number of
// tokens between them. The negative control is content that opens every gate halfway: then the
// position is half the token distance, content plays no part.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "nn/check.h"
#include "nn/ops/attention.h"
#include "nn/rng.h"
#include "pe/cope.h"
#include "pe/patterns.h"
#include "pe/registry.h"
#include "tests/testing/attention_gradcheck.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

std::unique_ptr<PositionEncoding<double>> MakeCope(int D, int npos, bool causal = true,
                                                   bool nodiv = false, double init_std = 0.7) {
  return CreateEncoding<double>(
      "cope",
      {{"npos", std::to_string(npos)},
       {"nodiv", nodiv ? "true" : "false"},
       {"init_std", std::to_string(init_std)}},
      EncodingShape{D, 1, 1, causal, 64, 16, 8});
}

// The logit terms of one head for keys [j0, j1) of every query, on zero scores.
MatD Terms(PositionEncoding<double>& enc, const MatD& q, const MatD& k, const AttentionPattern& pat,
           int j0, int j1) {
  const int T = static_cast<int>(q.rows()), D = static_cast<int>(q.cols());
  std::vector<double> pos(T);
  std::iota(pos.begin(), pos.end(), 0.0);
  AttentionContext ctx{0, 0, 1, D, T, pos.data(), &pat, true};
  MatD s = MatD::Zero(T, T);
  enc.AddLogitTerm(ctx, 0, T, j0, j1, HeadQK<double>{q.data(), k.data(), D}, s.data() + j0, T);
  return s;
}

// The paper's equations, from scratch: gates, their sums from j to i, the clamp, the interpolated
// embedding and its dot product with the query, over sqrt(D).
double NaiveTerm(const MatD& q, const MatD& k, const double* table, int npos, int i, int j,
                 bool nodiv) {
  const int D = static_cast<int>(q.cols());
  double p = 0;
  for (int t = std::min(i, j); t <= std::max(i, j); ++t)
    p += 1.0 / (1.0 + std::exp(-q.row(i).dot(k.row(t)) / std::sqrt(D)));
  p = std::min<double>(p, npos - 1);
  const double lo = std::floor(p), hi = std::ceil(p), w = p - lo;
  double z = 0;
  for (int c = 0; c < D; ++c)
    z += q(i, c) * (w * table[static_cast<int>(hi) * D + c] +
                    (1 - w) * table[static_cast<int>(lo) * D + c]);
  return nodiv ? z : z / std::sqrt(D);
}

TEST(Cope, TermIsThePapersInterpolatedEmbeddingOfTheGateCount) {
  const int T = 12, D = 4, npos = 6;  // positions reach about 6: some are clamped
  for (const bool nodiv : {false, true}) {
    auto enc = MakeCope(D, npos, true, nodiv);
    Rng rng(4);
    enc->Init(rng);
    MatD q(T, D), k(T, D);
    testing::FillNormal(q, rng);
    testing::FillNormal(k, rng);
    const double* table = enc->Parameters().at(0).value;
    AttentionPattern causal(true);
    const MatD s = Terms(*enc, q, k, causal, 0, T);
    int clamped = 0;
    for (int i = 0; i < T; ++i)
      for (int j = 0; j <= i; ++j) {
        EXPECT_NEAR(s(i, j), NaiveTerm(q, k, table, npos, i, j, nodiv), 1e-12) << i << " " << j;
        double p = 0;
        for (int t = j; t <= i; ++t) p += 1.0 / (1.0 + std::exp(-q.row(i).dot(k.row(t)) / 2));
        clamped += p > npos - 1;
      }
    EXPECT_GT(clamped, 0);
    EXPECT_LT(clamped, T * (T + 1) / 2);
    // Keys visited in two blocks give the same terms (streaming attention splits the keys).
    MatD split = Terms(*enc, q, k, causal, 0, 5);
    split += Terms(*enc, q, k, causal, 5, T);
    for (int i = 0; i < T; ++i)
      for (int j = 0; j <= i; ++j) EXPECT_NEAR(split(i, j), s(i, j), 1e-14);
  }
}

// q = (a, 1); marked keys (a, 0) have q.k / sqrt(2) = 40 (gate 1 to 1e-17), the others (-a, 0)
// -40 (gate 0); row p of the table is (0, p), so q . e[p] = p and the term is count / sqrt(2).
TEST(Cope, PlantedCountingReadsTheNumberOfMarkedKeysNotTheDistance) {
  const int T = 16, D = 2, npos = 17;
  auto enc = MakeCope(D, npos, true, false, 0);
  auto* cope = dynamic_cast<Cope<double>*>(enc.get());
  ASSERT_NE(cope, nullptr);
  for (int p = 0; p < npos; ++p) {
    cope->TableRow(0, p)[0] = 0;
    cope->TableRow(0, p)[1] = p;
  }
  const double a = std::sqrt(40 * std::sqrt(2.0));
  const std::vector<int> marked = {1, 4, 5, 11, 15};
  MatD q(T, D), k(T, D);
  for (int t = 0; t < T; ++t) {
    q.row(t) << a, 1;
    const bool m = std::find(marked.begin(), marked.end(), t) != marked.end();
    k.row(t) << (m ? a : -a), 0;
  }
  AttentionPattern causal(true);
  const MatD s = Terms(*enc, q, k, causal, 0, T);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) {
      int count = 0;
      for (int t : marked) count += t >= j && t <= i;
      EXPECT_NEAR(s(i, j) * std::sqrt(2.0), count, 1e-9) << i << " " << j;
    }
  // Keys 6..10 are unmarked: from query 10 they all sit at position 0, 5 tokens apart.
  EXPECT_NEAR(s(10, 6), s(10, 10), 1e-9);
  // Negative control: keys orthogonal to the query (k = 0) open every gate halfway, so the
  // position is (i - j + 1) / 2, the token distance's, for any content.
  const MatD half = Terms(*enc, q, MatD::Zero(T, D), causal, 0, T);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j)
      EXPECT_NEAR(half(i, j) * std::sqrt(2.0), (i - j + 1) / 2.0, 1e-12) << i << " " << j;
  // Encoder layout: a key after the query counts the gates from the query to it.
  AttentionPattern both(false);
  auto enc2 = MakeCope(D, npos, false, false, 0);
  auto* cope2 = dynamic_cast<Cope<double>*>(enc2.get());
  for (int p = 0; p < npos; ++p) cope2->TableRow(0, p)[1] = p;
  const MatD sym = Terms(*enc2, q, MatD::Zero(T, D), both, 0, T);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j)
      EXPECT_NEAR(sym(i, j) * std::sqrt(2.0), (std::abs(i - j) + 1) / 2.0, 1e-12);
}

// Under a non-contiguous mask (LongNet's dilated pattern) a key hidden inside a query's bounds
// counts nothing: the naive count sums the gates of visible keys only. Counting every key of the
// bounds instead (a mutation of Row::Visible) fails here.
TEST(Cope, HiddenKeysOfADilatedMaskCountNothing) {
  const int T = 40, D = 4, npos = 41;
  PatternConfig dilated;
  dilated.name = "dilated";
  dilated.segments = {8, 32};
  dilated.dilations = {1, 2};
  auto patterns = CreatePattern(dilated);
  const AttentionPattern* pattern = &patterns->ForHead(0, 1);  // LongNet's sets of head 0
  ASSERT_FALSE(pattern->Contiguous());
  auto enc = MakeCope(D, npos);
  Rng rng(6);
  enc->Init(rng);
  MatD q(T, D), k(T, D);
  testing::FillNormal(q, rng);
  testing::FillNormal(k, rng);
  const double* table = enc->Parameters().at(0).value;
  const MatD s = Terms(*enc, q, k, *pattern, 0, T);
  int hidden = 0;
  for (int i = 0; i < T; ++i) {
    int b = 0, e = 0;
    pattern->KeyBounds(i, T, &b, &e);
    for (int j = b; j < e; ++j) {
      if (!pattern->Visible(i, j, T)) {
        ++hidden;
        continue;
      }
      double p = 0;
      for (int t = j; t <= i; ++t)
        if (pattern->Visible(i, t, T))
          p += 1.0 / (1.0 + std::exp(-q.row(i).dot(k.row(t)) / std::sqrt(D)));
      p = std::min<double>(p, npos - 1);
      const int lo = static_cast<int>(std::floor(p)), hi = static_cast<int>(std::ceil(p));
      double z = 0;
      for (int c = 0; c < D; ++c)
        z += q(i, c) * ((p - lo) * table[hi * D + c] + (1 - (p - lo)) * table[lo * D + c]);
      EXPECT_NEAR(s(i, j), z / 2, 1e-12) << i << " " << j;
    }
  }
  EXPECT_GT(hidden, 0);  // the pattern hides keys inside the bounds
}

TEST(Cope, PositionsBeyondTheTableReadItsLastRow) {
  const int T = 16, D = 2, npos = 4;
  auto enc = MakeCope(D, npos, true, true, 0);
  auto* cope = dynamic_cast<Cope<double>*>(enc.get());
  for (int p = 0; p < npos; ++p) cope->TableRow(0, p)[1] = 10 + p;
  const double a = std::sqrt(40 * std::sqrt(2.0));
  MatD q(T, D), k(T, D);
  for (int t = 0; t < T; ++t) {
    q.row(t) << a, 1;
    k.row(t) << a, 0;  // every key counted: position i - j + 1
  }
  AttentionPattern causal(true);
  const MatD s = Terms(*enc, q, k, causal, 0, T);
  EXPECT_NEAR(s(15, 15), 11, 1e-9);  // position 1
  EXPECT_NEAR(s(15, 13), 13, 1e-9);  // position 3 = npos - 1
  EXPECT_NEAR(s(15, 0), 13, 1e-9);   // position 16, clamped
}

TEST(Cope, ZeroTableStartsAsNoPE) {
  auto enc = MakeCope(4, 8, true, false, 0);
  Rng rng(2);
  enc->Init(rng);
  MatD q(10, 4), k(10, 4);
  testing::FillNormal(q, rng);
  testing::FillNormal(k, rng);
  AttentionPattern causal(true);
  EXPECT_EQ(Terms(*enc, q, k, causal, 0, 10).cwiseAbs().maxCoeff(), 0.0);
}

TEST(Cope, NposDefaultsToTheTrainingLengthPlusOne) {
  auto enc = CreateEncoding<double>("cope", {}, EncodingShape{8, 2, 1, true, 64, 16, 8});
  EXPECT_EQ(dynamic_cast<Cope<double>*>(enc.get())->npos(), 17);
  EXPECT_THROW(CreateEncoding<double>("cope", {{"npos", "1"}},
                                      EncodingShape{8, 2, 1, true, 64, 16, 8}),
               InputError);
}

// Gradients under masks the registry-wide checks do not use: a sliding window (the count stops
// at the window) and LongNet's dilated pattern (non-contiguous keys: invisible keys count
// nothing), T = 70 across the 64-query block, positions partly clamped (npos 12).
TEST(Cope, GradientsUnderWindowAndDilatedMasks) {
  PatternConfig window;
  window.name = "sliding_window";
  window.window = 9;
  PatternConfig dilated;
  dilated.name = "dilated";
  dilated.segments = {8, 32};
  dilated.dilations = {1, 2};
  dilated.heads = 2;
  for (const PatternConfig& config : {window, dilated}) {
    auto pattern = CreatePattern(config);
    auto enc = CreateEncoding<double>("cope", {{"npos", "12"}, {"init_std", "0.5"}},
                                      EncodingShape{8, 2, 1, true, 80, 70, 8});
    Rng rng(5);
    enc->Init(rng);
    testing::AttentionGradCase gc;
    gc.shape = AttentionShape{1, 70, 2, 4};
    gc.pattern = pattern.get();
    gc.encoding = enc.get();
    gc.pos.resize(70);
    std::iota(gc.pos.begin(), gc.pos.end(), 0.0);
    gc.max_per_tensor = 60;
    const auto r = testing::CheckAttentionGradients(gc);
    EXPECT_GT(r.checked, 100) << config.name;
  }
}

}  // namespace
}  // namespace lexp
