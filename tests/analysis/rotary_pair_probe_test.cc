// The rotary pair observer: counts every visible (query, key) once on the right side of the split,
// its supremum is sum_k |q_k||k_k| / sqrt(D) from the unrotated rows (rotation keeps pair norms)
// and bounds the observed logits, which equal the logits the attention captured; the observed
// encoding computes exactly what it computed without the observer. With rope_partial the supremum
// adds the unrotated dimensions' q.k (the same at every distance), so it still bounds the logits.
#include "analysis/rotary_pair_probe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "nn/ops/attention.h"
#include "pe/registry.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

TEST(RotaryPairProbe, CountsBoundsAndLeavesTheEncodingUnchanged) {
  constexpr int T = 10, D = 8, P = D / 2;
  const EncodingShape shape{D, 1, 1, true, 1024, 16};
  auto plain = CreateEncoding<float>("rope", {{"base", "100"}}, shape);
  RotaryPairProbe<float> probe(CreateEncoding<float>("rope", {{"base", "100"}}, shape), 1, 1, P,
                               false, 4.0);
  std::vector<double> pos(T);
  std::iota(pos.begin(), pos.end(), 0.0);
  plain->Prepare(pos, PositionSpan(pos));
  probe.Prepare(pos, PositionSpan(pos));
  AttentionPattern pat(true);
  Rng rng(2);
  MatF q(T, D), k(T, D), v(T, D);
  for (auto* m : {&q, &k, &v})
    for (long i = 0; i < m->size(); ++i) m->data()[i] = static_cast<float>(rng.Normal());
  const AttentionShape sh{1, T, 1, D};
  AttentionCache<float> c1, c2;
  c1.capture_logits = c2.capture_logits = true;
  MatF o1, o2;
  AttentionForward(q, k, v, sh, pos, pat, *plain, 0, true, c1, o1);
  AttentionForward(q, k, v, sh, pos, pat, probe, 0, true, c2, o2);
  EXPECT_EQ(o1, o2);
  probe.EndSequence();
  const RotaryPairStats st = probe.Stats();
  EXPECT_EQ(st.near_count[0], 1 + 2 + 3 + 4 * 7) << "distances 0..3 of every query";
  EXPECT_EQ(st.far_count[0], T * (T + 1) / 2 - 34);
  double sup = -1e30, obs = -1e30;
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) {
      double s = 0;
      for (int m = 0; m < P; ++m)
        s += std::hypot(q(i, m), q(i, m + P)) * std::hypot(k(j, m), k(j, m + P));
      sup = std::max(sup, s / std::sqrt(D));
      obs = std::max(obs, static_cast<double>(c2.logits(i, j)));
    }
  EXPECT_NEAR(st.supremum[0], sup, 1e-5);
  EXPECT_NEAR(st.observed[0], obs, 1e-5);
  EXPECT_LE(st.observed[0], st.supremum[0]);
  for (int m = 0; m < P; ++m) EXPECT_GT(st.near_abs[m], 0.0);
}

// rope_partial rotates 4 of 8 dimensions; queries and keys equal and large on the unrotated ones,
// so their constant q.k dominates every logit. Leaving it out of the supremum (the defect) puts the
// observed maximum above the "supremum".
TEST(RotaryPairProbe, PartialRotationSupremumCountsTheUnrotatedDimensions) {
  constexpr int T = 12, D = 8, P = 2;
  const EncodingShape shape{D, 1, 1, true, 1024, 16};
  const std::map<std::string, std::string> opt{{"base", "100"}, {"fraction", "0.5"}};
  RotaryPairProbe<float> probe(CreateEncoding<float>("rope_partial", opt, shape), 1, 1, P, false,
                               4.0);
  std::vector<double> pos(T);
  std::iota(pos.begin(), pos.end(), 0.0);
  probe.Prepare(pos, PositionSpan(pos));
  AttentionPattern pat(true);
  Rng rng(5);
  MatF q(T, D), k(T, D), v(T, D);
  for (auto* m : {&q, &k, &v})
    for (long i = 0; i < m->size(); ++i) m->data()[i] = static_cast<float>(0.3 * rng.Normal());
  for (int i = 0; i < T; ++i)
    for (int m = 2 * P; m < D; ++m) q(i, m) = k(i, m) = 2.0f;
  const AttentionShape sh{1, T, 1, D};
  AttentionCache<float> c;
  c.capture_logits = true;
  MatF o;
  AttentionForward(q, k, v, sh, pos, pat, probe, 0, true, c, o);
  probe.EndSequence();
  const RotaryPairStats st = probe.Stats();
  double sup = -1e30, obs = -1e30;
  for (int i = 0; i < T; ++i)
    for (int j = 0; j <= i; ++j) {
      double s = 0, u = 0;
      for (int m = 0; m < P; ++m)
        s += std::hypot(q(i, m), q(i, m + P)) * std::hypot(k(j, m), k(j, m + P));
      for (int m = 2 * P; m < D; ++m) u += q(i, m) * k(j, m);
      sup = std::max(sup, (s + u) / std::sqrt(D));
      obs = std::max(obs, static_cast<double>(c.logits(i, j)));
    }
  EXPECT_GT(obs, 16.0 / std::sqrt(D) - 1.0) << "the unrotated q.k (4 x 2 x 2 / sqrt 8) dominates";
  EXPECT_NEAR(st.supremum[0], sup, 1e-5);
  EXPECT_NEAR(st.observed[0], obs, 1e-5);
  EXPECT_LE(st.observed[0], st.supremum[0]);
}

}  // namespace
}  // namespace lexp
