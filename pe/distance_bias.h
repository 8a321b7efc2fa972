// Shared machinery of the additive biases that depend only on the (effective) distance and the
// head, b_h(|i - j|): KERPLE (log and power) and Sandwich. Each forward pass tabulates b_h(d) for
// every integer distance the batch can produce (Prepare), so the attention loop is a table look-up;
// the backward pass adds dL/db into a per-task histogram over distance and reduces it, in task
// order, through the bias's derivative with respect to its parameters. Distances that are not
// integers (continuous positions) are evaluated directly.
#pragma once

#include <cmath>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"

namespace lexp {

template <typename S>
class DistanceBias : public PositionEncoding<S> {
 public:
  explicit DistanceBias(int heads) : H_(heads) {}
  unsigned Sites() const override { return kSiteLogitTerm; }

  void Prepare(const std::vector<double>& /*pos*/, double max_distance) override {
    max_d_ = static_cast<long>(std::ceil(max_distance)) + 1;
    table_.assign(static_cast<size_t>(H_) * (max_d_ + 1), 0.0);
    for (int h = 0; h < H_; ++h)
      for (long d = 0; d <= max_d_; ++d)
        table_[h * (max_d_ + 1) + d] = Bias(h, static_cast<double>(d));
  }

  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& /*qk*/, S* scores, long lds) const override {
    const double* t = table_.data() + static_cast<long>(ctx.head) * (max_d_ + 1);
    for (int i = i0; i < i1; ++i) {
      S* row = scores + static_cast<long>(i - i0) * lds;
      for (int j = j0; j < j1; ++j) {
        const double d = std::abs(ctx.Distance(i, j));
        const long di = std::lround(d);
        row[j - j0] += static_cast<S>(di == d && di <= max_d_ ? t[di] : Bias(ctx.head, d));
      }
    }
  }

  void BeginBackward(int tasks) override {
    tasks_ = tasks;
    hist_.assign(static_cast<size_t>(tasks) * (max_d_ + 1), 0.0);
    direct_.assign(static_cast<size_t>(tasks) * ParamsPerHead(), 0.0);
  }

  // Forward: a_ij += b_h(d_ij).  Backward: dL/dtheta_h += sum_ij dL/da_ij * db_h/dtheta (d_ij).
  void LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const HeadQK<S>& /*qk*/, S* d_scores, long lds,
                         const HeadQKGrad<S>& /*grad*/, int task) override {
    if (ParamsPerHead() == 0) return;
    double* hist = hist_.data() + static_cast<long>(task) * (max_d_ + 1);
    double* direct = direct_.data() + static_cast<long>(task) * ParamsPerHead();
    for (int i = i0; i < i1; ++i) {
      const S* row = d_scores + static_cast<long>(i - i0) * lds;
      for (int j = j0; j < j1; ++j) {
        const double d = std::abs(ctx.Distance(i, j));
        const long di = std::lround(d);
        if (di == d && di <= max_d_)
          hist[di] += row[j - j0];
        else
          BiasGrad(ctx.head, d, row[j - j0], direct);
      }
    }
  }

  void EndBackward() override {
    const int P = ParamsPerHead();
    if (P == 0) return;
    std::vector<double> g(P);
    for (int task = 0; task < tasks_; ++task) {
      const int h = task % H_;
      std::fill(g.begin(), g.end(), 0.0);
      const double* hist = hist_.data() + static_cast<long>(task) * (max_d_ + 1);
      for (long d = 0; d <= max_d_; ++d)
        if (hist[d] != 0) BiasGrad(h, static_cast<double>(d), hist[d], g.data());
      const double* direct = direct_.data() + static_cast<long>(task) * P;
      for (int p = 0; p < P; ++p) g[p] += direct[p];
      AddGrad(h, g.data());
    }
  }

  // b_h(d) for d >= 0.
  virtual double Bias(int h, double d) const = 0;

 protected:
  // Learnable parameters per head (0 for fixed biases).
  virtual int ParamsPerHead() const { return 0; }
  // grad[p] += g * d b_h(d) / d theta_p.
  virtual void BiasGrad(int /*h*/, double /*d*/, double /*g*/, double* /*grad*/) const {}
  // Adds a head's parameter gradient into the encoding's gradient storage.
  virtual void AddGrad(int /*h*/, const double* /*grad*/) {}

  int H_;

 private:
  long max_d_ = 0;
  std::vector<double> table_;          // [H, max_d + 1]
  std::vector<double> hist_, direct_;  // per-task slots
  int tasks_ = 0;
};

}  // namespace lexp
