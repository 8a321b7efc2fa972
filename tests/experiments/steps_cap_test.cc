// train.steps_cap (experiments/core/steps_cap.h): a recipe capped for a pipeline check trains at
// most the cap, its schedule shrunk in proportion, and the sweep's run files record what trained.
#include "experiments/core/steps_cap.h"

#include <gtest/gtest.h>

#include "experiments/training/sweep.h"
#include "nn/check.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

// A recipe of 600 steps with every step-valued key set, GrowLength over three phases.
RecipeConfig Scheduled(const std::vector<std::string>& more = {}) {
  std::vector<std::string> sets = {"train.steps=600",       "train.warmup_steps=100",
                                   "train.log_every=100",   "train.checkpoint_every=500",
                                   "train.eval_every=40",   "train.max_length=8",
                                   "eval.lengths=[2, 8, 9]", "train.eval_every_lengths=[8]",
                                   "train.length_schedule=[\"0:2\", \"200:4\", \"400:8\"]"};
  sets.insert(sets.end(), more.begin(), more.end());
  return testing::TinyCopyRecipe(sets);
}

TEST(StepsCap, ShrinksEveryStepCountInProportion) {
  const RecipeConfig c = WithStepsCap(Scheduled({"train.steps_cap=30"}));
  EXPECT_EQ(c.steps, 30);
  EXPECT_EQ(c.steps_cap, 30);  // recorded: the run file says it was capped
  EXPECT_EQ(c.optimizer.warmup_steps, 5);
  EXPECT_EQ(c.log_every, 5);
  EXPECT_EQ(c.checkpoint_every, 25);
  EXPECT_EQ(c.eval_every, 2);
  EXPECT_EQ(c.length_schedule, (std::vector<std::string>{"0:2", "10:4", "20:8"}));
  EXPECT_EQ(c.Optimizer().total_steps, 30);
  EXPECT_NO_THROW(ValidateRecipe(c));
}

TEST(StepsCap, LeavesARecipeWithinItsCapAsItIs) {
  for (const std::string cap : {"0", "600", "1000"}) {
    RecipeConfig c = Scheduled({"train.steps_cap=" + cap});
    RecipeConfig capped = WithStepsCap(c);
    EXPECT_EQ(RecipeToToml(capped), RecipeToToml(c)) << cap;
  }
}

TEST(StepsCap, KeepsIntervalsAtLeastOneStepAndPhasesInOrder) {
  const RecipeConfig c = WithStepsCap(Scheduled(
      {"train.eval_every=10", "train.warmup_steps=0",
       "train.length_schedule=[\"0:2\", \"1:4\", \"2:8\"]", "train.steps_cap=30"}));
  EXPECT_EQ(c.eval_every, 1);               // 10 * 30 / 600 rounds to 0: still an interval
  EXPECT_EQ(c.optimizer.warmup_steps, 0);   // no warm-up stays none
  EXPECT_EQ(c.length_schedule, (std::vector<std::string>{"0:2", "1:4", "2:8"}));
  EXPECT_EQ(WithStepsCap(Scheduled({"train.eval_every=0", "train.steps_cap=30"})).eval_every, 0);
}

TEST(StepsCap, ACapTooSmallForTheScheduleIsRefusedNamingIt) {
  try {
    Scheduled({"train.steps_cap=2"});
    ADD_FAILURE() << "a cap of 2 steps cannot hold three length phases";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("train.steps_cap = 2 shrinks train.steps = 600: "),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("train.length_schedule"), std::string::npos) << e.what();
  }
}

// A variant's own schedule is capped too (it is applied before the cap): the row a sweep trains,
// and the recipe its run file records, are the capped ones.
TEST(StepsCap, EverySweepRowTrainsAndRecordsTheCappedRecipe) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"train.steps=600", "train.max_length=8", "eval.lengths=[2, 8, 9]", "train.steps_cap=30",
       "run.variants=[\"fixed\", \"grow: train.length_schedule=[\\\"0:2\\\", \\\"300:8\\\"]\"]"});
  const std::vector<PlanRow> rows = SweepPlan(c, "out");
  ASSERT_EQ(rows.size(), 2u);
  for (const PlanRow& row : rows) {
    const RecipeConfig r = ParseRecipe(row.recipe, row.file);
    EXPECT_EQ(r.steps, 30) << row.label;
    EXPECT_EQ(r.steps_cap, 30) << row.label;
  }
  EXPECT_TRUE(ParseRecipe(rows[0].recipe, "fixed").length_schedule.empty());
  EXPECT_EQ(ParseRecipe(rows[1].recipe, "grow").length_schedule,
            (std::vector<std::string>{"0:2", "15:8"}));
}

}  // namespace
}  // namespace lexp
