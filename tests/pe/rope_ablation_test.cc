// The analysis ablations of rope's post-critical pairs (pe/rope.h): freeze makes pairs >= c
// position-free, remove makes them contribute nothing, the first c pairs are untouched, and the
// attention through an ablated rope has correct gradients.
#include <gtest/gtest.h>

#include <numeric>

#include "nn/ops/attention.h"
#include "pe/registry.h"
#include "pe/rope.h"
#include "tests/testing/attention_gradcheck.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

constexpr int kD = 8, kP = kD / 2;

std::unique_ptr<PositionEncoding<double>> MakeRope(const std::map<std::string, std::string>& o) {
  return CreateEncoding<double>("rope", o, EncodingShape{kD, 1, 1, true, 1024, 16});
}

// Per-pair contributions q_i . k_j (half pairing) of one query at position 40 against one key at
// position p, both rows rotated by `enc`.
std::vector<double> PairTerms(PositionEncoding<double>& enc, const std::vector<double>& q,
                              const std::vector<double>& k, double p) {
  std::vector<double> pos = {p, 40};
  enc.Prepare(pos, PositionSpan(pos));
  AttentionPattern pat(true);
  AttentionContext ctx{0, 0, 1, kD, 2, pos.data(), &pat, true};
  std::vector<double> rows(2 * kD);
  std::copy(k.begin(), k.end(), rows.begin());
  std::copy(q.begin(), q.end(), rows.begin() + kD);
  std::vector<double> kr = rows, qr = rows;
  enc.TransformQK(ctx, false, kr.data(), kD);
  enc.TransformQK(ctx, true, qr.data(), kD);
  std::vector<double> t(kP);
  for (int m = 0; m < kP; ++m) t[m] = qr[kD + m] * kr[m] + qr[kD + m + kP] * kr[m + kP];
  return t;
}

TEST(RopeAblation, FreezeAndRemoveActOnlyOnThePairsFromTheCut) {
  const std::vector<double> q = {0.3, -1.2, 0.8, 0.5, 1.1, 0.4, -0.7, 0.9};
  const std::vector<double> k = {-0.6, 0.2, 1.3, -0.4, 0.5, 1.0, 0.3, -0.8};
  auto plain = MakeRope({});
  auto frozen = MakeRope({{"ablate_from", "2"}});
  auto removed = MakeRope({{"ablate_from", "2"}, {"ablation", "remove"}});
  for (double p : {0.0, 7.0, 31.0}) {
    const auto a = PairTerms(*plain, q, k, p), f = PairTerms(*frozen, q, k, p),
               r = PairTerms(*removed, q, k, p);
    for (int m = 0; m < 2; ++m) {
      EXPECT_NEAR(f[m], a[m], 1e-12) << "pair " << m << " untouched by freeze";
      EXPECT_NEAR(r[m], a[m], 1e-12) << "pair " << m << " untouched by remove";
    }
    for (int m = 2; m < kP; ++m) {
      EXPECT_NEAR(f[m], q[m] * k[m] + q[m + kP] * k[m + kP], 1e-12)
          << "frozen pair " << m << " is the unrotated product at every distance";
      EXPECT_EQ(r[m], 0.0) << "removed pair " << m;
    }
  }
  // Without ablation the pairs >= 2 do depend on the distance (the test can fail).
  EXPECT_GT(std::abs(PairTerms(*plain, q, k, 0)[2] - PairTerms(*plain, q, k, 31)[2]), 1e-2);
  EXPECT_THROW(MakeRope({{"ablate_from", "5"}}), std::exception);
  EXPECT_THROW(MakeRope({{"ablation", "zero"}}), std::exception);
}

TEST(RopeAblation, AblatedAttentionHasCorrectGradients) {
  for (const char* how : {"freeze", "remove"}) {
    auto enc = MakeRope({{"ablate_from", "1"}, {"ablation", how}});
    AttentionPattern pat(true);
    testing::AttentionGradCase gc;
    gc.shape = AttentionShape{1, 12, 1, kD};
    gc.pattern = &pat;
    gc.encoding = enc.get();
    gc.pos.resize(12);
    std::iota(gc.pos.begin(), gc.pos.end(), 0.0);
    gc.transform_qk = true;  // the ablation acts on the rotation (site 3)
    gc.check_v = false;
    testing::CheckAttentionGradients(gc);
  }
}

}  // namespace
}  // namespace lexp
