// train.init_from: a run starts from another run's trained weights (fine-tuning, as the RoPE
// base-scaling law's setting needs); a missing file is named with its key.
#include <gtest/gtest.h>

#include <filesystem>

#include "experiments/training/trainer.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

TEST(FineTune, StartsFromTheGivenRunsWeights) {
  const auto dir = testing::FreshTempDir("fine_tune");
  RunOptions o;
  o.out_dir = (dir / "a").string();
  std::filesystem::create_directories(o.out_dir);
  const RecipeConfig a = testing::TinyCopyRecipe({"model.encodings=rope", "train.steps=60"});
  ASSERT_EQ(TrainAndEvaluate(a, "rope", o).state, "completed");
  const std::string from = RunFilePath(o.out_dir, "rope");
  // One step at a negligible learning rate: the fine-tuned model evaluates like its source, and
  // unlike the same recipe from a random start.
  const std::vector<std::string> one = {"model.encodings=rope", "train.steps=1", "train.lr=1e-8",
                                        "train.warmup_steps=0"};
  auto with = one;
  with.push_back("train.init_from=" + from);
  RunOptions ob = o, oc = o;
  ob.out_dir = (dir / "b").string();
  oc.out_dir = (dir / "c").string();
  std::filesystem::create_directories(ob.out_dir);
  std::filesystem::create_directories(oc.out_dir);
  const RunSummary b = TrainAndEvaluate(testing::TinyCopyRecipe(with), "rope", ob);
  const RunSummary c = TrainAndEvaluate(testing::TinyCopyRecipe(one), "rope", oc);
  ASSERT_EQ(b.state, "completed");
  h5::Reader ra(from);
  const auto loss_a = ra.root().OpenGroup("eval").ReadDoubles("loss");
  for (size_t e = 0; e < loss_a.size(); ++e) {
    EXPECT_NEAR(b.eval[e].loss, loss_a[e], 1e-4 * loss_a[e]) << e;
    EXPECT_GT(std::abs(c.eval[e].loss - loss_a[e]), 1e-2) << e;
  }
  h5::Reader rb(RunFilePath(ob.out_dir, "rope"));
  EXPECT_EQ(rb.root().AttrString("init_from"), from);
  // A missing file is an input error that names the key.
  auto bad = one;
  bad.push_back("train.init_from=" + (dir / "missing.h5").string());
  try {
    TrainAndEvaluate(testing::TinyCopyRecipe(bad), "rope", oc);
    ADD_FAILURE() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("train.init_from"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
