#include "pe/dape.h"

#include <cmath>

#include "fmt/format.h"
#include "nn/check.h"

namespace lexp {

template <typename S>
Dape<S>::Dape(const EncodingShape& shape, const DapeOptions& opt,
              std::unique_ptr<PositionEncoding<S>> base)
    : base_(std::move(base)), H_(shape.n_heads), L_(shape.n_layers), W_(opt.width) {
  LEXP_CHECK(base_->Sites() == kSiteLogitTerm, "encoding 'dape': its base must be a logit term");
  w1_.setZero(static_cast<long>(L_) * 2 * H_, W_);
  c1_.setZero(L_, W_);
  w2_.setZero(static_cast<long>(L_) * W_, H_);
  c2_.setZero(L_, H_);
  dw1_.setZero(w1_.rows(), W_);
  dc1_.setZero(L_, W_);
  dw2_.setZero(w2_.rows(), H_);
  dc2_.setZero(L_, H_);
}

template <typename S>
void Dape<S>::Init(Rng& rng) {
  base_->Init(rng);
  // nn.Linear's default: weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  auto fill = [&](Mat<S>& m, int fan_in) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    for (long e = 0; e < m.size(); ++e) m.data()[e] = static_cast<S>(rng.Uniform(-bound, bound));
  };
  fill(w1_, 2 * H_);
  fill(c1_, 2 * H_);
  fill(w2_, W_);
  fill(c2_, W_);
}

template <typename S>
std::vector<ParamRef<S>> Dape<S>::Parameters() {
  std::vector<ParamRef<S>> out = base_->Parameters();
  const uint64_t L = L_, H = H_, W = W_;
  out.push_back({"pe.dape.w1", w1_, dw1_, "layer,input,hidden", {L, 2 * H, W}});
  out.push_back({"pe.dape.c1", c1_, dc1_, "layer,hidden", {L, W}});
  out.push_back({"pe.dape.w2", w2_, dw2_, "layer,hidden,head", {L, W, H}});
  out.push_back({"pe.dape.c2", c2_, dc2_, "layer,head", {L, H}});
  return out;
}

template <typename S>
std::map<std::string, std::vector<double>> Dape<S>::Describe() const {
  std::map<std::string, std::vector<double>> out = base_->Describe();
  out["width"] = {static_cast<double>(W_)};
  return out;
}

template <typename S>
void Dape<S>::Biases(const AttentionContext* heads, int i0, int i1, int j0, int j1,
                     const HeadQK<S>* qk, long lds, std::vector<S>& bias) const {
  const long block = static_cast<long>(i1 - i0) * lds;
  bias.assign(static_cast<size_t>(H_ * block), S(0));
  for (int h = 0; h < H_; ++h)
    base_->AddLogitTerm(heads[h], i0, i1, j0, j1, qk[h], bias.data() + h * block, lds);
}

namespace {

// z = [x_1..x_H, b_1..b_H] of row r's keys (m rows of 2H).
template <typename S>
void GatherInputs(int H, int m, long offset, const S* const* scores, const S* bias, long block,
                  Mat<S>& z) {
  z.resize(m, 2 * H);
  for (int j = 0; j < m; ++j)
    for (int h = 0; h < H; ++h) {
      z(j, h) = scores[h][offset + j];
      z(j, H + h) = bias[h * block + offset + j];
    }
}

}  // namespace

// Forward: a_h = x_h + b_h + (W2^T LeakyReLU(W1^T z + c1) + c2)_h at every (i, j) of the block.
template <typename S>
void Dape<S>::MixHeads(const AttentionContext* heads, int i0, int i1, int j0, int j1,
                       const HeadQK<S>* qk, S* const* scores, long lds) const {
  const int n = i1 - i0, m = j1 - j0, layer = heads[0].layer;
  if (m <= 0) return;
  std::vector<S> bias;
  Biases(heads, i0, i1, j0, j1, qk, lds, bias);
  const long block = static_cast<long>(n) * lds;
  Eigen::Map<const Mat<S>> w1(w1_.data() + static_cast<long>(layer) * 2 * H_ * W_, 2 * H_, W_);
  Eigen::Map<const Mat<S>> w2(w2_.data() + static_cast<long>(layer) * W_ * H_, W_, H_);
  const auto c1 = c1_.row(layer), c2 = c2_.row(layer);
  Mat<S> z, u(m, W_), y(m, H_);
  for (int r = 0; r < n; ++r) {
    const long offset = static_cast<long>(r) * lds;
    GatherInputs(H_, m, offset, scores, bias.data(), block, z);
    u.noalias() = z * w1;
    u.rowwise() += c1;
    u = u.unaryExpr([](S t) { return t > 0 ? t : static_cast<S>(kLeakySlope) * t; });
    y.noalias() = u * w2;
    y.rowwise() += c2;
    for (int h = 0; h < H_; ++h)
      for (int j = 0; j < m; ++j) scores[h][offset + j] += bias[h * block + offset + j] + y(j, h);
  }
}

template <typename S>
void Dape<S>::BeginBackward(int tasks) {
  base_->BeginBackward(tasks);
  LEXP_CHECK(tasks % H_ == 0, "dape: backward tasks are sequences times heads");
  sequences_ = tasks / H_;
  slots_.assign(static_cast<size_t>(sequences_) * SlotSize(), 0.0);
}

// Backward at each (i, j), with u the hidden pre-activation and g = LeakyReLU(u):
//   dL/dz = W1 (LeakyReLU'(u) * W2 dL/da),  dL/dx_h = dL/da_h + dL/dz_h,
//   dL/db_h = dL/da_h + dL/dz_{H+h} (sent into the base),  dW2 += g dL/da^T,  dW1 += z du^T.
template <typename S>
void Dape<S>::MixHeadsBackward(const AttentionContext* heads, int i0, int i1, int j0, int j1,
                               const HeadQK<S>* qk, const S* const* scores, S* const* d_scores,
                               long lds, const HeadQKGrad<S>* grad, int sequence) {
  const int n = i1 - i0, m = j1 - j0, layer = heads[0].layer;
  if (m <= 0) return;
  slot_layer_.store(layer);
  std::vector<S> bias;
  Biases(heads, i0, i1, j0, j1, qk, lds, bias);
  const long block = static_cast<long>(n) * lds;
  std::vector<S> d_bias(bias.size(), S(0));
  Eigen::Map<const Mat<S>> w1(w1_.data() + static_cast<long>(layer) * 2 * H_ * W_, 2 * H_, W_);
  Eigen::Map<const Mat<S>> w2(w2_.data() + static_cast<long>(layer) * W_ * H_, W_, H_);
  const auto c1 = c1_.row(layer);
  Mat<S> z, u(m, W_), g(m, W_), dy(m, H_), du(m, W_), dz(m, 2 * H_);
  Mat<S> dw1 = Mat<S>::Zero(2 * H_, W_), dw2 = Mat<S>::Zero(W_, H_);
  RowVec<S> dc1 = RowVec<S>::Zero(W_), dc2 = RowVec<S>::Zero(H_);
  const S slope = static_cast<S>(kLeakySlope);
  for (int r = 0; r < n; ++r) {
    const long offset = static_cast<long>(r) * lds;
    GatherInputs(H_, m, offset, scores, bias.data(), block, z);
    u.noalias() = z * w1;
    u.rowwise() += c1;
    g = u.unaryExpr([slope](S t) { return t > 0 ? t : slope * t; });
    for (int j = 0; j < m; ++j)
      for (int h = 0; h < H_; ++h) dy(j, h) = d_scores[h][offset + j];
    dw2.noalias() += g.transpose() * dy;
    dc2 += dy.colwise().sum();
    du.noalias() = dy * w2.transpose();
    du = du.cwiseProduct(u.unaryExpr([slope](S t) { return t > 0 ? S(1) : slope; }));
    dw1.noalias() += z.transpose() * du;
    dc1 += du.colwise().sum();
    dz.noalias() = du * w1.transpose();
    for (int h = 0; h < H_; ++h)
      for (int j = 0; j < m; ++j) {
        d_scores[h][offset + j] = dy(j, h) + dz(j, h);
        d_bias[h * block + offset + j] = dy(j, h) + dz(j, H_ + h);
      }
  }
  double* slot = slots_.data() + static_cast<long>(sequence) * SlotSize();
  for (long e = 0; e < dw1.size(); ++e) *slot++ += dw1.data()[e];
  for (long e = 0; e < dc1.size(); ++e) *slot++ += dc1.data()[e];
  for (long e = 0; e < dw2.size(); ++e) *slot++ += dw2.data()[e];
  for (long e = 0; e < dc2.size(); ++e) *slot++ += dc2.data()[e];
  for (int h = 0; h < H_; ++h)
    base_->LogitTermBackward(heads[h], i0, i1, j0, j1, qk[h], d_bias.data() + h * block, lds,
                             grad[h], sequence * H_ + h);
}

template <typename S>
void Dape<S>::EndBackward() {
  base_->EndBackward();
  const int layer = slot_layer_.load();
  S* w1 = dw1_.data() + static_cast<long>(layer) * 2 * H_ * W_;
  S* c1 = dc1_.data() + static_cast<long>(layer) * W_;
  S* w2 = dw2_.data() + static_cast<long>(layer) * W_ * H_;
  S* c2 = dc2_.data() + static_cast<long>(layer) * H_;
  const long n1 = 2L * H_ * W_, n2 = static_cast<long>(W_) * H_;
  for (int s = 0; s < sequences_; ++s) {
    const double* slot = slots_.data() + static_cast<long>(s) * SlotSize();
    for (long e = 0; e < n1; ++e) w1[e] += static_cast<S>(*slot++);
    for (long e = 0; e < W_; ++e) c1[e] += static_cast<S>(*slot++);
    for (long e = 0; e < n2; ++e) w2[e] += static_cast<S>(*slot++);
    for (long e = 0; e < H_; ++e) c2[e] += static_cast<S>(*slot++);
  }
}

template class Dape<float>;
template class Dape<double>;

}  // namespace lexp
