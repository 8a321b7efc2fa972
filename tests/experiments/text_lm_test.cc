// Character-level natural text (experiments/tasks/text_lm.h) on a hand-made corpus in the fortune
// format: the symbols, every tenth record held out, samples as consecutive characters of their
// stream, evaluation reading the held-out stream, and the error that names the package; then the
// long-document corpora Debian ships (the King James Bible by book, the Python standard library by
// file): whole documents held out, samples within one document.
#include "experiments/tasks/text_lm.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "experiments/core/assembled_model.h"
#include "nn/check.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

// 40 records of 1200 characters over two files: record k (1-based, in file order) is the letter
// 'a' + k % 10 repeated, so the held-out records (k = 10, 20, ...) are all 'a' and training's
// never are. An index file (.dat) and a UTF-8 copy (.u8) beside them must be ignored.
class TextLm : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTempDir("text_lm");
    int k = 0;
    for (const char* name : {"one", "two"}) {
      std::ofstream f(dir_ / name);
      for (int r = 0; r < 20; ++r) {
        ++k;
        f << std::string(599, static_cast<char>('a' + k % 10)) << "\n"
          << std::string(599, static_cast<char>('a' + k % 10)) << "\n%\n";
      }
    }
    std::ofstream(dir_ / "one.dat") << "zzzz";
    std::ofstream(dir_ / "one.u8") << "zzzz";
    setenv("LEXP_TEXT_CORPUS", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("LEXP_TEXT_CORPUS");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(TextLm, CharactersAreNinetySixSymbols) {
  EXPECT_EQ(TextLmTask::Symbol(' '), 0);
  EXPECT_EQ(TextLmTask::Symbol('~'), 94);
  EXPECT_EQ(TextLmTask::Symbol('\n'), 95);
  EXPECT_EQ(TextLmTask::Symbol('\t'), TextLmTask::Symbol(' '));
  EXPECT_EQ(TextLmTask::Symbol(0xC3), TextLmTask::Symbol('?')) << "a UTF-8 byte";
  for (int s = 0; s < TextLmTask::kVocab; ++s)
    EXPECT_EQ(TextLmTask::Symbol(static_cast<unsigned char>(TextLmTask::Character(s))), s);
}

TEST_F(TextLm, EveryTenthRecordIsHeldOutAndSamplesAreConsecutiveCharacters) {
  const TextLmTask train;
  const auto held = train.HeldOut();
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->HeldOut(), nullptr);
  ASSERT_EQ(static_cast<const TextLmTask&>(*held).Documents().size(), 1u);
  const auto& held_stream = static_cast<const TextLmTask&>(*held).Documents()[0];
  const auto& stream = train.Documents()[0];
  const int a = TextLmTask::Symbol('a'), nl = TextLmTask::Symbol('\n');
  // 36 training records and 4 held out, each two lines of 599 characters, their newlines and the
  // join.
  EXPECT_EQ(stream.size(), 36u * 1201);
  EXPECT_EQ(held_stream.size(), 4u * 1201);
  for (const int s : held_stream) EXPECT_TRUE(s == a || s == nl);
  EXPECT_EQ(std::count(stream.begin(), stream.end(), a), 0)
      << "no held-out record in training";
  Rng rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    const Example e = train.Sample(500, rng);
    EXPECT_TRUE(e.input.empty());
    ASSERT_EQ(e.output.size(), 500u);
    EXPECT_EQ(e.output_scored, std::vector<uint8_t>(500, 1));
    EXPECT_NE(
        std::search(stream.begin(), stream.end(), e.output.begin(), e.output.end()),
        stream.end());
  }
  EXPECT_EQ(train.MaxLength(), 36 * 1201);
}

TEST_F(TextLm, EvaluationReadsTheHeldOutStream) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"task.name=text_lm", "task.vocab=0", "eval.lengths=8,16", "probe.lengths=8"});
  const AssembledModel m = AssembleModel(c, "alibi");
  ASSERT_NE(m.eval_layout, nullptr);
  Rng rng(1);
  const Batch eval = m.EvalLayout().MakeBatch(16, 4, rng, -1),
              train = m.layout->MakeBatch(16, 4, rng, -1);
  auto has_a = [&](const Batch& b) {
    return std::find(b.tokens.begin(), b.tokens.end(), TextLmTask::Symbol('a')) != b.tokens.end();
  };
  EXPECT_TRUE(has_a(eval));
  EXPECT_FALSE(has_a(train));
  // A synthetic task has no held-out part: evaluation samples the task itself.
  const AssembledModel copy = AssembleModel(testing::TinyCopyRecipe(), "alibi");
  EXPECT_EQ(copy.eval_layout, nullptr);
  EXPECT_EQ(&copy.EvalLayout(), copy.layout.get());
}

TEST_F(TextLm, AMissingCorpusNamesTheDebianPackage) {
  setenv("LEXP_TEXT_CORPUS", (dir_ / "nowhere").c_str(), 1);
  try {
    TextLmTask t;
    FAIL() << "no corpus, no task";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("package 'fortunes' (apt-get install fortunes)"),
              std::string::npos)
        << e.what();
  }
  fs::create_directories(dir_ / "small");
  std::ofstream(dir_ / "small" / "x") << "one record\n%\n";
  setenv("LEXP_TEXT_CORPUS", (dir_ / "small").c_str(), 1);
  EXPECT_THROW(TextLmTask(), InputError) << "too little text";
}

// A corpus of documents: every tenth held out whole, and a sample of length n is n consecutive
// characters of one document (never across an end).
void ExpectWholeDocumentsHeldOutAndSamplesWithinOne(const TextLmTask& train, int n) {
  const auto held_task = train.HeldOut();
  const auto& held = static_cast<const TextLmTask&>(*held_task).Documents();
  const auto& docs = train.Documents();
  EXPECT_EQ(held.size(), (docs.size() + held.size()) / 10);
  for (const auto& h : held)
    for (const auto& d : docs) EXPECT_NE(h, d) << "a held-out document also trains";
  Rng rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    const Example e = train.Sample(n, rng);
    ASSERT_EQ(e.output.size(), static_cast<size_t>(n));
    bool inside = false;
    for (const auto& d : docs)
      inside = inside || std::search(d.begin(), d.end(), e.output.begin(), e.output.end()) != d.end();
    EXPECT_TRUE(inside) << "sample " << trial << " crosses a document's end";
  }
  EXPECT_GE(static_cast<const TextLmTask&>(*held_task).MaxLength(), 4096)
      << "held-out documents longer than the longest evaluation";
}

std::string Text(const std::vector<int>& symbols, size_t n) {
  std::string t;
  for (size_t i = 0; i < std::min(n, symbols.size()); ++i) t += TextLmTask::Character(symbols[i]);
  return t;
}

TEST(TextLmCorpora, TheKingJamesBibleIsSixtySixBooksWithEveryTenthHeldOut) {
  ASSERT_EQ(std::system("command -v bible > /dev/null 2>&1"), 0)
      << "apt-get install bible-kjv (bash experiments/lexp.sh test installs it)";
  const TextLmTask train("kjv");
  ASSERT_EQ(train.Documents().size(), 60u);
  EXPECT_EQ(Text(train.Documents()[0], 10), "Genesis 1\n");
  const auto held = train.HeldOut();
  const auto& held_docs = static_cast<const TextLmTask&>(*held).Documents();
  ASSERT_EQ(held_docs.size(), 6u);
  // The 10th, 20th, ... 60th books.
  EXPECT_EQ(Text(held_docs[0], 12), "2 Samuel 1\n\n");
  EXPECT_EQ(Text(held_docs[3], 10), "Matthew 1\n");
  size_t total = 0;
  for (const auto& d : train.Documents()) total += d.size();
  for (const auto& d : held_docs) total += d.size();
  EXPECT_GT(total, 4000000u);
  ExpectWholeDocumentsHeldOutAndSamplesWithinOne(train, 3000);
}

TEST(TextLmCorpora, ThePythonStandardLibraryIsOneDocumentPerFile) {
  const TextLmTask train("python");
  EXPECT_GT(train.Documents().size(), 300u);
  EXPECT_GT(train.MaxLength(), 100000);
  ExpectWholeDocumentsHeldOutAndSamplesWithinOne(train, 2000);
}

// Evaluation reads the held-out books, whose longest is shorter than training's: a length that
// fits training but no held-out book is refused when the recipe is read, not in the middle of a run.
TEST(TextLmCorpora, EvaluationLengthsMustFitAHeldOutDocument) {
  const TextLmTask train("kjv");
  const int held_max = train.HeldOut()->MaxLength();
  ASSERT_LT(held_max, train.MaxLength());
  const std::vector<std::string> sets = {"task.name=text_lm", "task.vocab=0", "task.corpus=kjv",
                                         "probe.lengths=5"};
  auto with_eval = [&](int n) {
    std::vector<std::string> s = sets;
    s.push_back("eval.lengths=2," + std::to_string(n));
    return testing::TinyRecipeError(s);
  };
  EXPECT_EQ(with_eval(held_max), "");
  const std::string e = with_eval(held_max + 1);
  EXPECT_NE(e.find("is outside what the held-out part of task 'text_lm' supports: 1.." +
                   std::to_string(held_max)),
            std::string::npos)
      << e;
}

TEST(TextLmCorpora, ACorpusIsNamedAndOnlyTextLmTakesOne) {
  try {
    TextLmTask t("wikipedia");
    FAIL() << "an unknown corpus";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("allowed: fortunes, kjv, python"), std::string::npos)
        << e.what();
  }
  EXPECT_NE(testing::TinyRecipeError({"task.corpus=kjv"}).find("task 'copy' reads none"),
            std::string::npos);
}

}  // namespace
}  // namespace lexp
