// Task generators (Deletang et al. 2023, Kazemnejad et al. 2023, Arora et al. 2023) and their
// layout into model sequences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/task.h"
#include "experiments/tasks/text_lm.h"
#include "nn/check.h"

namespace lexp {
namespace {

Example SampleOf(const std::string& task, int n, uint64_t seed, int vocab = 0) {
  Rng rng(seed);
  return CreateTask(task, TaskOptions{vocab})->Sample(n, rng);
}

// frequent_words' list: word r of the ranking floor((18 + n) / r^2) times, r = 1..64.
size_t FrequentWordsList(int n) {
  size_t total = 0;
  for (long r = 1; r <= 64; ++r) total += static_cast<size_t>((18 + n) / (r * r));
  return total;
}

TEST(Tasks, EveryTaskIsDeterministicForASeedAndHasTheRequestedLength) {
  for (const auto& info : ListTasks()) {
    if (info.name == "text_lm" && !std::filesystem::is_directory(TextLmTask::CorpusDirectory()))
      continue;  // its corpus is a Debian package (tests/experiments/text_lm_test.cc makes one)
    for (int n : {1, 2, 3, 17}) {
      if (n < CreateTask(info.name, {})->MinLength()) {  // selective_copy: n >= its 8 tokens
        EXPECT_THROW(SampleOf(info.name, n, 42), InputError) << info.name << " n=" << n;
        continue;
      }
      const Example a = SampleOf(info.name, n, 42), b = SampleOf(info.name, n, 42);
      EXPECT_EQ(a.input, b.input) << info.name;
      EXPECT_EQ(a.output, b.output) << info.name;
      // associative_recall: n pairs; modular_arithmetic: even n is shortened to n - 1 (reference);
      // addition: two n-digit operands and '+'; summation: n terms and n - 1 '+'; lego: n clauses
      // of 3 tokens and a 2-token query.
      const std::map<std::string, size_t> in_len = {{"associative_recall", 2 * n},
                                                    {"mqar", 2 * n},
                                                    {"counting", 2 * n + 2},
                                                    {"flip_flop", 2},
                                                    {"flip_flop_sparse", 2},
                                                    {"flip_flop_dense", 2},
                                                    {"passkey", n + 7},
                                                    {"passkey_lm", 0},
                                                    {"passkey_lm_no_query", 0},
                                                    {"passkey_lm_text", 0},
                                                    {"niah_single_noise", n + 8},
                                                    {"niah_single_repeat", n + 8},
                                                    {"niah_multikey", n + 26},
                                                    {"niah_multivalue", n + 26},
                                                    {"niah_multiquery", n + 29},
                                                    {"variable_tracking", n + 32},
                                                    {"common_words", n + 4 * (2 + n / 8) + 1},
                                                    {"frequent_words", FrequentWordsList(n) + 1},
                                                    {"markov_lm", 0},
                                                    {"lookback_lm", 0},
                                                    {"text_lm", 0},
                                                    {"modular_arithmetic", n % 2 == 0 ? n - 1 : n},
                                                    {"addition", 2 * n + 1},
                                                    {"addition_reversed", 2 * n + 1},
                                                    {"multiplication_reversed",
                                                     n + 1 + std::min(3, n)},
                                                    {"summation", 2 * n - 1},
                                                    {"lego", 3 * n + 2}};
      const size_t expect_in = in_len.count(info.name) ? in_len.at(info.name) : n;
      EXPECT_EQ(a.input.size(), expect_in) << info.name << " n=" << n;
      EXPECT_EQ(a.output.size(), a.output_scored.size()) << info.name;
      auto task = CreateTask(info.name, {});
      for (int x : a.input) EXPECT_TRUE(x >= 0 && x < task->InputAlphabet()) << info.name;
      for (int y : a.output) EXPECT_TRUE(y >= 0 && y < task->OutputAlphabet()) << info.name;
    }
    const int n_long = std::min(30, CreateTask(info.name, {})->MaxLength());
    const Example s1 = SampleOf(info.name, n_long, 1), s2 = SampleOf(info.name, n_long, 2);
    EXPECT_TRUE(s1.input != s2.input || s1.output != s2.output) << info.name << ": seeds differ";
  }
}

TEST(Tasks, CopyReverseDuplicateAndParityAreCorrect) {
  for (int n : {1, 2, 9}) {
    const Example c = SampleOf("copy", n, 3);
    EXPECT_EQ(c.output, c.input);
    const Example r = SampleOf("reverse_string", n, 3);
    std::vector<int> rr(r.output.rbegin(), r.output.rend());
    EXPECT_EQ(rr, r.input) << "reverse of the reverse is the input";
    const Example d = SampleOf("duplicate_string", n, 3);
    ASSERT_EQ(d.output.size(), 2u * n);
    EXPECT_TRUE(std::equal(d.input.begin(), d.input.end(), d.output.begin()));
    EXPECT_TRUE(std::equal(d.input.begin(), d.input.end(), d.output.begin() + n));
    const Example p = SampleOf("parity_check", n, 3);
    ASSERT_EQ(p.output.size(), 1u);
    EXPECT_EQ(p.output[0], static_cast<int>(std::count(p.input.begin(), p.input.end(), 1)) % 2);
  }
  // Hand-checked: a copy pool of 100 by default, binary alphabets for the Chomsky string tasks.
  EXPECT_EQ(CreateTask("copy", {})->InputAlphabet(), 100);
  EXPECT_EQ(CreateTask("reverse_string", {})->InputAlphabet(), 2);
}

TEST(Tasks, AssociativeRecallAnswersEveryKeyWithItsValue) {
  const int n = 12;
  const Example e = SampleOf("associative_recall", n, 9, 64);
  std::map<int, int> value_of;
  std::set<int> keys;
  for (int i = 0; i < n; ++i) {
    const int k = e.input[2 * i], v = e.input[2 * i + 1];
    EXPECT_LT(k, 32);
    EXPECT_GE(v, 32);
    EXPECT_TRUE(keys.insert(k).second) << "keys are distinct";
    value_of[k] = v;
  }
  ASSERT_EQ(e.output.size(), 2u * n);
  std::set<int> queried;
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(e.output_scored[2 * i], 0) << "queries are not scored";
    EXPECT_EQ(e.output_scored[2 * i + 1], 1);
    EXPECT_EQ(e.output[2 * i + 1], value_of.at(e.output[2 * i]));
    queried.insert(e.output[2 * i]);
  }
  EXPECT_EQ(queried, keys) << "every key is queried once";
  Rng rng(1);
  EXPECT_THROW(CreateTask("associative_recall", {64})->Sample(33, rng), Error);
}

TEST(SequenceLayout, DecoderMasksCoverExactlyTheAnswerAndItsEndToken) {
  auto task = CreateTask("reverse_string", {});
  SequenceLayout layout(*task, Layout::kDecoder);
  ASSERT_TRUE(layout.EndsWithEndToken());
  Rng rng(5);
  const Batch b = layout.MakeBatch(4, 3, rng);
  ASSERT_EQ(b.T, 9);  // 4 input, SEP, 4 answer tokens (the last one predicts END)
  EXPECT_EQ(b.prompt, 5);
  for (int s = 0; s < 3; ++s) {
    const int* tok = b.tokens.data() + s * 9;
    EXPECT_EQ(tok[4], layout.Sep());
    for (int t = 0; t < 9; ++t) EXPECT_EQ(b.mask[s * 9 + t], t >= 4 ? 1 : 0) << t;
    // Teacher forcing: the target of position t is the token at t+1, and the answer reverses.
    for (int t = 4; t < 8; ++t) EXPECT_EQ(b.targets[s * 9 + t], tok[t + 1]);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(b.targets[s * 9 + 4 + k], tok[3 - k]);
    EXPECT_EQ(b.targets[s * 9 + 8], layout.End()) << "the answer ends with the end token";
  }
}

TEST(SequenceLayout, SourcesAndQueryStreamsHaveNoEndToken) {
  for (const char* name : {"markov_lm", "lookback_lm", "mqar", "associative_recall",
                           "stack_manipulation", "binary_addition"}) {
    auto task = CreateTask(name, {});
    SequenceLayout layout(*task, Layout::kDecoder);
    EXPECT_FALSE(layout.EndsWithEndToken()) << name;
    EXPECT_EQ(layout.End(), -1) << name;
    EXPECT_EQ(layout.Vocab(), layout.Blank() + 1) << name << ": no end token in the vocabulary";
    Rng rng(2);
    const Batch b = layout.MakeBatch(6, 2, rng);
    for (int target : b.targets) EXPECT_LT(target, layout.Sep()) << name << ": symbols only";
  }
  auto copy = CreateTask("copy", {});
  EXPECT_FALSE(SequenceLayout(*copy, Layout::kEncoder).EndsWithEndToken())
      << "output slots have no end token";
}

TEST(SequenceLayout, EncoderAppendsBlankOutputSlots) {
  auto task = CreateTask("parity_check", {});
  SequenceLayout layout(*task, Layout::kEncoder);
  Rng rng(5);
  const Batch b = layout.MakeBatch(5, 2, rng);
  ASSERT_EQ(b.T, 6);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(b.tokens[s * 6 + 5], layout.Blank());
    for (int t = 0; t < 6; ++t) EXPECT_EQ(b.mask[s * 6 + t], t == 5 ? 1 : 0);
    int ones = 0;
    for (int t = 0; t < 5; ++t) ones += b.tokens[s * 6 + t];
    EXPECT_EQ(b.targets[s * 6 + 5], 2 + ones % 2) << "output classes follow the input alphabet";
  }
  auto recall = CreateTask("associative_recall", {});
  EXPECT_THROW(SequenceLayout(*recall, Layout::kEncoder), Error);
}

TEST(Tasks, MqarPlacesEachKeyOnceAtPowerLawGapsWithItsValueScored) {
  for (int n : {1, 3, 10}) {
    const Example e = SampleOf("mqar", n, 5);
    ASSERT_EQ(e.output.size(), 4u * n);
    int scored = 0;
    for (int i = 0; i < n; ++i) {
      const int key = e.input[2 * i], value = e.input[2 * i + 1];
      EXPECT_TRUE(key >= 1 && key < 128);
      EXPECT_TRUE(value >= 128 && value < 256);
      int found = 0;
      for (size_t t = 0; t + 1 < e.output.size(); t += 2)
        if (e.output[t] == key && e.output_scored[t + 1]) {
          ++found;
          EXPECT_EQ(e.output[t + 1], value);
        }
      EXPECT_EQ(found, 1) << "key " << key;
    }
    for (size_t t = 0; t < e.output.size(); ++t) {
      scored += e.output_scored[t];
      if (e.output_scored[t]) {
        EXPECT_EQ(t % 2, 1u) << "values right after keys at even offsets";
      }
    }
    EXPECT_EQ(scored, n);
  }
  // One key, two slots: p(slot 0) = 1 / (1 + 2^(a-1)) = 0.6647 for a = 0.01.
  int first = 0;
  const int trials = 4000;
  for (int s = 0; s < trials; ++s) first += SampleOf("mqar", 1, 100 + s).output_scored[1];
  EXPECT_NEAR(static_cast<double>(first) / trials, 1 / (1 + std::pow(2.0, -0.99)), 0.025);
}

}  // namespace
}  // namespace lexp
