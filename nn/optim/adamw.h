// AdamW with decoupled weight decay (Loshchilov & Hutter 2019, arXiv:1711.05101), global
// gradient-norm clipping, and a linear warm-up followed by cosine decay to `min_lr_ratio * lr`.
// Matches torch.optim.AdamW: p -= lr*wd*p; m,v updated; p -= lr * mhat / (sqrt(vhat) + eps).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "nn/check.h"
#include "nn/parallel.h"
#include "nn/position_hooks.h"

namespace lexp {

struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
  double clip_norm = 1.0;  // <= 0 disables clipping
  int warmup_steps = 100;
  int total_steps = 1000;
  double min_lr_ratio = 0.1;
};

// Learning rate at 0-based `step`: linear warm-up over warmup_steps, then cosine to
// min_lr_ratio*lr.
inline double ScheduledLr(const AdamWConfig& c, long step) {
  if (c.warmup_steps > 0 && step < c.warmup_steps)
    return c.lr * static_cast<double>(step + 1) / c.warmup_steps;
  const long decay_steps = std::max(1L, static_cast<long>(c.total_steps) - c.warmup_steps);
  const double t = std::min(1.0, static_cast<double>(step - c.warmup_steps) / decay_steps);
  const double cosine = 0.5 * (1.0 + std::cos(3.14159265358979323846 * t));
  return c.lr * (c.min_lr_ratio + (1.0 - c.min_lr_ratio) * cosine);
}

inline constexpr long kAdamGrain = 1 << 15;

template <typename S>
class AdamW {
 public:
  explicit AdamW(const AdamWConfig& cfg) : cfg_(cfg) {}

  // Sizes the moment buffers for these parameters (once).
  void Attach(const std::vector<ParamRef<S>>& params) {
    m_.resize(params.size());
    v_.resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      m_[i].assign(params[i].size, 0.0);
      v_[i].assign(params[i].size, 0.0);
    }
  }

  // Global L2 norm of all gradients, in double: each chunk of kAdamGrain elements of a parameter
  // summed in eight interleaved running sums (added in a fixed order), the chunks in parallel, then
  // their sums added in parameter and chunk order, so the bits do not depend on the thread count.
  // (One running sum over every element was a chain of dependent additions: about 1% of a T step.)
  static double GradNorm(const std::vector<ParamRef<S>>& params) {
    const std::vector<Chunk> chunks = ChunksOf(params);
    std::vector<double> sums(chunks.size());
    ParallelFor(static_cast<long>(chunks.size()), [&](long c) {
      const Chunk& chunk = chunks[static_cast<size_t>(c)];
      sums[static_cast<size_t>(c)] =
          SumOfSquares(params[chunk.param].grad + chunk.i0, chunk.i1 - chunk.i0);
    });
    double ss = 0;
    for (const double sum : sums) ss += sum;
    return std::sqrt(ss);
  }

  // One update; returns the gradient norm before clipping. Parameters named "*.b", "*.g" (biases,
  // norm gains) and embeddings are decayed too, as torch's AdamW does with a single parameter
  // group.
  double Step(const std::vector<ParamRef<S>>& params, double lr) {
    LEXP_CHECK(params.size() == m_.size(), "AdamW: Attach() was not called for these parameters");
    const double norm = GradNorm(params);
    const double clip =
        (cfg_.clip_norm > 0 && norm > cfg_.clip_norm) ? cfg_.clip_norm / (norm + 1e-6) : 1.0;
    ++t_;
    const double bc1 = 1.0 - std::pow(cfg_.beta1, static_cast<double>(t_));
    const double bc2 = 1.0 - std::pow(cfg_.beta2, static_cast<double>(t_));
    // Every parameter's chunks in one parallel region (a model has dozens of small tensors: a
    // region each cost more than their updates). Element-wise, so any split gives the same bits.
    chunks_ = ChunksOf(params);
    ParallelFor(static_cast<long>(chunks_.size()), [&](long c) {
      const Chunk& chunk = chunks_[static_cast<size_t>(c)];
      const auto& p = params[chunk.param];
      // In blocks whose square roots go through Eigen's packets: std::sqrt in a loop is a call
      // that may set errno, which keeps the loop from vectorising. The same IEEE operations in
      // the same order, lane by lane: the same bits as one element at a time.
      const S* __restrict grad = p.grad;
      S* __restrict value = p.value;
      double* __restrict m = m_[chunk.param].data();
      double* __restrict v = v_[chunk.param].data();
      const double beta1 = cfg_.beta1, beta2 = cfg_.beta2, decay = cfg_.weight_decay,
                   eps = cfg_.eps;
      constexpr long kBlock = 256;
      alignas(64) double root[kBlock];
      for (long b0 = chunk.i0; b0 < chunk.i1; b0 += kBlock) {
        const long b1 = std::min(chunk.i1, b0 + kBlock);
        for (long i = b0; i < b1; ++i) {
          const double g = static_cast<double>(grad[i]) * clip;
          m[i] = beta1 * m[i] + (1 - beta1) * g;
          v[i] = beta2 * v[i] + (1 - beta2) * g * g;
          root[i - b0] = v[i] / bc2;
        }
        Eigen::Map<Eigen::ArrayXd> r(root, b1 - b0);
        r = r.sqrt();
        for (long i = b0; i < b1; ++i) {
          double w = static_cast<double>(value[i]);
          w -= lr * decay * w;
          w -= lr * (m[i] / bc1) / (root[i - b0] + eps);
          value[i] = static_cast<S>(w);
        }
      }
    });
    return norm;
  }

  long step_count() const { return t_; }
  void set_step_count(long t) { t_ = t; }
  std::vector<std::vector<double>>& first_moments() { return m_; }
  std::vector<std::vector<double>>& second_moments() { return v_; }

 private:
  AdamWConfig cfg_;
  long t_ = 0;
  std::vector<std::vector<double>> m_, v_;
  struct Chunk {
    size_t param;
    long i0, i1;
  };
  std::vector<Chunk> chunks_;  // Step's tasks: elements [i0, i1) of one parameter

  // Every parameter cut into chunks of kAdamGrain elements, in parameter order.
  static std::vector<Chunk> ChunksOf(const std::vector<ParamRef<S>>& params) {
    std::vector<Chunk> chunks;
    for (size_t k = 0; k < params.size(); ++k)
      for (long i0 = 0; i0 < params[k].size; i0 += kAdamGrain)
        chunks.push_back({k, i0, std::min(params[k].size, i0 + kAdamGrain)});
    return chunks;
  }

  // sum_i x_i^2 in double: running sum j takes elements i = j (mod 8), and the eight are added
  // pairwise in a fixed order.
  static double SumOfSquares(const S* x, long n) {
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    long i = 0;
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) lane[j] += static_cast<double>(x[i + j]) * x[i + j];
    for (; i < n; ++i) lane[i % 8] += static_cast<double>(x[i]) * x[i];
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
           ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
};

}  // namespace lexp
