// The gradient check of one attention layer with an encoding and a pattern, shared by every test
// of an attention-level site: random q, k, v and a projection w, loss = sum(out * w) through the
// streaming forward pass (which must equal the materialised one), analytic gradients from
// AttentionBackward (and site 3's backward when q and k go through it; also fused, and written
// into a [B*T, 3C] d_qkv, both compared with it), then CheckGradients on the chosen inputs and the
// encoding's parameters.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "nn/ops/attention.h"
#include "nn/position_hooks.h"
#include "nn/rng.h"
#include "tests/testing/gradcheck.h"

namespace lexp::testing {

struct AttentionGradCase {
  AttentionShape shape;
  const AttentionPattern* pattern = nullptr;
  PositionEncoding<double>* encoding = nullptr;
  std::vector<double> pos;    // [T] position ids
  bool transform_qk = false;  // q and k go through site 3 (TransformQK) before attention
  bool check_q = true, check_k = true, check_v = true;
  int max_per_tensor = 40;
  uint64_t seed = 3;
};

// materialised: receives the cache of the materialised pass (logits and probabilities captured).
inline GradCheckResult CheckAttentionGradients(const AttentionGradCase& c,
                                               AttentionCache<double>* materialised = nullptr) {
  const AttentionShape& sh = c.shape;
  const AttentionPattern& pat = *c.pattern;
  PositionEncoding<double>& enc = *c.encoding;
  Rng rng(c.seed);
  const long N = static_cast<long>(sh.B) * sh.T, C = sh.C();
  MatD q(N, C), k(N, C), v(N, C), w(N, C);
  FillNormal(q, rng);
  FillNormal(k, rng);
  FillNormal(v, rng);
  FillNormal(w, rng);
  // Site 3 (or its backward) on every (sequence, head) block of m.
  auto site3 = [&](MatD& m, bool is_query, bool backward) {
    if (!c.transform_qk) return;
    for (long task = 0; task < sh.Tasks(); ++task) {
      AttentionContext ctx{0,    static_cast<int>(task % sh.H),
                           sh.H, sh.D,
                           sh.T, c.pos.data(),
                           &pat, pat.PlainDistance()};
      double* x = m.data() + (task / sh.H) * sh.T * C + (task % sh.H) * sh.D;
      if (backward)
        enc.TransformQKBackward(ctx, is_query, x, C);
      else
        enc.TransformQK(ctx, is_query, x, C);
    }
  };
  // As the model does before every forward pass (tables follow the parameters).
  auto forward = [&](bool materialize, AttentionCache<double>& cache, MatD& out) {
    enc.Prepare(c.pos, pat.MaxDistance(PositionSpan(c.pos)));
    MatD qr = q, kr = k;
    site3(qr, true, false);
    site3(kr, false, false);
    AttentionForward(qr, kr, v, sh, c.pos, pat, enc, 0, materialize, cache, out);
    return std::pair<MatD, MatD>(std::move(qr), std::move(kr));
  };
  auto loss = [&] {
    MatD out;
    AttentionCache<double> cache;
    forward(false, cache, out);  // the streaming path
    return out.cwiseProduct(w).sum();
  };
  MatD out, streamed;
  AttentionCache<double> cache, stream_cache;
  cache.capture_logits = true;
  auto [qr, kr] = forward(true, cache, out);
  forward(false, stream_cache, streamed);
  EXPECT_LT((out - streamed).cwiseAbs().maxCoeff(), 1e-12) << "streaming != materialised";
  // Site 3's backward fused into each attention task (as the model runs it where it can) gives the
  // bits of applying it afterwards, and the same parameter gradients.
  const bool fusable = c.transform_qk && !pat.HasMemory() && !enc.Uses(kSiteHeadMix);
  MatD fused_q = MatD::Zero(N, C), fused_k = MatD::Zero(N, C), fused_v = MatD::Zero(N, C);
  std::vector<std::vector<double>> fused_grads;
  if (fusable) {
    for (auto& r : enc.Parameters()) std::fill(r.grad, r.grad + r.size, 0.0);
    AttentionBackward(qr, kr, v, sh, c.pos, pat, enc, 0, cache, w, fused_q, fused_k, fused_v,
                      static_cast<MatD*>(nullptr), static_cast<MatD*>(nullptr), true);
    for (auto& r : enc.Parameters()) fused_grads.emplace_back(r.grad, r.grad + r.size);
  }
  // The model's write into the thirds of a [N, 3C] d_qkv (leading dimension 3C), each task zeroing
  // its own part first (the buffer holds stale values): the gradients of separate matrices.
  const bool into_qkv = !pat.HasMemory() && !enc.Uses(kSiteHeadMix);
  MatD d_qkv = MatD::Constant(N, 3 * C, 7.0);
  std::vector<std::vector<double>> into_grads;
  if (into_qkv) {
    for (auto& r : enc.Parameters()) std::fill(r.grad, r.grad + r.size, 0.0);
    AttentionBackwardInto(qr, kr, v, sh, c.pos, pat, enc, 0, cache, w,
                          QkvGradOut<double>{d_qkv.data(), d_qkv.data() + C, d_qkv.data() + 2 * C,
                                             3 * C},
                          true, static_cast<MatD*>(nullptr), static_cast<MatD*>(nullptr), fusable);
    for (auto& r : enc.Parameters()) into_grads.emplace_back(r.grad, r.grad + r.size);
  }
  for (auto& r : enc.Parameters()) std::fill(r.grad, r.grad + r.size, 0.0);
  MatD d_q = MatD::Zero(N, C), d_k = MatD::Zero(N, C), d_v = MatD::Zero(N, C);
  AttentionBackward(qr, kr, v, sh, c.pos, pat, enc, 0, cache, w, d_q, d_k, d_v);
  site3(d_q, true, true);
  site3(d_k, false, true);
  if (fusable) {
    EXPECT_TRUE(fused_q == d_q) << "fused site 3 backward: other d_q bits";
    EXPECT_TRUE(fused_k == d_k) << "fused site 3 backward: other d_k bits";
    EXPECT_TRUE(fused_v == d_v);
    size_t i = 0;
    for (auto& r : enc.Parameters()) {
      for (long j = 0; j < r.size; ++j)
        EXPECT_NEAR(fused_grads[i][j], r.grad[j], 1e-12 * (1 + std::abs(r.grad[j]))) << r.name;
      ++i;
    }
  }
  if (into_qkv) {
    // Without memory keys or head mixing, site 3's backward is fused whenever it is used.
    EXPECT_LT((d_qkv.leftCols(C) - d_q).cwiseAbs().maxCoeff(), 1e-12) << "d_qkv's d_q";
    EXPECT_LT((d_qkv.middleCols(C, C) - d_k).cwiseAbs().maxCoeff(), 1e-12) << "d_qkv's d_k";
    EXPECT_LT((d_qkv.rightCols(C) - d_v).cwiseAbs().maxCoeff(), 1e-12) << "d_qkv's d_v";
    size_t i = 0;
    for (auto& r : enc.Parameters()) {
      for (long j = 0; j < r.size; ++j)
        EXPECT_NEAR(into_grads[i][j], r.grad[j], 1e-12 * (1 + std::abs(r.grad[j]))) << r.name;
      ++i;
    }
  }
  std::vector<ParamRef<double>> params;
  if (c.check_q) params.push_back({"q", q.data(), d_q.data(), q.size()});
  if (c.check_k) params.push_back({"k", k.data(), d_k.data(), k.size()});
  if (c.check_v) params.push_back({"v", v.data(), d_v.data(), v.size()});
  for (auto& r : enc.Parameters()) params.push_back(r);
  if (materialised) *materialised = cache;
  return CheckGradients(loss, params, CopyGrads(params), c.max_per_tensor);
}

}  // namespace lexp::testing
