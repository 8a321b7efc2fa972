// Attention patterns (the mask/pattern site of nn/position_hooks.h), combinable with any encoding
// that reads distances through AttentionContext::Distance (formulas.md section 5, index sets 8.15):
//  * sliding_window(w): query i sees keys i-w+1..i.
//  * bca(l): blockwise causal attention of the xPos paper (Sun et al. 2022, arXiv:2212.10554):
//  queries
//    in half-blocks of l/2 see the previous half-block and their own, so distances stay <= l-1.
//  * lambda(n_global, n_local, limit): LM-Infinite (Han et al. 2023, arXiv:2308.16137): key j is
//    visible iff j < n_global or i - j < n_local; global keys outside the local window are seen at
//    distance `limit` (a global key inside the window keeps its true distance, pitfall 22).
// Patterns are causal. lambda changes distances, which a q/k rotation cannot express per key (the
// reference rotates the query a second time); with rotary encodings it is refused, not
// approximated.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/position_hooks.h"

namespace lexp {

struct PatternConfig {
  std::string name = "full";  // full | sliding_window | bca | lambda
  int window = 0;             // sliding_window w, bca l, lambda n_local
  int global = 0;             // lambda n_global
  int limit = 0;              // lambda distance cap (0 = window)
};

const std::vector<std::string>& PatternNames();

// nullptr for "full" (the model's own causal or bidirectional mask).
std::unique_ptr<AttentionPattern> CreatePattern(const PatternConfig& c);

class SlidingWindowPattern final : public AttentionPattern {
 public:
  explicit SlidingWindowPattern(int w) : AttentionPattern(true), w_(w) {}
  std::string Name() const override { return "sliding_window"; }
  void KeyBounds(int i, int, int* b, int* e) const override {
    *b = std::max(0, i - w_ + 1);
    *e = i + 1;
  }

 private:
  int w_;
};

class BlockwiseCausalPattern final : public AttentionPattern {
 public:
  explicit BlockwiseCausalPattern(int l) : AttentionPattern(true), half_(l / 2) {}
  std::string Name() const override { return "bca"; }
  void KeyBounds(int i, int, int* b, int* e) const override {
    const int chunk = i / half_;
    *b = std::max(0, (chunk - 1) * half_);
    *e = i + 1;
  }

 private:
  int half_;
};

class LambdaPattern final : public AttentionPattern {
 public:
  LambdaPattern(int n_global, int n_local, int limit)
      : AttentionPattern(true), global_(n_global), local_(n_local), limit_(limit) {}
  std::string Name() const override { return "lambda"; }
  void KeyBounds(int i, int, int* b, int* e) const override {
    *b = 0;
    *e = i + 1;
  }
  bool Contiguous() const override { return false; }
  bool Visible(int i, int j, int) const override { return j < global_ || i - j < local_; }
  double EffectiveDistance(int i, int j, const double* pos) const override {
    return i - j < local_ ? pos[i] - pos[j] : static_cast<double>(limit_);
  }
  bool PlainDistance() const override { return false; }

 private:
  int global_, local_, limit_;
};

}  // namespace lexp
