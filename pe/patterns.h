// Attention patterns (the mask/pattern site of nn/position_hooks.h), combinable with any encoding
// that reads distances through AttentionContext::Distance (each with its paper below):
//  * sliding_window(w): query i sees keys i-w+1..i.
//  * bca(l): blockwise causal attention of the xPos paper (Sun et al. 2022, arXiv:2212.10554):
//    queries in half-blocks of l/2 see the previous half-block and their own, so distances stay
//    <= l-1.
//  * lambda(n_global, n_local, limit): LM-Infinite (Han et al. 2023, arXiv:2308.16137): key j is
//    visible iff j < n_global or i - j < n_local; global keys outside the local window are seen at
//    distance `limit` (a global key inside the window keeps its true distance, pitfall 22).
//  * dilated(segments w_a, dilations r_a): LongNet (Ding et al. 2023, arXiv:2307.02486,
//    torchscale's dilated_attention): for each (w_a, r_a) the sequence is cut into segments of
//    w_a; head h keeps the positions of its segment with offset (t - start) mod r_a = h mod r_a,
//    and a kept query attends causally to the kept keys of its segment. The outputs of the (w_a,
//    r_a) sets, merged with weights proportional to their softmax denominators, equal one softmax
//    over the union of the sets with a logit offset ln(number of sets holding the key), which is
//    how it is computed here. One dilation must be 1, so that every query sees a key.
//  * shifted_sparse(ratio): S2-Attn of LongLoRA (Chen et al. 2023, arXiv:2309.12307)
//    without the roll's wrap-around leak: groups of G = round(ratio T) tokens, causal inside a
//    group; the second half of the heads use groups shifted by G/2 (the first group is G/2 long).
//    A training-time pattern (pattern_when = "train").
//  * sinks(n_sink, window): StreamingLLM (Xiao et al. 2023, arXiv:2309.17453): the
//    cache keeps the first n_sink tokens and the last `window`; positions are reassigned inside the
//    cache, so once tokens are evicted a sink key j is seen at distance n_sink + window - 1 - j and
//    a recent key at i - j.
//  * recurrence(S, M): Transformer-XL's segment recurrence (Dai et al. 2019, arXiv:1901.02860): the
//    sequence is cut into segments of S tokens, and a query of segment s sees its segment's keys up
//    to itself and the M keys before the segment (the cached memory), j in [sS - M, i]. In one pass
//    this is exactly Transformer-XL's segment-by-segment forward: a memory state was computed from
//    the keys its own query saw, which is what the cache held. The memory keys are read without a
//    gradient into their states (AttentionPattern::MemoryEnd), Transformer-XL's stop-gradient.
//    bca(l) is recurrence(l/2, l/2) without the stop-gradient.
//  * anchor(W): AnchorAttention (Wang et al. 2024, arXiv:2411.13476; AnchorContext's
//    add_anchor_token_to_inputs and generate_doc_mask_mod): the sequence is the anchor (token 0)
//    followed by packed documents of W tokens; a query sees the anchor and its own document up to
//    itself, and position ids run on across documents (no reset), so the anchor keeps position 0.
// Patterns are causal. lambda and sinks change distances per key: logit-term encodings read them
// through AttentionContext::Distance, and rope recomputes the logit of each remapped key at its
// distance (pe/rope.h); other q/k transforms (xpos) are refused, not approximated.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "nn/position_hooks.h"

namespace lexp {

struct PatternConfig {
  std::string name =
      "full";  // full | sliding_window | bca | lambda | dilated | shifted_sparse | sinks | recurrence
               // | self_extend | string
  int window = 0;  // sliding_window w, bca l, lambda n_local, sinks recent window, recurrence S
  int memory = 0;  // recurrence M (0 = S)
  int global = 0;  // lambda n_global, sinks n_sink
  int limit = 0;   // lambda distance cap (0 = window)
  int group = 0;   // self_extend group size G
  int shift = 0;   // string shift S
  int heads = 1;   // heads of the model (dilated, shifted_sparse split them)
  std::vector<int> segments;   // dilated w_a
  std::vector<int> dilations;  // dilated r_a
  double ratio = 0.25;         // shifted_sparse group size / sequence length
};

// Patterns that change the distance at which some keys are seen.
bool PatternRemapsDistances(const std::string& name);

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

class RecurrencePattern final : public AttentionPattern {
 public:
  RecurrencePattern(int segment, int memory)
      : AttentionPattern(true), segment_(segment), memory_(memory) {}
  std::string Name() const override { return "recurrence"; }
  void KeyBounds(int i, int, int* b, int* e) const override {
    *b = std::max(0, MemoryEnd(i) - memory_);
    *e = i + 1;
  }
  bool HasMemory() const override { return true; }
  int MemoryEnd(int i) const override { return (i / segment_) * segment_; }
  int segment() const { return segment_; }
  int memory() const { return memory_; }

 private:
  int segment_, memory_;
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
  double MaxDistance(double span) const override {
    return std::max(span, static_cast<double>(limit_));
  }

 private:
  int global_, local_, limit_;
};

class AnchorPattern final : public AttentionPattern {
 public:
  explicit AnchorPattern(int document) : AttentionPattern(true), document_(document) {}
  std::string Name() const override { return "anchor"; }
  void KeyBounds(int i, int, int* b, int* e) const override {
    *b = 0;
    *e = i + 1;
  }
  bool Contiguous() const override { return false; }
  // Token 0 is the anchor; document k holds tokens [1 + kW, 1 + (k+1)W).
  int DocumentStart(int i) const { return i == 0 ? 0 : 1 + (i - 1) / document_ * document_; }
  bool Visible(int i, int j, int) const override {
    return j == 0 || (j >= DocumentStart(i) && j <= i);
  }

 private:
  int document_;
};

// One head's LongNet key sets.
class DilatedHeadPattern final : public AttentionPattern {
 public:
  DilatedHeadPattern(std::vector<int> segments, std::vector<int> dilations, int head)
      : AttentionPattern(true), w_(std::move(segments)), r_(std::move(dilations)), head_(head) {}
  std::string Name() const override { return "dilated"; }
  // Keys from the start of the longest segment holding i.
  void KeyBounds(int i, int, int* b, int* e) const override;
  bool Contiguous() const override { return false; }
  bool Visible(int i, int j, int) const override { return Sets(i, j) > 0; }
  bool HasLogitOffset() const override { return true; }
  double LogitOffset(int i, int j, int) const override;
  // Number of (w_a, r_a) sets in which query i sees key j.
  int Sets(int i, int j) const;

 private:
  std::vector<int> w_, r_;
  int head_;
};

class DilatedPattern final : public AttentionPattern {
 public:
  DilatedPattern(const std::vector<int>& segments, const std::vector<int>& dilations, int heads);
  std::string Name() const override { return "dilated"; }
  const AttentionPattern& ForHead(int head, int) const override { return heads_[head]; }

 private:
  std::vector<DilatedHeadPattern> heads_;
};

class ShiftedGroupPattern final : public AttentionPattern {
 public:
  ShiftedGroupPattern(double ratio, bool shifted)
      : AttentionPattern(true), ratio_(ratio), shifted_(shifted) {}
  std::string Name() const override { return "shifted_sparse"; }
  bool DependsOnLength() const override { return true; }
  int GroupSize(int T) const { return std::max(1, static_cast<int>(std::lround(ratio_ * T))); }
  void KeyBounds(int i, int T, int* b, int* e) const override {
    const int G = GroupSize(T), half = G / 2;
    if (!shifted_ || half == 0)
      *b = (i / G) * G;
    else
      *b = i < half ? 0 : half + ((i - half) / G) * G;
    *e = i + 1;
  }

 private:
  double ratio_;
  bool shifted_;
};

class ShiftedSparsePattern final : public AttentionPattern {
 public:
  explicit ShiftedSparsePattern(double ratio)
      : AttentionPattern(true), plain_(ratio, false), shifted_(ratio, true) {}
  std::string Name() const override { return "shifted_sparse"; }
  bool DependsOnLength() const override { return true; }
  const AttentionPattern& ForHead(int head, int heads) const override {
    return head < heads / 2 ? static_cast<const AttentionPattern&>(plain_) : shifted_;
  }

 private:
  ShiftedGroupPattern plain_, shifted_;
};

// Self-Extend (Jin et al. 2024, arXiv:2401.01325; reference datamllab/LongLM): every key stays
// visible; keys closer than the neighbour window W keep their distance, the others are seen at the
// grouped distance of floored positions, (floor(p_i/G) + W - floor(W/G)) - floor(p_j/G), so a model
// sees no distance much beyond those it was trained on. An evaluation-time remap of a trained
// model (no fine-tuning); G = 1 leaves every distance as it is.
class SelfExtendPattern final : public AttentionPattern {
 public:
  SelfExtendPattern(int group, int window)
      : AttentionPattern(true), group_(group), window_(window) {}
  std::string Name() const override { return "self_extend"; }
  double EffectiveDistance(int i, int j, const double* pos) const override {
    if (i - j < window_) return pos[i] - pos[j];
    return GroupedDistance(pos[i], pos[j]);
  }
  double GroupedDistance(double p_i, double p_j) const {
    return std::floor(p_i / group_) + (window_ - window_ / group_) - std::floor(p_j / group_);
  }
  bool PlainDistance() const override { return false; }
  // A grouped distance exceeds its plain one by at most W - floor(W/G) + 1.
  double MaxDistance(double span) const override { return span + window_ + 1; }

 private:
  int group_, window_;
};

// STRING (An et al. 2024, "Why does the effective context length of LLMs fall short?",
// arXiv:2410.18745; reference HKUNLP/STRING): every key stays visible; a key S or more tokens away
// is seen at its distance shifted down by S - W, so the large distances a model rarely trained on
// are replaced by well-trained ones while the W nearest keys keep theirs:
//   d' = d            if d < S
//   d' = d - S + W    if d >= S      (d = p_i - p_j; the paper's S = L/3, W = 128 for L = 128k)
// An evaluation-time remap of a trained model (no fine-tuning); the largest distance a query sees
// drops by S - W. Deviations from the reference (string_for_llama.py): its two flash passes both
// hold the key at d = S (plain in the window pass, shifted in the other), lexp shows it once,
// shifted; its cos and sin carry a factor 0.1 ln 2 + 1 (logits x 1.14), which a pattern does not
// apply.
class StringPattern final : public AttentionPattern {
 public:
  StringPattern(int shift, int window) : AttentionPattern(true), shift_(shift), window_(window) {}
  std::string Name() const override { return "string"; }
  double EffectiveDistance(int i, int j, const double* pos) const override {
    const double d = pos[i] - pos[j];
    return d >= shift_ ? d - shift_ + window_ : d;
  }
  bool PlainDistance() const override { return false; }

 private:
  int shift_, window_;
};

class SinksPattern final : public AttentionPattern {
 public:
  SinksPattern(int n_sink, int window) : AttentionPattern(true), sinks_(n_sink), window_(window) {}
  std::string Name() const override { return "sinks"; }
  void KeyBounds(int i, int, int* b, int* e) const override {
    *b = 0;
    *e = i + 1;
  }
  bool Contiguous() const override { return false; }
  bool Visible(int i, int j, int) const override { return j < sinks_ || i - j < window_; }
  double EffectiveDistance(int i, int j, const double*) const override {
    const bool evicting = i >= sinks_ + window_;
    return evicting && j < sinks_ ? sinks_ + window_ - 1 - j : i - j;
  }
  bool PlainDistance() const override { return false; }
  // Distances are counted in cache slots, which may exceed the span of non-unit positions.
  double MaxDistance(double span) const override {
    return std::max(span, static_cast<double>(sinks_ + window_ - 1));
  }

 private:
  int sinks_, window_;
};

}  // namespace lexp
