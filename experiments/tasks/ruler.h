// RULER's synthetic tasks (Hsieh et al. 2024, "RULER: What's the Real Context Size of Your
// Long-Context Language Models?", arXiv:2404.06654; NVIDIA/RULER scripts/data/synthetic) in token
// form, for models trained from scratch: retrieval (needle in a haystack: single, multi-key,
// multi-value, multi-query), multi-hop tracing (variable tracking) and aggregation (common and
// frequent words). n is the haystack's length in tokens (the words' list for the aggregation
// tasks); the answer follows QUERY and is scored whole (exact match per sequence, token accuracy
// per needle value or word).
//
// Needle tasks: filler symbols 0..15 (haystack "noise": uniform; "repeat": filler 0 repeated, the
// token form of RULER's repeated sentences), keys 16..31, value digits 32..41, NEEDLE 42, QUERY 43.
// A needle is "NEEDLE key d1 d2 d3 d4" (RULER's "One of the special magic numbers for {key} is:
// {value}", values of 4 digits here, 7 there), inserted between haystack tokens; the input ends
// with QUERY and the queried key(s); the answer is the value digits (output symbols 0..9).
//   niah_single_noise / niah_single_repeat  one needle, at round(depth n)
//   niah_multikey    4 needles of distinct keys, one queried (at the depth), 3 distractors
//                    (the multi tasks' 4 is task.needles)
//   niah_multivalue  4 needles of one key with distinct values, all asked for in order of appearance
//   niah_multiquery  4 needles of distinct keys, all queried (in a random order), the first queried
//                    one at the depth
// Other needles sit at uniform insertion points. RULER's defaults: 4 keys / values / queries
// (niah_multikey_1, niah_multivalue, niah_multiquery of its synthetic.yaml).
//
// variable_tracking: noise filler 0..15, variables 16..31, values 32..41, ASSIGN 42, QUERY 43. A
// chain "ASSIGN x1 v", "ASSIGN x2 x1", ..., of 4 hops (5 variables, RULER's vt default; task.hops) and a
// distractor chain of 4 hops from another value (RULER's default has one chain; in token form a
// single chain's answer would be every variable in the input), statements in chain order at
// uniform insertion points, interleaved; QUERY v asks for the variables holding v, answered in
// chain order (output symbols: the 16 variables).
//
// common_words (RULER cwe) and frequent_words (RULER fwe) over 64 words (symbols 0..63, QUERY 64):
//   common_words    the n-token list holds n uncommon words (each word of the other 60 at most
//                   ceil(n / 60) times, balanced) and 4 common words 2 + n / 8 times each,
//                   shuffled; the answer is the 4 common words in increasing symbol order (RULER
//                   asks for the 10 most common; scored by recall, not order)
//   frequent_words  word r of a random ranking appears floor(C / r^2) times (Zipf, alpha = 2, as
//                   RULER's fwe), C = 18 + n, shuffled; the answer is the 3 most frequent words,
//                   most frequent first (counts strictly decrease over the top 4)
// Aggregation tasks have no depth.
#pragma once

#include <string>

#include "experiments/tasks/task.h"

namespace lexp {

class NeedleTask final : public Task {
 public:
  enum class Kind { kSingle, kMultiKey, kMultiValue, kMultiQuery };
  static constexpr int kFiller = 16, kKeys = 16, kValueDigits = 4, kNeedles = 4;
  static constexpr int kKeyBase = 16, kDigitBase = 32, kNeedle = 42, kQuery = 43;
  // needles: of the multi tasks (task.needles; 0 = kNeedles, RULER's 4), 2..16 (distinct keys).
  NeedleTask(std::string name, Kind kind, bool repeat_haystack, int needles = 0);
  std::string Name() const override { return name_; }
  int InputAlphabet() const override { return kQuery + 1; }
  int OutputAlphabet() const override { return 10; }
  bool HasDepth() const override { return true; }
  int QueryTokens() const override { return 1 + Queried(); }
  int MinLength() const override { return 0; }
  Example Sample(int n, Rng& rng) const override;
  Example SampleAtDepth(int n, double depth, Rng& rng) const override;
  int Needles() const { return kind_ == Kind::kSingle ? 1 : needles_; }
  int Queried() const { return kind_ == Kind::kMultiQuery ? needles_ : 1; }

 private:
  Example Build(int n, int target_at, Rng& rng) const;
  std::string name_;
  Kind kind_;
  bool repeat_;
  int needles_;
};

class VariableTrackingTask final : public Task {
 public:
  static constexpr int kFiller = 16, kVariables = 16, kValues = 10, kHops = 4;
  static constexpr int kVarBase = 16, kValueBase = 32, kAssign = 42, kQuery = 43;
  // hops: of each chain (task.hops; 0 = kHops, RULER's 4), 1..7 (two chains of distinct variables).
  explicit VariableTrackingTask(int hops = 0);
  std::string Name() const override { return "variable_tracking"; }
  int InputAlphabet() const override { return kQuery + 1; }
  int OutputAlphabet() const override { return kVariables; }
  int QueryTokens() const override { return 2; }
  int MinLength() const override { return 0; }
  Example Sample(int n, Rng& rng) const override;
  int Hops() const { return hops_; }

 private:
  int hops_;
};

class WordCountTask final : public Task {
 public:
  static constexpr int kWords = 64, kQuery = 64, kCommon = 4, kFrequent = 3;
  explicit WordCountTask(bool frequent) : frequent_(frequent) {}
  std::string Name() const override { return frequent_ ? "frequent_words" : "common_words"; }
  int InputAlphabet() const override { return kWords + 1; }
  int OutputAlphabet() const override { return kWords; }
  int QueryTokens() const override { return 1; }
  int MinLength() const override { return 0; }
  Example Sample(int n, Rng& rng) const override;

 private:
  bool frequent_;
};

}  // namespace lexp
