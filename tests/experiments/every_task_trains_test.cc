// Every registered task trains from a recipe on a tiny model, in every layout it supports: the run
// completes with a finite loss and evaluates every requested length (issue 4: "every task trains
// from a recipe"). Learning itself is not asserted: 60 steps do not solve parity.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "experiments/tasks/task.h"
#include "experiments/trainer.h"
#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

struct Case {
  std::string task;
  std::string layout;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.task << " " << c.layout; }

std::vector<Case> AllCases() {
  std::vector<Case> out;
  for (const auto& t : ListTasks())
    for (const char* layout : {"decoder", "encoder"})
      if (std::string(layout) == "decoder" || CreateTask(t.name, {})->SupportsEncoder())
        out.push_back({t.name, layout});
  return out;
}

class EveryTask : public ::testing::TestWithParam<Case> {};

TEST_P(EveryTask, TrainsFromARecipeAndEvaluatesEveryLength) {
  const Case& tc = GetParam();
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"task.name=" + tc.task, "task.vocab=0", "model.layout=" + tc.layout, "model.n_layers=1",
       "model.encodings=alibi", "train.steps=60", "eval.lengths=1,2,5,9", "probe.lengths=5"});
  const auto dir = testing::FreshTempDir("every_task_" + tc.task + "_" + tc.layout);
  RunOptions o;
  o.out_dir = dir.string();
  const RunSummary s = TrainAndEvaluate(c, "alibi", o);
  ASSERT_EQ(s.state, "completed") << s.message;
  h5::Reader r(s.path);
  for (double l : r.root().OpenGroup("train").ReadDoubles("loss")) ASSERT_TRUE(std::isfinite(l));
  const auto acc = r.root().OpenGroup("eval").ReadDoubles("token_accuracy");
  ASSERT_EQ(acc.size(), 4u);
  for (double a : acc) EXPECT_TRUE(a >= 0 && a <= 1);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryTask, ::testing::ValuesIn(AllCases()),
                         [](const auto& param_info) {
                           return param_info.param.task + "_" + param_info.param.layout;
                         });

}  // namespace
}  // namespace lexp
