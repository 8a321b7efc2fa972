#include "experiments/tasks/string_tasks.h"

#include <algorithm>

namespace lexp {
namespace {

std::vector<int> UniformSymbols(int n, int alphabet, Rng& rng) {
  std::vector<int> s(n);
  for (int& x : s) x = static_cast<int>(rng.UniformInt(0, alphabet - 1));
  return s;
}

Example AllScored(std::vector<int> in, std::vector<int> out) {
  Example e{std::move(in), std::move(out), {}, {}};
  e.output_scored.assign(e.output.size(), 1);
  return e;
}

}  // namespace

Example CopyTask::Sample(int n, Rng& rng) const {
  std::vector<int> in = UniformSymbols(n, vocab_, rng);
  return AllScored(in, in);
}

Example ReverseStringTask::Sample(int n, Rng& rng) const {
  std::vector<int> in = UniformSymbols(n, 2, rng);
  std::vector<int> out(in.rbegin(), in.rend());
  return AllScored(std::move(in), std::move(out));
}

Example DuplicateStringTask::Sample(int n, Rng& rng) const {
  std::vector<int> in = UniformSymbols(n, 2, rng);
  std::vector<int> out = in;
  out.insert(out.end(), in.begin(), in.end());
  return AllScored(std::move(in), std::move(out));
}

Example ParityCheckTask::Sample(int n, Rng& rng) const {
  std::vector<int> in = UniformSymbols(n, 2, rng);
  const int ones = static_cast<int>(std::count(in.begin(), in.end(), 1));
  return AllScored(std::move(in), {ones % 2});
}

}  // namespace lexp
