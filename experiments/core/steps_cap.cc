#include "experiments/core/steps_cap.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace lexp {

RecipeConfig WithStepsCap(const RecipeConfig& c) {
  if (c.steps_cap == 0 || c.steps <= c.steps_cap) return c;
  RecipeConfig out = c;
  const long from = c.steps, to = c.steps_cap;
  // Rounded down: a count below one step of the capped run is none.
  const auto shrink = [&](long count) { return count * to / from; };
  const auto interval = [&](int every) {
    return every == 0 ? 0 : static_cast<int>(std::max(1L, shrink(every)));
  };
  out.steps = c.steps_cap;
  out.optimizer.warmup_steps = static_cast<int>(shrink(c.optimizer.warmup_steps));
  out.log_every = interval(c.log_every);
  out.checkpoint_every = interval(c.checkpoint_every);
  out.eval_every = interval(c.eval_every);
  out.length_schedule.clear();
  long last = -1;
  for (const RecipeConfig::LengthPhase& phase : c.LengthSchedule()) {
    last = std::max(last + 1, shrink(phase.from_step));
    out.length_schedule.push_back(fmt::format("{}:{}", last, phase.max_length));
  }
  return out;
}

}  // namespace lexp
