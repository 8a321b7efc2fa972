// Passkey as language modelling (LongLoRA's fine-tuning objective, evaluated by passkey): the key
// sits at its depth in a Markov haystack, every token is trained on and only the answer graded, and
// the graded answer can be had only by reading the key (a predictor blind to it scores chance).
#include "experiments/tasks/passkey_lm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <vector>

#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/task.h"
#include "experiments/training/trainer.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

TEST(PasskeyLm, KeySitsAtItsDepthInAMarkovHaystackAndOnlyTheAnswerIsGraded) {
  const PasskeyLmTask task(0, PasskeyLmTask::Grading::kAnswer);
  ASSERT_EQ(task.Haystack(), 32);
  EXPECT_EQ(task.InputAlphabet(), 44);
  const MarkovLmTask source(0);
  Rng rng(4);
  for (int n : {0, 1, 10, 37})
    for (double depth : {0.0, 0.25, 0.5, 1.0}) {
      const Example e = task.SampleAtDepth(n, depth, rng);
      ASSERT_EQ(e.output.size(), static_cast<size_t>(n + 12));
      EXPECT_TRUE(e.input.empty());
      const int at = static_cast<int>(std::find(e.output.begin(), e.output.end(), task.Key()) -
                                      e.output.begin());
      EXPECT_EQ(at, static_cast<int>(std::lround(depth * n)));
      EXPECT_EQ(e.output[n + 6], task.Query());
      for (int d = 0; d < 5; ++d) {
        EXPECT_EQ(e.output[at + 1 + d], e.output[n + 7 + d]) << "the answer is the key";
        EXPECT_GE(e.output[at + 1 + d], task.Digit(0));
        EXPECT_LE(e.output[at + 1 + d], task.Digit(9));
      }
      // The haystack, with the key cut out, is one chain of the Markov source.
      std::vector<int> text(e.output.begin(), e.output.begin() + at);
      text.insert(text.end(), e.output.begin() + at + 6, e.output.begin() + n + 6);
      ASSERT_EQ(text.size(), static_cast<size_t>(n));
      bool some_chain = false;
      for (int k = 0; k < MarkovLmTask::kChains; ++k) {
        bool all = true;
        for (size_t t = 1; t < text.size(); ++t)
          all = all && source.Transition(k, text[t - 1], text[t]) > 0;
        some_chain = some_chain || all;
      }
      EXPECT_TRUE(some_chain) << "n=" << n << " depth=" << depth;
      EXPECT_TRUE(std::all_of(e.output_scored.begin(), e.output_scored.end(),
                              [](uint8_t s) { return s == 1; }))
          << "every token is trained on";
      ASSERT_EQ(e.output_graded.size(), e.output.size());
      EXPECT_EQ(std::count(e.output_graded.begin(), e.output_graded.end(), 1), 5);
      EXPECT_TRUE(std::all_of(e.output_graded.end() - 5, e.output_graded.end(),
                              [](uint8_t g) { return g == 1; }))
          << "the five answer digits are graded";
    }
  EXPECT_TRUE(task.HasDepth());
  EXPECT_FALSE(task.HasAnswer()) << "a language-modelling sequence: no end token";
}

// The document without the question: the key at its depth, the haystack running on in place of
// QUERY and the answer, so nothing asks for the key; every token graded; one family with
// passkey_lm (same alphabet), so a model fine-tuned on it is evaluated on passkey_lm.
TEST(PasskeyLm, WithoutTheQuestionTheKeyIsNeverAskedFor) {
  const PasskeyLmTask asked(0, PasskeyLmTask::Grading::kAnswer),
      unasked(0, PasskeyLmTask::Grading::kNoQuery);
  EXPECT_EQ(unasked.Name(), "passkey_lm_no_query");
  EXPECT_EQ(unasked.Family(), asked.Family());
  EXPECT_EQ(unasked.InputAlphabet(), asked.InputAlphabet());
  const MarkovLmTask source(0);
  Rng rng(5);
  for (int n : {0, 3, 30})
    for (double depth : {0.0, 0.5, 1.0}) {
      const Example e = unasked.SampleAtDepth(n, depth, rng);
      ASSERT_EQ(e.output.size(), static_cast<size_t>(n + 12)) << "passkey_lm's length";
      EXPECT_EQ(std::count(e.output.begin(), e.output.end(), unasked.Query()), 0);
      EXPECT_EQ(std::count(e.output.begin(), e.output.end(), unasked.Key()), 1);
      const int at = static_cast<int>(std::find(e.output.begin(), e.output.end(), unasked.Key()) -
                                      e.output.begin());
      EXPECT_EQ(at, static_cast<int>(std::lround(depth * n)));
      std::vector<int> text(e.output.begin(), e.output.begin() + at);
      text.insert(text.end(), e.output.begin() + at + 6, e.output.end());
      ASSERT_EQ(text.size(), static_cast<size_t>(n + 6));
      bool some_chain = false;
      for (int k = 0; k < MarkovLmTask::kChains; ++k) {
        bool all = true;
        for (size_t t = 1; t < text.size(); ++t)
          all = all && source.Transition(k, text[t - 1], text[t]) > 0;
        some_chain = some_chain || all;
      }
      EXPECT_TRUE(some_chain) << "n=" << n << " depth=" << depth;
      EXPECT_TRUE(e.output_graded.empty()) << "every (scored) token graded";
      EXPECT_EQ(e.output_scored.size(), e.output.size());
    }
  EXPECT_EQ(CreateTask("passkey_lm_no_query", {})->Family(), "passkey_lm");
}

// The text of passkey_lm's documents: the same sequence as passkey_lm for the same draws, with
// exactly its n haystack tokens graded (not KEY, the key's digits, QUERY or the answer).
TEST(PasskeyLm, TheTextGradingGradesTheHaystackAlone) {
  const PasskeyLmTask asked(0, PasskeyLmTask::Grading::kAnswer),
      text(0, PasskeyLmTask::Grading::kText);
  EXPECT_EQ(text.Name(), "passkey_lm_text");
  EXPECT_EQ(CreateTask("passkey_lm_text", {})->Family(), "passkey_lm");
  for (int n : {0, 3, 30})
    for (double depth : {0.0, 0.5, 1.0}) {
      Rng r1(9), r2(9);
      const Example a = asked.SampleAtDepth(n, depth, r1), e = text.SampleAtDepth(n, depth, r2);
      ASSERT_EQ(e.output, a.output) << "the same document";
      ASSERT_EQ(e.output_graded.size(), e.output.size());
      EXPECT_EQ(std::count(e.output_graded.begin(), e.output_graded.end(), 1), n);
      const int key = static_cast<int>(std::lround(depth * n));
      for (size_t t = 0; t < e.output.size(); ++t) {
        const bool haystack = e.output[t] < text.Haystack() &&
                              (static_cast<int>(t) < key || static_cast<int>(t) > key + 5) &&
                              t + 6 < e.output.size();
        EXPECT_EQ(e.output_graded[t], haystack ? 1 : 0) << "n=" << n << " t=" << t;
      }
    }
}

// The planted reading: in the layout's batch, a predictor that copies the five tokens after KEY
// answers every graded target (exact match 1); the negative control, the best predictor blind to
// the key (each answer digit's most frequent value, counted on other samples), scores chance.
TEST(PasskeyLm, TheGradedAnswerIsReadOnlyFromTheKey) {
  const PasskeyLmTask task(0, PasskeyLmTask::Grading::kAnswer);
  const SequenceLayout layout(task, Layout::kDecoder);
  Rng rng(11);
  const int n = 40, B = 4000;
  const Batch b = layout.MakeBatch(n, B, rng);
  ASSERT_EQ(b.T, n + 12);
  std::array<std::array<int, 10>, 5> counts{};
  for (int s = 0; s < B; ++s)
    for (int d = 0; d < 5; ++d) ++counts[d][b.targets[s * b.T + b.T - 5 + d] - task.Digit(0)];
  std::array<int, 5> mode{};
  for (int d = 0; d < 5; ++d)
    mode[d] = task.Digit(0) + static_cast<int>(std::max_element(counts[d].begin(), counts[d].end()) -
                                               counts[d].begin());
  int oracle_exact = 0, blind_exact = 0, trained = 0;
  for (int s = 0; s < B; ++s) {
    const int* tok = b.tokens.data() + s * b.T;
    const int* tgt = b.targets.data() + s * b.T;
    const int key = static_cast<int>(std::find(tok, tok + b.T, task.Key()) - tok);
    ASSERT_LT(key, b.T);
    bool oracle = true, blind = true;
    int graded = 0, d = 0;
    for (int t = 0; t < b.T; ++t) {
      trained += b.mask[s * b.T + t];
      if (!b.graded[s * b.T + t]) continue;
      ++graded;
      oracle = oracle && tgt[t] == tok[key + 1 + d];
      blind = blind && tgt[t] == mode[d];
      ++d;
    }
    ASSERT_EQ(graded, 5);
    oracle_exact += oracle;
    blind_exact += blind;
  }
  EXPECT_EQ(trained, B * b.T) << "the language-modelling objective trains every position";
  EXPECT_EQ(oracle_exact, B);
  // The chance of the modes (first digit of K <= 50000 about 1/5, the others 1/10): 2e-5.
  EXPECT_LE(blind_exact, 2) << "an answer guessed without the key";
}

TEST(PasskeyLm, RunsEvaluateEveryLengthDepthCellAndDrawThem) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"task.name=passkey_lm", "task.vocab=0", "train.steps=20", "eval.lengths=2,8",
       "eval.depths=0,50,100", "probe.lengths=4"});
  const auto dir = testing::FreshTempDir("passkey_lm");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "t5", o).state, "completed");
  h5::Reader r(RunFilePath(dir.string(), "t5"));
  std::vector<uint64_t> dims;
  const auto em = r.root().OpenGroup("eval").ReadDoubles("depth_exact_match", &dims);
  ASSERT_EQ(dims, (std::vector<uint64_t>{2, 3}));
  // A cell scores eval.samples = 16 answers of 5 digits, no end token: token accuracy in 80ths.
  const auto acc = r.root().OpenGroup("eval").ReadDoubles("depth_token_accuracy", &dims);
  for (size_t i = 0; i < em.size(); ++i) {
    EXPECT_NEAR(acc[i] * 80, std::round(acc[i] * 80), 1e-6) << "cell " << i << ": " << acc[i];
    EXPECT_LE(em[i], acc[i]) << "cell " << i;
  }
  EXPECT_TRUE(std::filesystem::exists(DrawDepthHeatmap(dir.string())));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
