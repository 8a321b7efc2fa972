// Prompt compression (experiments/tasks/compressed_prompt.h, experiments/replay/prompt_compression
// .h): the tokens kept, the task that compresses every sample, the input scored by a compressor's
// training, and a trained run evaluated again at every ratio (ratio 0 is its own /eval).
#include "experiments/replay/prompt_compression.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/compressed_prompt.h"
#include "experiments/training/sweep.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

TEST(PromptCompression, KeepsTheMostSurprisingContextTokensInOrderAndTheQuery) {
  const std::vector<double> s = {9, 1, 5, 5, 0, 7, 2, 3};  // the last token is the query
  EXPECT_EQ(KeptInput(s, 1, 0), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // 7 context tokens, ratio 0.5: drop round(3.5) = 4, keep 3: surprisals 9, 7 and the first 5.
  EXPECT_EQ(KeptInput(s, 1, 0.5), (std::vector<int>{0, 2, 5, 7}));
  EXPECT_EQ(KeptInput(s, 1, 0.99), (std::vector<int>{7})) << "the query stays";
  EXPECT_EQ(KeptInput(s, 0, 0.75), (std::vector<int>{0, 5}));
}

TEST(PromptCompression, ACompressedPasskeyKeepsTheKeyWhenTheFillerIsPredictable) {
  // A surprisal that knows the filler (symbols 0-9) is predictable: 0 for filler, 1 otherwise.
  const InputSurprisal filler_is_free = [](const std::vector<int>& in) {
    std::vector<double> s;
    for (int x : in) s.push_back(x < 10 ? 0.0 : 1.0);
    return s;
  };
  const auto task = WithCompressedPrompt(CreateTask("passkey", {}), 0.91, filler_is_free);
  Rng a(4), b(4);
  const Example e = task->Sample(60, a), plain = CreateTask("passkey", {})->Sample(60, b);
  EXPECT_EQ(e.output, plain.output) << "the answer is the base task's";
  // 66 context tokens, round(0.91 * 66) = 60 dropped: the key marker and its 5 digits are left,
  // then the query.
  std::vector<int> expected;
  for (int x : plain.input)
    if (x >= 10) expected.push_back(x);
  EXPECT_EQ(e.input, expected);
  EXPECT_THROW(WithCompressedPrompt(CreateTask("passkey", {}), 1.0, filler_is_free), InputError);
}

TEST(PromptCompression, ACompressorIsTrainedOnItsInputAndGradedOnItsAnswer) {
  const auto task = CreateTask("passkey", {});
  SequenceLayout layout(*task, Layout::kDecoder);
  layout.set_score_input(true);
  Rng rng(2);
  const Batch b = layout.MakeBatch(6, 2, rng);
  const int ni = b.prompt - 1;
  for (int s = 0; s < b.B; ++s)
    for (int t = 0; t < ni; ++t) {
      const long i = static_cast<long>(s) * b.T + t;
      EXPECT_EQ(b.mask[i], t + 1 < ni ? 1 : 0) << t;
      if (t + 1 < ni) {
        EXPECT_EQ(b.targets[i], b.tokens[i + 1]);
      }
      EXPECT_EQ(b.graded[i], 0) << "the input is not graded";
    }
}

TEST(PromptCompression, ATrainedRunAtRatioZeroIsItsOwnEvaluation) {
  const auto dir = testing::FreshTempDir("prompt_compression");
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  RunRecipe(testing::TinyCopyRecipe({"task.name=passkey", "task.vocab=0", "train.steps=30",
                                     "eval.lengths=4,12", "probe.lengths=4",
                                     "run.variants=[\"reader\", \"lm: train.score_input=1\"]"}),
            so);
  const std::string reader = (dir / "t5-reader.h5").string(), lm = (dir / "t5-lm.h5").string();
  const PromptCompression pc = MeasurePromptCompression(reader, lm, {0, 0.5}, {});
  ASSERT_EQ(pc.lengths, (std::vector<int>{4, 12}));
  ASSERT_EQ(pc.exact_match.size(), 4u);
  h5::Reader r(reader);
  const std::vector<double> exact = r.root().OpenGroup("eval").ReadDoubles("exact_match");
  EXPECT_EQ(pc.exact_match[0], exact[0]);
  EXPECT_EQ(pc.exact_match[1], exact[1]);
  EXPECT_EQ(pc.input_tokens[0], 4 + 7);
  EXPECT_EQ(pc.input_tokens[3], 12 + 7 - 9) << "half of the 18 context tokens dropped";
  EXPECT_THROW(MeasurePromptCompression(reader, reader, {0.5}, {}), InputError)
      << "a compressor must be trained on its prompts";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
