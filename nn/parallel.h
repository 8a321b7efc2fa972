// TBB wrappers. Work is cut into chunks whose boundaries depend only on the problem size and a
// fixed grain, never on the number of threads, so every result is bit-identical whatever the thread
// count.
#pragma once

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <memory>

#include "nn/precision.h"

namespace lexp {

// Calls f(begin, end) for fixed chunks [c*grain, min(n, (c+1)*grain)).
template <typename F>
void ParallelChunks(long n, long grain, const F& f) {
  if (n <= 0) return;
  grain = std::max(1L, grain);
  const long chunks = (n + grain - 1) / grain;
  if (chunks == 1) {
    f(0L, n);
    return;
  }
  // Tasks run on other threads: each takes the caller's precision policy with it.
  const PrecisionPolicy precision = ActivePrecision();
  tbb::parallel_for(0L, chunks, [&](long c) {
    PrecisionScope scope(precision);
    f(c * grain, std::min(n, (c + 1) * grain));
  });
}

// Calls f(i) for every i in [0, n); each i is independent.
template <typename F>
void ParallelFor(long n, const F& f) {
  if (n <= 0) return;
  if (n == 1) {
    f(0L);
    return;
  }
  const PrecisionPolicy precision = ActivePrecision();
  tbb::parallel_for(0L, n, [&](long i) {
    PrecisionScope scope(precision);
    f(i);
  });
}

// Holds the thread limit for the lifetime of the object (the `--threads` option).
class ThreadLimit {
 public:
  explicit ThreadLimit(int threads)
      : control_(threads > 0 ? std::make_unique<tbb::global_control>(
                                   tbb::global_control::max_allowed_parallelism, threads)
                             : nullptr) {}
  ThreadLimit(ThreadLimit&&) = default;
  ThreadLimit& operator=(ThreadLimit&&) = default;
  // The threads work here may use: the global limit, or less inside a task arena (a model of a
  // sweep trained with run.jobs > 1).
  static int Active() {
    return std::min(static_cast<int>(tbb::global_control::active_value(
                        tbb::global_control::max_allowed_parallelism)),
                    tbb::this_task_arena::max_concurrency());
  }

 private:
  std::unique_ptr<tbb::global_control> control_;
};

}  // namespace lexp
