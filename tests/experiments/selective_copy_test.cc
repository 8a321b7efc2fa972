// selective_copy (Gu & Dao 2023; Golovneva et al. 2024) against its definition: K tokens at
// uniformly random distinct places among blanks, the answer those tokens in order; and the
// property its CoPE claim rests on, read off the model's own decoder sequences: the key a query
// must copy is always the (K + 1)-th non-blank token back, while its token distance grows with n.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/selective_copy.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"
#include "nn/rng.h"

namespace lexp {
namespace {

TEST(SelectiveCopy, AnswerIsTheNonBlankTokensInOrderAtUniformPlaces) {
  const int K = 8, V = 16, n = 40, trials = 4000;
  SelectiveCopyTask task(0, 0);
  EXPECT_EQ(task.tokens(), K);
  EXPECT_EQ(task.InputAlphabet(), V + 1);
  EXPECT_EQ(task.MinLength(), K);
  Rng rng(3);
  std::vector<int> at(n, 0), value(V, 0);
  int with_repeat = 0, with_adjacent = 0;  // tokens drawn with replacement; places not spread
  for (int s = 0; s < trials; ++s) {
    const Example e = task.Sample(n, rng);
    ASSERT_EQ(e.input.size(), static_cast<size_t>(n));
    std::vector<int> kept;
    for (int t = 0; t < n; ++t)
      if (e.input[t] != task.blank()) {
        kept.push_back(e.input[t]);
        ++at[t];
      }
    EXPECT_EQ(e.output, kept);
    EXPECT_EQ(e.output_scored, std::vector<uint8_t>(K, 1));
    for (int y : e.output) ++value[y];
    std::vector<int> sorted = e.output;
    std::sort(sorted.begin(), sorted.end());
    with_repeat += std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
    for (int t = 0; t + 1 < n; ++t)
      if (e.input[t] != task.blank() && e.input[t + 1] != task.blank()) {
        ++with_adjacent;
        break;
      }
  }
  // Each place holds a token with probability K / n = 0.2 (sd of a count 25.3), each value 1/V.
  for (int t = 0; t < n; ++t) EXPECT_NEAR(at[t], trials * 0.2, 5 * 25.3) << t;
  for (int v = 0; v < V; ++v) EXPECT_NEAR(value[v], trials * K / 16.0, 5 * 43.3) << v;
  // 8 draws of 16 values repeat one with probability 0.88; two of 8 places among 40 are adjacent
  // in most inputs: evenly spread places, or values without repeats, fail here.
  EXPECT_GT(with_repeat, trials / 2);
  EXPECT_GT(with_adjacent, trials / 2);
  // At n = K there is no blank.
  const Example full = task.Sample(K, rng);
  EXPECT_EQ(full.input, full.output);
  EXPECT_THROW(task.Sample(K - 1, rng), InputError);
}

TEST(SelectiveCopy, TokensToCopyIsAnOptionOfThisTaskOnly) {
  TaskOptions o;
  o.copy_tokens = 3;
  auto task = CreateTask("selective_copy", o);
  Rng rng(1);
  EXPECT_EQ(task->Sample(20, rng).output.size(), 3u);
  EXPECT_THROW(CreateTask("copy", o), InputError);
}

// In the decoder layout the query predicting answer token k sits at prompt - 1 + (k - 1); counted
// back from it (itself included), the input token it copies is the (K + 1)-th token that is not
// blank, at every length; its token distance is not constant. Negative control: counting every
// token (a plain distance) gives a different count at every length.
TEST(SelectiveCopy, CopiedKeyIsAtAConstantNonBlankCountNotAConstantDistance) {
  const int K = 8;
  SelectiveCopyTask task(0, 0);
  SequenceLayout layout(task, Layout::kDecoder);
  Rng rng(9);
  std::vector<int> distances;
  for (int n : {8, 16, 40, 128}) {
    const Batch b = layout.MakeBatch(n, 4, rng);
    for (int s = 0; s < b.B; ++s) {
      const int* tok = b.tokens.data() + s * b.T;
      std::vector<int> keys;  // places of the input tokens to copy
      for (int t = 0; t < n; ++t)
        if (tok[t] != task.blank()) keys.push_back(t);
      ASSERT_EQ(keys.size(), static_cast<size_t>(K));
      for (int k = 1; k <= K; ++k) {
        const int query = b.prompt - 1 + (k - 1);
        EXPECT_EQ(b.targets[s * b.T + query], tok[keys[k - 1]]);
        int count = 0;
        for (int t = keys[k - 1]; t <= query; ++t) count += tok[t] != task.blank();
        EXPECT_EQ(count, K + 1) << "n " << n << " k " << k;
        if (s == 0 && k == 1) distances.push_back(query - keys[0] + 1);
      }
    }
  }
  EXPECT_NE(distances.front(), distances.back());
}

}  // namespace
}  // namespace lexp
