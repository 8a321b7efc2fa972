#include "pe/fire.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace lexp {

double FireNormalizedDistance(double d, double p, double c, double L, double eps) {
  return std::log(std::abs(c * d) + 1) / (std::log(std::abs(c * std::max(L, p)) + 1) + eps);
}

template <typename S>
Fire<S>::Fire(const EncodingShape& shape, const FireOptions& opt)
    : H_(shape.n_heads), per_layer_(opt.per_layer), init_L_(opt.init_L), eps_(opt.eps) {
  LEXP_INPUT_CHECK(
      shape.causal,
      "encoding 'fire' is defined for causal attention (model.layout = \"decoder\"): "
      "in the encoder layout a query's keys ahead lie beyond its normaliser psi(max(L, "
      "i)), outside the [0, 1] its MLP learns");
  if (init_L_ == 0) {
    LEXP_INPUT_CHECK(shape.train_length > 0,
                     "encoding 'fire': init_L = 0 needs the training length; give init_L");
    init_L_ = std::max(1.0, shape.train_length / 4.0);
  }
  const int rows = per_layer_ ? shape.n_layers : 1;
  w1_.setZero(rows, kWidth);
  b1_.setZero(rows, kWidth);
  w2_.setZero(rows, kWidth * H_);
  b2_.setZero(rows, H_);
  c_.setConstant(rows, 1, S(opt.init_c));
  m_.setConstant(rows, 1, S(1));
  dw1_.setZero(rows, kWidth);
  db1_.setZero(rows, kWidth);
  dw2_.setZero(rows, kWidth * H_);
  db2_.setZero(rows, H_);
  dc_.setZero(rows, 1);
  dm_.setZero(rows, 1);
}

template <typename S>
void Fire<S>::Init(Rng& rng) {
  // PyTorch's Linear default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases.
  const double b2 = 1 / std::sqrt(static_cast<double>(kWidth));
  for (long i = 0; i < w1_.size(); ++i) w1_.data()[i] = static_cast<S>(rng.Uniform(-1, 1));
  for (long i = 0; i < b1_.size(); ++i) b1_.data()[i] = static_cast<S>(rng.Uniform(-1, 1));
  for (long i = 0; i < w2_.size(); ++i) w2_.data()[i] = static_cast<S>(rng.Uniform(-b2, b2));
  for (long i = 0; i < b2_.size(); ++i) b2_.data()[i] = static_cast<S>(rng.Uniform(-b2, b2));
}

template <typename S>
void Fire<S>::AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                           const HeadQK<S>& /*qk*/, S* scores, long lds) const {
  const int r = Row(ctx.layer), h = ctx.head;
  const double c = c_(r, 0), L = std::abs(m_(r, 0) * init_L_);
  const S* w1 = w1_.data() + r * kWidth;
  const S* b1 = b1_.data() + r * kWidth;
  const S* w2 = w2_.data() + r * kWidth * H_;
  for (int i = i0; i < i1; ++i) {
    S* row = scores + static_cast<long>(i - i0) * lds;
    for (int j = j0; j < j1; ++j) {
      const double u = FireNormalizedDistance(std::abs(ctx.Distance(i, j)), ctx.pos[i], c, L, eps_);
      double out = b2_(r, h);
      for (int k = 0; k < kWidth; ++k)
        out += w2[k * H_ + h] * std::max(0.0, static_cast<double>(w1[k]) * u + b1[k]);
      row[j - j0] += static_cast<S>(out);
    }
  }
}

template <typename S>
void Fire<S>::BeginBackward(int tasks) {
  tasks_ = tasks;
  slots_.assign(static_cast<size_t>(tasks) * kSlot, 0.0);
}

// Forward: a = b2_h + sum_k w2[k,h] relu(w1_k u + b1_k), u = ln(|c d|+1) / (ln(|c x|+1) + eps),
// x = max(|m init_L|, p_i).
// Backward: g = dL/da; dw2[k,h] += g relu_k; db2_h += g; g_k = g w2[k,h] [pre_k > 0];
// dw1_k += g_k u; db1_k += g_k; du = sum_k g_k w1_k; dc += du du/dc; dm += du du/dm.
template <typename S>
void Fire<S>::LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                                const HeadQK<S>& /*qk*/, S* d_scores, long lds,
                                const HeadQKGrad<S>& /*grad*/, int task) {
  slot_layer_ = ctx.layer;
  const int r = Row(ctx.layer), h = ctx.head;
  const double c = c_(r, 0), m = m_(r, 0), L = std::abs(m * init_L_);
  const S* w1 = w1_.data() + r * kWidth;
  const S* b1 = b1_.data() + r * kWidth;
  const S* w2 = w2_.data() + r * kWidth * H_;
  double* s = slots_.data() + static_cast<long>(task) * kSlot;
  for (int i = i0; i < i1; ++i) {
    const S* row = d_scores + static_cast<long>(i - i0) * lds;
    const double p = ctx.pos[i];
    const double x = std::max(L, p);
    const double den = std::log(std::abs(c * x) + 1) + eps_;
    const double dden_dc = (c >= 0 ? 1 : -1) * x / (std::abs(c * x) + 1);
    // d den / d m, only where the threshold L is the maximum.
    const double dden_dm =
        L > p ? std::abs(c) / (std::abs(c * x) + 1) * init_L_ * (m >= 0 ? 1 : -1) : 0.0;
    for (int j = j0; j < j1; ++j) {
      const double g = row[j - j0];
      if (g == 0) continue;
      const double d = std::abs(ctx.Distance(i, j));
      const double num = std::log(std::abs(c * d) + 1);
      const double u = num / den;
      double du = 0;
      for (int k = 0; k < kWidth; ++k) {
        const double pre = static_cast<double>(w1[k]) * u + b1[k];
        if (pre <= 0) continue;
        s[2 * kWidth + k] += g * pre;  // dw2[k, h]
        const double gk = g * w2[k * H_ + h];
        s[k] += gk * u;       // dw1_k
        s[kWidth + k] += gk;  // db1_k
        du += gk * w1[k];
      }
      s[3 * kWidth] += g;  // db2_h
      const double dnum_dc = (c >= 0 ? 1 : -1) * d / (std::abs(c * d) + 1);
      s[3 * kWidth + 1] += du * (dnum_dc * den - num * dden_dc) / (den * den);
      s[3 * kWidth + 2] += du * (-num * dden_dm) / (den * den);
    }
  }
}

template <typename S>
void Fire<S>::EndBackward() {
  const int r = Row(slot_layer_);
  for (int task = 0; task < tasks_; ++task) {
    const int h = task % H_;
    const double* s = slots_.data() + static_cast<long>(task) * kSlot;
    for (int k = 0; k < kWidth; ++k) {
      dw1_(r, k) += static_cast<S>(s[k]);
      db1_(r, k) += static_cast<S>(s[kWidth + k]);
      dw2_(r, k * H_ + h) += static_cast<S>(s[2 * kWidth + k]);
    }
    db2_(r, h) += static_cast<S>(s[3 * kWidth]);
    dc_(r, 0) += static_cast<S>(s[3 * kWidth + 1]);
    dm_(r, 0) += static_cast<S>(s[3 * kWidth + 2]);
  }
}

template <typename S>
std::vector<ParamRef<S>> Fire<S>::Parameters() {
  // One row per FIRE module (layer, or one shared): the MLP 1 -> kWidth -> H and the scalars c, m.
  const uint64_t rows = static_cast<uint64_t>(w1_.rows());
  auto ref = [&](const char* n, Mat<S>& v, Mat<S>& g, const char* axes,
                 std::vector<uint64_t> shape) {
    return ParamRef<S>{std::string("pe.fire.") + n, v, g, axes, std::move(shape)};
  };
  const uint64_t W = kWidth, H = static_cast<uint64_t>(H_);
  return {ref("w1", w1_, dw1_, "layer,hidden", {rows, W}),
          ref("b1", b1_, db1_, "layer,hidden", {rows, W}),
          ref("w2", w2_, dw2_, "layer,hidden,head", {rows, W, H}),
          ref("b2", b2_, db2_, "layer,head", {rows, H}),
          ref("c", c_, dc_, "layer", {rows}),
          ref("L_multiplier", m_, dm_, "layer", {rows})};
}

template <typename S>
std::map<std::string, std::vector<double>> Fire<S>::Describe() const {
  std::map<std::string, std::vector<double>> out;
  out["init_L"] = {init_L_};
  for (long r = 0; r < m_.rows(); ++r) {
    out["L"].push_back(std::abs(static_cast<double>(m_(r, 0)) * init_L_));
    out["c"].push_back(static_cast<double>(c_(r, 0)));
  }
  return out;
}

template class Fire<float>;
template class Fire<double>;

}  // namespace lexp
