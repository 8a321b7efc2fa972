// LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models", arXiv:2106.09685):
// a frozen weight W0 [in, out] is fine-tuned through a low-rank update,
//
//   W = W0 + (alpha / r) A B,   A [in, r], B [r, out],
//
// with A drawn as the reference code does (uniform in +-1/sqrt(in), its Kaiming-uniform with
// a = sqrt(5)) and B = 0, so training starts from W0 exactly. Here the update is merged into the
// model's weight before every forward pass (Merge), so every path of the model (training,
// streaming evaluation, incremental decoding) runs the adapted weight unchanged; the gradient the
// model leaves on W gives the adapters' (Backward):
//
//   dL/dA = (alpha / r) dL/dW B^T,   dL/dB = (alpha / r) A^T dL/dW,
//
// and W0 itself is never updated. A target may be a block of columns of a fused weight (q, k or v
// of the attention's [C, 3C] projection).
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "nn/rng.h"
#include "nn/tensor.h"

namespace lexp {

template <typename S>
struct LoraTarget {
  std::string name;  // "layer0.attn.q": the adapters are <name>.lora_A and <name>.lora_B
  S* weight;         // the model's weight, row-major [rows, cols]
  S* grad;           // its gradient, the same layout
  long rows, cols;   // of the whole weight
  long col0, width;  // the columns adapted
};

template <typename S>
class LoraAdapters {
 public:
  LoraAdapters(std::vector<LoraTarget<S>> targets, int rank, double alpha, Rng& rng)
      : targets_(std::move(targets)), rank_(rank), scale_(alpha / rank) {
    LEXP_CHECK(rank > 0, "lora: rank must be positive");
    for (const auto& t : targets_) {
      LEXP_CHECK(t.col0 >= 0 && t.width > 0 && t.col0 + t.width <= t.cols, "lora: bad columns");
      Adapter a;
      a.w0.resize(t.rows, t.width);
      for (long i = 0; i < t.rows; ++i)
        for (long j = 0; j < t.width; ++j) a.w0(i, j) = t.weight[i * t.cols + t.col0 + j];
      const double bound = 1.0 / std::sqrt(static_cast<double>(t.rows));
      a.A.resize(t.rows, rank);
      for (long i = 0; i < a.A.size(); ++i)
        a.A.data()[i] = static_cast<S>(rng.Uniform(-bound, bound));
      a.B.setZero(rank, t.width);
      a.dA.setZero(t.rows, rank);
      a.dB.setZero(rank, t.width);
      adapters_.push_back(std::move(a));
    }
  }

  // W = W0 + (alpha / r) A B on every target.
  void Merge() {
    for (size_t k = 0; k < targets_.size(); ++k) {
      const auto& t = targets_[k];
      Adapter& a = adapters_[k];
      delta_.noalias() = a.A * a.B;
      for (long i = 0; i < t.rows; ++i)
        for (long j = 0; j < t.width; ++j)
          t.weight[i * t.cols + t.col0 + j] = a.w0(i, j) + static_cast<S>(scale_) * delta_(i, j);
    }
  }

  // Accumulates dA, dB from the gradient the model left on each target's weight.
  void Backward() {
    for (size_t k = 0; k < targets_.size(); ++k) {
      const auto& t = targets_[k];
      Adapter& a = adapters_[k];
      g_.resize(t.rows, t.width);
      for (long i = 0; i < t.rows; ++i)
        for (long j = 0; j < t.width; ++j) g_(i, j) = t.grad[i * t.cols + t.col0 + j];
      a.dA.noalias() += static_cast<S>(scale_) * (g_ * a.B.transpose());
      a.dB.noalias() += static_cast<S>(scale_) * (a.A.transpose() * g_);
    }
  }

  void ZeroGrad() {
    for (auto& a : adapters_) {
      a.dA.setZero();
      a.dB.setZero();
    }
  }

  // The adapters, the only tensors a LoRA fine-tuning trains.
  std::vector<ParamRef<S>> Parameters() {
    std::vector<ParamRef<S>> out;
    for (size_t k = 0; k < targets_.size(); ++k) {
      Adapter& a = adapters_[k];
      out.push_back({targets_[k].name + ".lora_A", a.A, a.dA, "in,rank"});
      out.push_back({targets_[k].name + ".lora_B", a.B, a.dB, "rank,out"});
    }
    return out;
  }
  int rank() const { return rank_; }
  double scale() const { return scale_; }

 private:
  struct Adapter {
    Mat<S> w0, A, B, dA, dB;
  };
  std::vector<LoraTarget<S>> targets_;
  std::vector<Adapter> adapters_;
  int rank_;
  double scale_;
  Mat<S> delta_, g_;
};

// The targets of a transformer's parameters (Transformer::Parameters names): for every layer, "q",
// "k", "v" (column blocks of layer<l>.attn.qkv.w), "o" (layer<l>.attn.proj.w) and "mlp"
// (layer<l>.mlp.fc1.w and fc2.w). Unknown kinds are an input error naming the allowed ones.
template <typename S>
std::vector<LoraTarget<S>> LoraTargetsOf(const std::vector<ParamRef<S>>& params,
                                         const std::vector<std::string>& kinds) {
  auto find = [&](const std::string& name) -> const ParamRef<S>* {
    for (const auto& p : params)
      if (p.name == name) return &p;
    return nullptr;
  };
  std::vector<LoraTarget<S>> out;
  for (int l = 0;; ++l) {
    const std::string layer = "layer" + std::to_string(l) + ".";
    const ParamRef<S>* qkv = find(layer + "attn.qkv.w");
    if (qkv == nullptr) break;
    auto whole = [&](const std::string& name, const std::string& param) {
      const ParamRef<S>* p = find(layer + param);
      LEXP_CHECK(p != nullptr && p->shape.size() == 2, "lora: no matrix " + layer + param);
      const long rows = static_cast<long>(p->shape[0]), cols = static_cast<long>(p->shape[1]);
      out.push_back({layer + name, p->value, p->grad, rows, cols, 0, cols});
    };
    const long rows = static_cast<long>(qkv->shape[0]), cols = static_cast<long>(qkv->shape[1]);
    for (const std::string& kind : kinds) {
      if (kind == "q" || kind == "k" || kind == "v") {
        const long c = cols / 3, at = kind == "q" ? 0 : kind == "k" ? c : 2 * c;
        out.push_back({layer + "attn." + kind, qkv->value, qkv->grad, rows, cols, at, c});
      } else if (kind == "o") {
        whole("attn.o", "attn.proj.w");
      } else if (kind == "mlp") {
        whole("mlp.fc1", "mlp.fc1.w");
        whole("mlp.fc2", "mlp.fc2.w");
      } else {
        FailInput("lora target '" + kind + "': allowed q, k, v, o, mlp");
      }
    }
  }
  return out;
}

}  // namespace lexp
