// RULER's synthetic tasks in token form (Hsieh et al. 2024): each needle is present once, the
// queried one at the requested depth, and every answer is recovered by a solver that reads the
// input as RULER's instructions say (the value of the queried key; the chain from the queried
// value; the most common or frequent words), while the distractors give other answers.
#include "experiments/tasks/ruler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "experiments/tasks/task.h"
#include "nn/check.h"

namespace lexp {
namespace {

using K = NeedleTask::Kind;

struct Needle {
  int key, filler_before;
  std::vector<int> digits;
};

// The needles of an input, in order, with how many filler tokens precede each.
std::vector<Needle> ReadNeedles(const std::vector<int>& in) {
  std::vector<Needle> out;
  int filler = 0;
  for (size_t t = 0; t < in.size(); ++t) {
    if (in[t] < NeedleTask::kFiller) ++filler;
    if (in[t] != NeedleTask::kNeedle) continue;
    Needle nd{in[t + 1] - NeedleTask::kKeyBase, filler, {}};
    for (int d = 0; d < NeedleTask::kValueDigits; ++d)
      nd.digits.push_back(in[t + 2 + d] - NeedleTask::kDigitBase);
    out.push_back(nd);
  }
  return out;
}

// RULER's reading: for each queried key (after QUERY), the values of its needles in order.
std::vector<int> SolveNeedles(const std::vector<int>& in) {
  const auto needles = ReadNeedles(in);
  const auto q = std::find(in.begin(), in.end(), NeedleTask::kQuery);
  std::vector<int> answer;
  for (auto k = q + 1; k != in.end(); ++k)
    for (const Needle& nd : needles)
      if (nd.key == *k - NeedleTask::kKeyBase)
        answer.insert(answer.end(), nd.digits.begin(), nd.digits.end());
  return answer;
}

TEST(Ruler, EachNeedleOnceTheQueriedOneAtItsDepthAndTheAnswerIsItsValue) {
  struct Case {
    const char* name;
    K kind;
    bool repeat;
    int needles, queried, answer_digits;
  };
  for (const Case& c : {Case{"niah_single_noise", K::kSingle, false, 1, 1, 4},
                        Case{"niah_single_repeat", K::kSingle, true, 1, 1, 4},
                        Case{"niah_multikey", K::kMultiKey, false, 4, 1, 4},
                        Case{"niah_multivalue", K::kMultiValue, false, 4, 1, 16},
                        Case{"niah_multiquery", K::kMultiQuery, false, 4, 4, 16}}) {
    SCOPED_TRACE(c.name);
    const NeedleTask task(c.name, c.kind, c.repeat);
    EXPECT_EQ(CreateTask(c.name, {})->Name(), c.name);
    Rng rng(7);
    for (int n : {0, 1, 9, 40})
      for (double depth : {0.0, 0.3, 1.0}) {
        const Example e = task.SampleAtDepth(n, depth, rng);
        const auto needles = ReadNeedles(e.input);
        ASSERT_EQ(static_cast<int>(needles.size()), c.needles);
        ASSERT_EQ(e.input.size(), static_cast<size_t>(n + 6 * c.needles + 1 + c.queried));
        EXPECT_EQ(e.input[n + 6 * c.needles], NeedleTask::kQuery);
        // The first queried key's needle sits after round(depth n) filler tokens.
        const int first_key = e.input[n + 6 * c.needles + 1] - NeedleTask::kKeyBase;
        int at_depth = 0, with_key = 0;
        for (const Needle& nd : needles)
          if (nd.key == first_key) {
            ++with_key;
            at_depth += nd.filler_before == static_cast<int>(std::lround(depth * n));
          }
        EXPECT_GE(at_depth, 1) << "n=" << n << " depth=" << depth;
        EXPECT_EQ(with_key, c.kind == K::kMultiValue ? 4 : 1) << "keys are distinct but for multivalue";
        std::vector<std::vector<int>> values;
        for (const Needle& nd : needles) values.push_back(nd.digits);
        std::sort(values.begin(), values.end());
        EXPECT_EQ(std::unique(values.begin(), values.end()), values.end()) << "values distinct";
        ASSERT_EQ(static_cast<int>(e.output.size()), c.answer_digits);
        EXPECT_EQ(SolveNeedles(e.input), e.output);
        for (int t = 0; t < static_cast<int>(e.input.size()); ++t) {
          if (e.input[t] < NeedleTask::kFiller && c.repeat) {
            EXPECT_EQ(e.input[t], 0) << "a repeated haystack";
          }
        }
      }
    EXPECT_TRUE(task.HasDepth());
  }
}

// The negative control: a distractor needle's value is never the answer (multi-key), so an answer
// is right only when the queried key's needle was read.
TEST(Ruler, ADistractorsValueIsNotTheAnswer) {
  const NeedleTask task("niah_multikey", K::kMultiKey, false);
  Rng rng(3);
  for (int s = 0; s < 200; ++s) {
    const Example e = task.Sample(30, rng);
    const int key = e.input.back() - NeedleTask::kKeyBase;
    int distractors = 0;
    for (const Needle& nd : ReadNeedles(e.input))
      if (nd.key != key) {
        ++distractors;
        EXPECT_NE(nd.digits, e.output);
      }
    EXPECT_EQ(distractors, 3);
  }
}

// The counts are recipe keys: task.needles for the multi-needle tasks, task.hops for tracking.
TEST(Ruler, NeedleAndHopCountsComeFromTheRecipe) {
  TaskOptions o;
  o.needles = 6;
  const auto multi = CreateTask("niah_multiquery", o);
  Rng rng(1);
  const Example e = multi->SampleAtDepth(20, 0.5, rng);
  EXPECT_EQ(ReadNeedles(e.input).size(), 6u);
  EXPECT_EQ(e.output.size(), 24u) << "6 values of 4 digits";
  EXPECT_EQ(SolveNeedles(e.input), e.output);
  EXPECT_THROW(CreateTask("niah_single_noise", o), InputError) << "one needle, no count to set";
  o.needles = 0;
  o.hops = 2;
  const Example v = CreateTask("variable_tracking", o)->Sample(10, rng);
  EXPECT_EQ(v.output.size(), 3u);
  EXPECT_EQ(v.input.size(), 10u + 2 * 3 * 3 + 2);
  EXPECT_THROW(CreateTask("common_words", o), InputError);
}

TEST(Ruler, VariableTrackingAnswersTheQueriedValuesChainNotTheDistractors) {
  const VariableTrackingTask task;
  using V = VariableTrackingTask;
  Rng rng(9);
  for (int n : {0, 5, 60}) {
    const Example e = task.Sample(n, rng);
    ASSERT_EQ(e.input.size(), static_cast<size_t>(n + 32));
    ASSERT_EQ(e.input[n + 30], V::kQuery);
    // Follow the assignments from the queried value, in input order.
    std::map<int, int> holds;  // variable -> the token it was assigned (value or variable)
    std::vector<int> order;
    for (size_t t = 0; t + 2 < e.input.size() - 2; ++t)
      if (e.input[t] == V::kAssign) {
        holds[e.input[t + 1]] = e.input[t + 2];
        order.push_back(e.input[t + 1]);
      }
    ASSERT_EQ(order.size(), 10u) << "two chains of 5 statements";
    std::vector<int> chain;
    int source = e.input[n + 31];
    for (int v : order)
      if (holds[v] == source) {
        chain.push_back(v - V::kVarBase);
        source = v;
      }
    EXPECT_EQ(chain, e.output) << "n=" << n;
    EXPECT_EQ(e.output.size(), 5u);
    // The distractor chain starts from another value.
    int values = 0;
    for (const auto& [v, from] : holds) values += from >= V::kValueBase && from < V::kAssign;
    EXPECT_EQ(values, 2);
  }
}

TEST(Ruler, CommonAndFrequentWordsAreTheMostCountedWordsUnambiguously) {
  for (bool frequent : {false, true}) {
    const WordCountTask task(frequent);
    SCOPED_TRACE(task.Name());
    Rng rng(2);
    for (int n : {0, 1, 7, 64, 300}) {
      const Example e = task.Sample(n, rng);
      ASSERT_EQ(e.input.back(), WordCountTask::kQuery);
      std::map<int, int> count;
      for (size_t t = 0; t + 1 < e.input.size(); ++t) ++count[e.input[t]];
      std::vector<std::pair<int, int>> by_count;  // (count, word), most counted first
      for (const auto& [w, c] : count) by_count.emplace_back(c, w);
      std::sort(by_count.rbegin(), by_count.rend());
      const size_t k = frequent ? 3 : 4;
      ASSERT_GE(by_count.size(), k);
      if (by_count.size() > k) {  // common_words at n = 0 holds its common words alone
        EXPECT_GT(by_count[k - 1].first, by_count[k].first) << "n=" << n << ": the top is unambiguous";
      }
      std::vector<int> top;
      for (size_t i = 0; i < k; ++i) top.push_back(by_count[i].second);
      if (frequent) {
        for (size_t i = 1; i < k; ++i)
          EXPECT_GT(by_count[i - 1].first, by_count[i].first) << "counts strictly decrease";
      } else {
        std::sort(top.begin(), top.end());
      }
      EXPECT_EQ(top, e.output) << "n=" << n;
      if (!frequent) {
        EXPECT_EQ(e.input.size(), static_cast<size_t>(n + 4 * (2 + n / 8) + 1));
      }
    }
  }
}

}  // namespace
}  // namespace lexp
