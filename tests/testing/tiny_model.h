// A tiny model in double and a random masked batch for it, shared by the tests that check a
// model's gradients against finite differences of some loss (tests/nn/*_test.cc).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "nn/model/transformer.h"
#include "nn/ops/cross_entropy.h"

namespace lexp::testing {

// Vocabulary 7, width 8, 2 heads, 2 layers, MLP 12.
inline ModelConfig TinyModelConfig() {
  ModelConfig cfg;
  cfg.vocab = 7;
  cfg.d_model = 8;
  cfg.n_heads = 2;
  cfg.n_layers = 2;
  cfg.d_ff = 12;
  return cfg;
}

// B sequences of T random tokens and targets, a loss mask dropping every `skip`-th row (at offset
// `at`), and identity positions.
struct TinyBatch {
  int B = 0, T = 0;
  std::vector<int> tokens, targets;
  std::vector<uint8_t> mask;
  std::vector<double> pos;
};

inline TinyBatch MakeTinyBatch(int B, int T, int vocab, Rng& rng, int skip = 3, int at = 0) {
  TinyBatch b;
  b.B = B;
  b.T = T;
  for (int i = 0; i < B * T; ++i) {
    b.tokens.push_back(static_cast<int>(rng.UniformInt(0, vocab - 1)));
    b.targets.push_back(static_cast<int>(rng.UniformInt(0, vocab - 1)));
    b.mask.push_back(i % skip != at);
  }
  b.pos.resize(T);
  std::iota(b.pos.begin(), b.pos.end(), 0.0);
  return b;
}

// Moves every gain, bias and other named vector off its initial value (0 or 1), so that checks
// see them in general position.
inline void PerturbVectors(Transformer<double>& model, Rng& rng, double sd,
                           const std::string& also = "") {
  for (auto& p : model.Parameters())
    if (p.name.find(".b") != std::string::npos || p.name.find(".g") != std::string::npos ||
        (!also.empty() && p.name.find(also) != std::string::npos))
      for (long i = 0; i < p.size; ++i) p.value[i] += sd * rng.Normal();
}

// The masked mean cross-entropy of one forward pass.
inline double TinyLoss(Transformer<double>& model, const TinyBatch& b, bool training) {
  MatD z;
  model.Forward(b.tokens, b.B, b.T, b.pos, training, false, z);
  return CrossEntropyForwardBackward<double>(z, b.targets, b.mask, nullptr, nullptr, nullptr)
      .MeanLoss();
}

// ZeroGrad, a training forward pass and Backward: the gradients are then in model.Parameters().
// Returns the loss.
inline double TinyGradients(Transformer<double>& model, const TinyBatch& b) {
  MatD logits, d_logits;
  model.ZeroGrad();
  model.Forward(b.tokens, b.B, b.T, b.pos, true, false, logits);
  const double loss =
      CrossEntropyForwardBackward<double>(logits, b.targets, b.mask, &d_logits, nullptr, nullptr)
          .MeanLoss();
  model.Backward(b.tokens, d_logits);
  return loss;
}

// The largest gap between the analytic gradient of the parameters named `prefix...` and the
// central differences of `loss`: large when `loss` is not the function the gradients are of.
inline double LargestGapToFiniteDifferences(const std::vector<ParamRef<double>>& params,
                                            const std::string& prefix,
                                            const std::function<double()>& loss) {
  double largest = 0;
  for (const auto& p : params) {
    if (p.name.rfind(prefix, 0) != 0) continue;
    for (long i = 0; i < p.size; ++i) {
      const double keep = p.value[i], h = 1e-6;
      p.value[i] = keep + h;
      const double up = loss();
      p.value[i] = keep - h;
      const double down = loss();
      p.value[i] = keep;
      largest = std::max(largest, std::abs((up - down) / (2 * h) - p.grad[i]));
    }
  }
  return largest;
}

}  // namespace lexp::testing
