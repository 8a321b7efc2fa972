// Character-level language modelling of natural text: the fortune files of Debian's `fortunes`
// package (/usr/share/games/fortunes: quotations, jokes, literature and poems, one per record
// between lines holding only "%"), found and read when the task is made, not shipped with lexp.
// The directory can be changed with the environment variable LEXP_TEXT_CORPUS (a directory of
// plain-text files in the same format); a missing corpus is an input error naming the package.
//
// Characters: the 95 printable ASCII characters and the newline, 96 symbols (a tab is a space, any
// other byte a '?'). Records keep their files' order (a file is one theme, so neighbouring records
// are related) and are joined by a newline into two streams: every tenth record (the 10th, 20th,
// ...) is held out for evaluation (Task::HeldOut), the others are the training stream. A sample of
// length n is n consecutive characters from a uniform offset of its stream; every character is
// scored (decoder layout only). The entropy rate of text is unknown (NaN).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "experiments/tasks/task.h"

namespace lexp {

class TextLmTask final : public Task {
 public:
  static constexpr int kVocab = 96;
  // The training stream (held_out = false) or the evaluation stream of the corpus directory
  // (LEXP_TEXT_CORPUS, else the fortunes package's).
  explicit TextLmTask(bool held_out = false);
  std::string Name() const override { return "text_lm"; }
  bool HasAnswer() const override { return false; }
  bool Stationary() const override { return true; }
  int InputAlphabet() const override { return kVocab; }
  int OutputAlphabet() const override { return kVocab; }
  bool SharedAlphabet() const override { return true; }
  bool SupportsEncoder() const override { return false; }
  int MaxLength() const override;
  Example Sample(int n, Rng& rng) const override;
  std::unique_ptr<Task> HeldOut() const override;

  // For tests and messages: the stream's characters as symbols, and where the corpus was read.
  const std::vector<int>& Stream() const { return *stream_; }
  static std::string CorpusDirectory();
  // A character's symbol, and back.
  static int Symbol(unsigned char c);
  static char Character(int symbol);

 private:
  bool held_out_;
  std::shared_ptr<const std::vector<int>> stream_;
};

}  // namespace lexp
