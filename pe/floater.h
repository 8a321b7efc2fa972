// FLOATER (Liu et al. 2020, ICML, arXiv:2003.09229): the position encoding is a
// continuous trajectory p(t) in R^C, the solution of dp/dt = h(p), sampled at the position ids:
//   h(p) = Omega p + W2^T tanh(W1^T p + b1) + b2,   p(0) = sinusoid at 0 = (0, 1, 0, 1, ...)
// Omega is the fixed generator of the sinusoidal rotations (pair k turns at 10000^(-2k/C)) and W2,
// b2 start at 0, so at initialisation p(t) is lexp's sinusoidal encoding, which the paper notes is
// a member of the solution family; training learns the correction network (width `hidden`). The
// dynamics do not read t, so they are the same at every position. Solver: classical fixed-step RK4
// with `steps` substeps per unit position; gradients are exact for the discrete solve
// (backpropagation through the solver: states kept, stages recomputed). The encoding is added at
// the input only (the paper also injects it in every layer). Position ids must be integers >= 0.
#pragma once

#include <Eigen/Dense>
#include <string>
#include <vector>

#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Options of `floater` (recipe [encoding_options.floater]; pe/options.h).
struct FloaterOptions {
  int hidden = 32;
  int steps = 8;
  std::vector<OptionField> Fields() {
    return {{.name = "hidden", .help = "width of the learned correction network of dp/dt",
             .value = &hidden, .lo = 1},
            {.name = "steps",
             .help = "RK4 substeps per unit position (phase error ~ n / (120 steps^4) after n)",
             .value = &steps, .lo = 1}};
  }
};

template <typename S>
class Floater final : public PositionEncoding<S> {
 public:
  using Options = FloaterOptions;
  Floater(const EncodingShape& shape, const FloaterOptions& opt);
  std::string Name() const override { return "floater"; }
  unsigned Sites() const override { return kSiteEmbedding; }
  void Init(Rng& rng) override;
  std::vector<ParamRef<S>> Parameters() override;
  void Prepare(const std::vector<double>& pos, double max_distance) override;
  void AddEmbedding(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                    Mat<S>& x) override;
  void EmbeddingBackward(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                         Mat<S>& d_x) override;

  // p(position) of the last Prepare (C values).
  Eigen::RowVectorXd At(long position) const;

 private:
  using RowD = Eigen::RowVectorXd;
  RowD Field(const RowD& y, RowD* act) const;  // h(y); act = tanh(W1^T y + b1)
  // Adds J_h(y)^T g to dy and g's parameter gradients to the double accumulators.
  void FieldBackward(const RowD& y, const RowD& act, const RowD& g, RowD& dy);

  int C_, hidden_, steps_;
  std::vector<double> freq_;      // per pair
  Mat<S> w1_, w2_, d_w1_, d_w2_;  // [C, hidden], [hidden, C]
  RowVec<S> b1_, b2_, d_b1_, d_b2_;
  // Per forward pass: double copies of the parameters and the states at every substep.
  Eigen::MatrixXd w1d_, w2d_;
  RowD b1d_, b2d_;
  long max_pos_ = -1;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> states_;  // [n_steps+1, C]
  Eigen::MatrixXd gw1_, gw2_;
  RowD gb1_, gb2_;
};

}  // namespace lexp
