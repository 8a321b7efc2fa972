// The position-shift analysis (experiments/replay/position_shift.h; Wang et al. 2024,
// arXiv:2411.13476, Eq. 4) on trained runs: an encoding with no positions and one whose bias reads
// exact position differences do not move at all (negative controls); RoPE in fp32 moves by float
// rounding only; the same weights with the rotation in bf16 move by far more (the paper's
// observation); an absolute encoding moves by design, and the report says so.
#include "experiments/replay/position_shift.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "experiments/core/run_file.h"
#include "experiments/training/eval_command.h"
#include "experiments/training/trainer.h"
#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

class PositionShiftRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(testing::FreshTempDir("position_shift"));
    const RecipeConfig c = testing::TinyCopyRecipe(
        {"model.encodings=nope,alibi,rope,sinusoidal", "train.steps=30", "probe.replay=0",
         "probe.samples=3", "eval.lengths=5,9"});
    RunOptions o;
    o.out_dir = dir_->string();
    for (const char* e : {"nope", "alibi", "rope", "sinusoidal"})
      ASSERT_EQ(TrainAndEvaluate(c, e, o).state, "completed") << e;
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static std::string Run(const std::string& e) { return RunFilePath(dir_->string(), e); }
  static double Max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }
  static double Mean(const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  }
  static std::filesystem::path* dir_;
};
std::filesystem::path* PositionShiftRuns::dir_ = nullptr;

TEST_F(PositionShiftRuns, NoPositionsAndExactDifferencesDoNotMove) {
  for (const char* e : {"nope", "alibi"}) {
    const PositionShift ps = MeasurePositionShift(Run(e));
    ASSERT_EQ(ps.row_l1.size(), ps.shifts.size() * ps.lengths.size() * ps.layers * ps.heads);
    for (const auto& why : ps.not_applicable) EXPECT_EQ(why, "") << e;
    EXPECT_EQ(Max(ps.row_l1), 0.0) << e;
    EXPECT_EQ(Max(ps.first_key_l1), 0.0) << e;
  }
}

TEST_F(PositionShiftRuns, RopeMovesByRoundingInFp32AndByMoreInBf16) {
  const PositionShift fp32 = MeasurePositionShift(Run("rope"));
  EXPECT_EQ(fp32.precision, "matmul=fp32 rotary=fp32 logits=fp32");
  // Float rounding of the rotation at other angles: not exactly 0, far below a visible change.
  EXPECT_GT(Max(fp32.row_l1), 0.0);
  EXPECT_LT(Max(fp32.row_l1), 1e-4);
  // The same weights evaluated with the rotation in bf16: the analysis of the evaluation's file.
  EvalCommandOptions o;
  o.run_file = Run("rope");
  o.sets = {"model.precision_rotary=bf16", "probe.replay=1",
            "probe.analyses=[\"position_shift\"]"};
  o.name = "bf16rotary";
  const RunSummary s = EvaluateRunFile(o);
  ASSERT_EQ(s.state, "completed") << s.message;
  h5::Reader r(s.path);
  const h5::Group g = r.root().OpenGroup("analysis").OpenGroup("position_shift");
  EXPECT_EQ(g.AttrString("precision"), "matmul=fp32 rotary=bf16 logits=fp32");
  const std::vector<double> bf16 = g.ReadDoubles("row_l1");
  ASSERT_EQ(bf16.size(), fp32.row_l1.size());
  EXPECT_GT(Mean(bf16), 100 * Mean(fp32.row_l1));
}

TEST_F(PositionShiftRuns, AnAbsoluteEncodingMovesByDesignAndIsSaidToBeAbsolute) {
  const PositionShift ps = MeasurePositionShift(Run("sinusoidal"));
  EXPECT_EQ(ps.family, "absolute");
  // The first shift replayed; the far ones not (it moves by design at any shift).
  const size_t per_shift = ps.row_l1.size() / ps.shifts.size();
  const std::vector<double> first(ps.row_l1.begin(), ps.row_l1.begin() + per_shift);
  EXPECT_GT(Mean(first), 1e-3);
  EXPECT_EQ(ps.not_applicable[0], "");
  for (size_t k = 1; k < ps.shifts.size(); ++k) {
    EXPECT_NE(ps.not_applicable[k].find("moves by design"), std::string::npos);
    EXPECT_TRUE(std::isnan(ps.row_l1[k * per_shift]));
  }
  h5::Writer w(Run("sinusoidal"), h5::Writer::Mode::kUpdate);
  const std::string report = WritePositionShift(ps, w.root().CreateGroup("analysis"));
  w.Commit();
  EXPECT_NE(report.find("an absolute encoding: a shift changes its input by design"),
            std::string::npos)
      << report;
}

}  // namespace
}  // namespace lexp
