// Memory a recipe needs, estimated before anything runs, so that a request this machine cannot hold
// is refused with an explanation instead of dying in an allocation. The estimate counts the float
// buffers of each phase of one model (training step, evaluation pass, probe with captured attention
// and its stored copies, the end-of-training replays) and takes the largest; the machine offers the
// least of MemAvailable, the address-space limit (ulimit -v) and the cgroup limit, minus what the
// process already holds.
#pragma once

#include <string>

#include "experiments/core/recipe.h"

namespace lexp {

struct MemoryNeed {
  double bytes = 0;   // peak of the largest phase
  std::string phase;  // what needs it, in the recipe's words
};

// The peak of one model of `c` (one task, one variant of the key sweep).
MemoryNeed EstimatePeakMemory(const RecipeConfig& c);
// The largest EstimatePeakMemory over the tasks and key-sweep values of `c` (seeds do not change
// it): the peak of the sweep's biggest model.
MemoryNeed LargestModelNeed(const RecipeConfig& c);
// Bytes this process may still allocate (infinity when nothing limits it).
double AvailableMemoryBytes();
// Throws InputError naming the phase, its keys and both sizes when `c` (every task and key-sweep
// value of it, times run.jobs models at once) needs more than is available. LEXP_MEMORY_CHECK=off
// in the environment skips it (for tests of what an allocation failure does).
void CheckMemoryFits(const RecipeConfig& c);
// How many models of `c` fit in memory at once (the largest task and key-sweep value at its peak);
// at least 1, and unbounded (INT_MAX) when LEXP_MEMORY_CHECK=off or nothing limits memory.
int ModelsThatFitAtOnce(const RecipeConfig& c);

}  // namespace lexp
