#include "experiments/tasks/ruler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "nn/check.h"

namespace lexp {
namespace {

// Fisher-Yates with the task's RNG (std::shuffle's draws are not specified across libraries).
template <typename T>
void Shuffle(std::vector<T>& v, Rng& rng) {
  for (int i = static_cast<int>(v.size()) - 1; i > 0; --i)
    std::swap(v[i], v[static_cast<size_t>(rng.UniformInt(0, i))]);
}

// k distinct symbols of [0, m) in random order.
std::vector<int> Distinct(int k, int m, Rng& rng) {
  std::vector<int> all(m);
  std::iota(all.begin(), all.end(), 0);
  Shuffle(all, rng);
  all.resize(k);
  return all;
}

// The haystack with blocks inserted: block b goes after `at[b]` haystack tokens; blocks at the
// same point keep their order in the list.
std::vector<int> Insert(const std::vector<int>& haystack, const std::vector<int>& at,
                        const std::vector<std::vector<int>>& blocks) {
  std::vector<size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at[a] < at[b]; });
  std::vector<int> out;
  size_t next = 0;
  for (int t = 0; t <= static_cast<int>(haystack.size()); ++t) {
    while (next < order.size() && at[order[next]] == t) {
      out.insert(out.end(), blocks[order[next]].begin(), blocks[order[next]].end());
      ++next;
    }
    if (t < static_cast<int>(haystack.size())) out.push_back(haystack[t]);
  }
  return out;
}

}  // namespace

NeedleTask::NeedleTask(std::string name, Kind kind, bool repeat_haystack, int needles)
    : name_(std::move(name)), kind_(kind), repeat_(repeat_haystack),
      needles_(needles > 0 ? needles : kNeedles) {
  LEXP_INPUT_CHECK(kind == Kind::kSingle ? needles == 0 : needles_ >= 2 && needles_ <= kKeys,
                   "task '" + name_ + "': task.needles = " + std::to_string(needles) +
                       (kind == Kind::kSingle ? " (a single needle; leave it at 0)"
                                              : "; allowed: 2..16 (distinct keys), 0 = 4"));
}

Example NeedleTask::Build(int n, int target_at, Rng& rng) const {
  LEXP_CHECK(target_at >= 0 && target_at <= n, "needle: insertion point outside the haystack");
  std::vector<int> haystack(n, 0);
  if (!repeat_)
    for (int& x : haystack) x = static_cast<int>(rng.UniformInt(0, kFiller - 1));
  const int m = Needles();
  const std::vector<int> keys =
      kind_ == Kind::kMultiValue ? std::vector<int>(m, static_cast<int>(rng.UniformInt(0, kKeys - 1)))
                                 : Distinct(m, kKeys, rng);
  std::vector<int> values;  // distinct 4-digit values
  while (static_cast<int>(values.size()) < m) {
    const int v = static_cast<int>(rng.UniformInt(0, 9999));
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  std::vector<int> at(m);
  at[0] = target_at;  // needle 0: the queried one (the first queried for multi-query)
  for (int i = 1; i < m; ++i) at[i] = static_cast<int>(rng.UniformInt(0, n));
  std::vector<std::vector<int>> blocks(m);
  std::vector<std::vector<int>> digits(m);
  for (int i = 0; i < m; ++i) {
    for (int d = kValueDigits - 1, v = values[i]; d >= 0; --d, v /= 10)
      digits[i].insert(digits[i].begin(), v % 10);
    blocks[i] = {kNeedle, kKeyBase + keys[i]};
    for (int d : digits[i]) blocks[i].push_back(kDigitBase + d);
  }
  Example e;
  e.input = Insert(haystack, at, blocks);
  e.input.push_back(kQuery);
  std::vector<int> answer_needles;  // which needles' values answer, in answer order
  if (kind_ == Kind::kMultiValue) {
    answer_needles.resize(m);
    std::iota(answer_needles.begin(), answer_needles.end(), 0);
    std::stable_sort(answer_needles.begin(), answer_needles.end(),
                     [&](int a, int b) { return at[a] < at[b]; });  // order of appearance
    e.input.push_back(kKeyBase + keys[0]);
  } else if (kind_ == Kind::kMultiQuery) {
    answer_needles.resize(m);
    std::iota(answer_needles.begin() + 1, answer_needles.end(), 1);
    Shuffle(answer_needles, rng);
    // The needle at the depth is asked first.
    std::swap(*std::find(answer_needles.begin(), answer_needles.end(), 0), answer_needles[0]);
    for (int i : answer_needles) e.input.push_back(kKeyBase + keys[i]);
  } else {
    answer_needles = {0};
    e.input.push_back(kKeyBase + keys[0]);
  }
  for (int i : answer_needles) e.output.insert(e.output.end(), digits[i].begin(), digits[i].end());
  e.output_scored.assign(e.output.size(), 1);
  return e;
}

Example NeedleTask::Sample(int n, Rng& rng) const {
  return Build(n, static_cast<int>(rng.UniformInt(0, n)), rng);
}

Example NeedleTask::SampleAtDepth(int n, double depth, Rng& rng) const {
  LEXP_CHECK(depth >= 0 && depth <= 1, "needle: depth outside [0, 1]");
  return Build(n, static_cast<int>(std::lround(depth * n)), rng);
}

VariableTrackingTask::VariableTrackingTask(int hops) : hops_(hops > 0 ? hops : kHops) {
  LEXP_INPUT_CHECK(hops_ <= 7, "task 'variable_tracking': task.hops = " + std::to_string(hops) +
                                   "; allowed: 1..7 (two chains of hops + 1 distinct variables "
                                   "among 16), 0 = 4");
}

Example VariableTrackingTask::Sample(int n, Rng& rng) const {
  std::vector<int> haystack(n);
  for (int& x : haystack) x = static_cast<int>(rng.UniformInt(0, kFiller - 1));
  const std::vector<int> vars = Distinct(2 * (hops_ + 1), kVariables, rng);
  const std::vector<int> values = Distinct(2, kValues, rng);
  // Statements of chain c: ASSIGN x_c0 v_c, then ASSIGN x_ci x_c(i-1).
  std::vector<std::vector<int>> chain_blocks[2];
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i <= hops_; ++i) {
      const int x = vars[c * (hops_ + 1) + i];
      const int from =
          i == 0 ? kValueBase + values[c] : kVarBase + vars[c * (hops_ + 1) + i - 1];
      chain_blocks[c].push_back({kAssign, kVarBase + x, from});
    }
  // A random interleaving of the two chains, each in its order, at sorted insertion points.
  std::vector<int> which(2 * (hops_ + 1), 1);
  std::fill(which.begin(), which.begin() + hops_ + 1, 0);
  Shuffle(which, rng);
  std::vector<int> at(which.size());
  for (int& a : at) a = static_cast<int>(rng.UniformInt(0, n));
  std::sort(at.begin(), at.end());
  std::vector<std::vector<int>> blocks;
  int next[2] = {0, 0};
  for (int c : which) blocks.push_back(chain_blocks[c][next[c]++]);
  Example e;
  e.input = Insert(haystack, at, blocks);
  e.input.push_back(kQuery);
  e.input.push_back(kValueBase + values[0]);
  for (int i = 0; i <= hops_; ++i) e.output.push_back(vars[i]);
  e.output_scored.assign(e.output.size(), 1);
  return e;
}

Example WordCountTask::Sample(int n, Rng& rng) const {
  const std::vector<int> words = Distinct(kWords, kWords, rng);  // a random ranking of the words
  std::vector<int> list;
  Example e;
  if (!frequent_) {
    const int common = 2 + n / 8;
    for (int c = 0; c < kCommon; ++c) list.insert(list.end(), common, words[c]);
    for (int t = 0; t < n; ++t) list.push_back(words[kCommon + t % (kWords - kCommon)]);
    e.output.assign(words.begin(), words.begin() + kCommon);
    std::sort(e.output.begin(), e.output.end());
  } else {
    const long C = 18 + n;
    for (int r = 1; r <= kWords; ++r) list.insert(list.end(), C / (static_cast<long>(r) * r), words[r - 1]);
    e.output.assign(words.begin(), words.begin() + kFrequent);
  }
  Shuffle(list, rng);
  e.input = list;
  e.input.push_back(kQuery);
  e.output_scored.assign(e.output.size(), 1);
  return e;
}

}  // namespace lexp
