// Passkey retrieval as language modelling (the protocol of LongLoRA, Chen et al. 2023,
// arXiv:2309.12307, sec. 4: fine-tuned on text by next-token prediction, evaluated by passkey
// retrieval): the passkey of passkey.h hidden in a text-like haystack, and the whole sequence is
// the output, every token trained on (a language model of the document) and only the answer
// graded. The haystack is n tokens of one chain of markov_lm.h's source (V symbols, default 32),
// so modelling it takes context; "KEY d1 d2 d3 d4 d5" is inserted after round(depth n) of them,
// then QUERY and the five digits of K ~ U{1..50000} (zero-padded). Symbols (one alphabet, input
// empty, decoder layout only): haystack 0..V-1, digits V..V+9, KEY V+10, QUERY V+11; a sequence of
// task length n has n + 12 tokens with the separator (passkey's has n + 13, its end token
// included), its positions those of passkey's but the last. Evaluation grades the five
// answer digits (teacher-forced, so an exact match is what greedy decoding would write; no end
// token); the key's own digits are unpredictable and trained on like any token, as a passkey in a
// document is. passkey_lm_no_query, of the same family, is the document without the question:
// the key is inserted as above, and the last six tokens continue the haystack instead of QUERY and
// the answer, so nothing rewards retrieving the key (or guessing it); every token is graded. A
// model fine-tuned on it and evaluated on passkey_lm (lexp eval --set task.name=passkey_lm) asks
// whether retrieval survives fine-tuning that never asks for it, as LongLoRA's text does not.
// passkey_lm_text, also of the family, is passkey_lm's document (question and answer included)
// with only the haystack's tokens graded: the language modelling of the text around the key, on
// the sequences the retrieval is scored on (a model's perplexity beside its retrieval, RULER's
// effective context: Hsieh et al. 2024, arXiv:2404.06654).
#pragma once

#include "experiments/tasks/markov_lm.h"
#include "experiments/tasks/task.h"

namespace lexp {

class PasskeyLmTask final : public Task {
 public:
  static constexpr int kDigits = 5;
  // What a sequence holds and what is graded.
  enum class Grading {
    kAnswer,   // passkey_lm: the question and its answer end the sequence, the answer graded
    kNoQuery,  // passkey_lm_no_query: no question, every token graded
    kText,     // passkey_lm_text: passkey_lm's sequence, only the haystack's tokens graded
  };
  PasskeyLmTask(int vocab, Grading grading)
      : haystack_(vocab), asked_(grading != Grading::kNoQuery), grading_(grading) {}
  std::string Name() const override {
    return grading_ == Grading::kAnswer    ? "passkey_lm"
           : grading_ == Grading::kNoQuery ? "passkey_lm_no_query"
                                           : "passkey_lm_text";
  }
  std::string Family() const override { return "passkey_lm"; }
  int InputAlphabet() const override { return Query() + 1; }
  int OutputAlphabet() const override { return Query() + 1; }
  bool SharedAlphabet() const override { return true; }
  bool SupportsEncoder() const override { return false; }
  bool HasAnswer() const override { return false; }
  bool HasDepth() const override { return true; }
  int MinLength() const override { return 0; }
  Example Sample(int n, Rng& rng) const override;
  Example SampleAtDepth(int n, double depth, Rng& rng) const override;

  int Haystack() const { return haystack_.InputAlphabet(); }  // V: haystack symbols 0..V-1
  int Digit(int d) const { return Haystack() + d; }
  int Key() const { return Haystack() + 10; }
  int Query() const { return Haystack() + 11; }

 private:
  Example Build(int n, int prefix, Rng& rng) const;
  MarkovLmTask haystack_;
  bool asked_;
  Grading grading_;
};

}  // namespace lexp
