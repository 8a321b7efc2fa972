// Character-level language modelling of natural text, from one of three corpora that Debian ships
// (found and read when the task is made, not shipped with lexp; a missing one is an input error
// naming its package), chosen by task.corpus:
//   fortunes  the fortune files of `fortunes` (/usr/share/games/fortunes: quotations, jokes,
//             literature and poems, one per record between lines holding only "%"; records of a
//             few hundred characters, joined into one stream). Every tenth record is held out.
//             LEXP_TEXT_CORPUS names another directory of files in that format.
//   kjv       the King James Bible of `bible-kjv` (read through its `bible` program, as it prints
//             it: chapter headings and numbered verses), one document per book (66, 1.5k to 290k
//             characters); every tenth book held out.
//   python    the Python standard library's sources of `libpython3.X-stdlib` (/usr/lib/python3.X,
//             tests and installed packages left out), one document per file (about 640, up to 230k
//             characters); every tenth file held out. Code: long-range structure (names defined
//             far back), as in the long-context literature's code corpora.
// With documents (kjv, python), a sample never crosses a document's end: a sample of length n is n
// consecutive characters of one document at least n long, its offset uniform over every position
// of those documents where it fits; held-out documents are whole documents training never sees.
//
// Characters: the 95 printable ASCII characters and the newline, 96 symbols (a tab is a space, any
// other byte a '?'). Every character is scored (decoder layout only). The entropy rate of text is
// unknown (NaN).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "experiments/tasks/task.h"

namespace lexp {

class TextLmTask final : public Task {
 public:
  static constexpr int kVocab = 96;
  // The corpora, in the order `lexp list` gives them; "" is fortunes.
  static const std::vector<std::string>& Corpora();
  // The training part (held_out = false) or the held-out part of the corpus.
  explicit TextLmTask(const std::string& corpus = "fortunes", bool held_out = false);
  std::string Name() const override { return "text_lm"; }
  bool HasAnswer() const override { return false; }
  bool Stationary() const override { return true; }
  int InputAlphabet() const override { return kVocab; }
  int OutputAlphabet() const override { return kVocab; }
  bool SharedAlphabet() const override { return true; }
  bool SupportsEncoder() const override { return false; }
  // The longest sample: the stream's length (fortunes) or the longest document's.
  int MaxLength() const override;
  Example Sample(int n, Rng& rng) const override;
  std::unique_ptr<Task> HeldOut() const override;

  // For tests and messages: the part's documents as symbols (fortunes: one, the stream), and where
  // the fortunes are read.
  const std::vector<std::vector<int>>& Documents() const { return *documents_; }
  static std::string CorpusDirectory();
  // A character's symbol, and back.
  static int Symbol(unsigned char c);
  static char Character(int symbol);

 private:
  std::string corpus_;
  bool held_out_;
  std::shared_ptr<const std::vector<std::vector<int>>> documents_;
};

}  // namespace lexp
