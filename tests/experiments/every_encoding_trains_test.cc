// Every registered encoding trains for a few steps on a tiny model, causal and bidirectional: the
// loss stays finite and falls (issue 3's "every encoding trains from a recipe").
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "experiments/trainer.h"
#include "nn/io/hdf5.h"
#include "pe/registry.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

struct Case {
  std::string encoding;
  std::string layout;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.encoding << " " << c.layout; }

std::vector<Case> AllCases() {
  std::vector<Case> out;
  for (const auto& e : ListEncodings())
    for (const char* layout : {"decoder", "encoder"}) out.push_back({e.name, layout});
  return out;
}

class EveryEncoding : public ::testing::TestWithParam<Case> {};

TEST_P(EveryEncoding, TrainsWithAFallingFiniteLoss) {
  const Case& tc = GetParam();
  std::vector<std::string> sets = {"model.encodings=" + tc.encoding,
                                   "model.layout=" + tc.layout,
                                   "model.n_layers=1",
                                   "model.d_model=32",
                                   "train.steps=120",
                                   "train.batch_size=16",
                                   "train.lr=3e-3",
                                   "eval.lengths=5,9",
                                   "probe.lengths=5",
                                   "probe.samples=1"};
  if (tc.encoding == "rope_partial") sets.push_back("encoding_options.rope_partial.fraction=0.5");
  const RecipeConfig c = testing::TinyCopyRecipe(sets);
  const auto dir = testing::FreshTempDir("every_" + tc.encoding + "_" + tc.layout);
  RunOptions o;
  o.out_dir = dir.string();
  const RunSummary s = TrainAndEvaluate(c, tc.encoding, o);
  ASSERT_EQ(s.state, "completed") << s.message;
  h5::Reader r(s.path);
  const std::vector<double> loss = r.root().OpenGroup("train").ReadDoubles("loss");
  ASSERT_EQ(loss.size(), 120u);
  for (double l : loss) ASSERT_TRUE(std::isfinite(l));
  const double first = std::accumulate(loss.begin(), loss.begin() + 20, 0.0) / 20;
  const double last = std::accumulate(loss.end() - 20, loss.end(), 0.0) / 20;
  EXPECT_LT(last, 0.8 * first) << "mean loss of the first / last 20 steps: " << first << " / "
                               << last;
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryEncoding, ::testing::ValuesIn(AllCases()),
                         [](const auto& param_info) {
                           return param_info.param.encoding + "_" + param_info.param.layout;
                         });

}  // namespace
}  // namespace lexp
