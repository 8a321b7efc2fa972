// `lexp pe-table`: the closed-form tables and the figure drawn from them.
#include "experiments/training/pe_table.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "experiments/training/trainer.h"
#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "pe/alibi.h"
#include "pe/t5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

TEST(PeTable, HoldsEveryRuleAndFamilyAndDrawsItsFigure) {
  const auto dir = testing::FreshTempDir("pe_table");
  PeTableOptions o;
  o.head_dim = 64;
  o.factor = 4;
  o.train_length = 2048;
  o.heads = 4;
  o.max_distance = 300;
  o.out_file = (dir / "pe.h5").string();
  WritePeTable(o);
  h5::Reader r(o.out_file);
  h5::Group rot = r.root().OpenGroup("rotary");
  EXPECT_EQ(rot.AttrString("rules"), "none,pi,ntk,ntk_by_parts,yarn,truncated_basis,llama3");
  std::vector<uint64_t> dims;
  const auto f = rot.ReadDoubles("inv_freq", &dims);
  ASSERT_EQ(dims, (std::vector<uint64_t>{7, 32}));
  for (int k = 0; k < 32; ++k) EXPECT_DOUBLE_EQ(f[32 + k], f[k] / 4) << "pi row = original / s";
  EXPECT_NEAR(f[4 * 32 + 14], 0.011627211527177573, 1e-15) << "yarn row, the reference YaRN table";
  EXPECT_NEAR(rot.ReadDoubles("mscale")[4], 1.138629436111989, 1e-15);
  const auto alibi = r.root().OpenGroup("bias").ReadDoubles("alibi", &dims);
  ASSERT_EQ(dims, (std::vector<uint64_t>{4, 301}));
  EXPECT_DOUBLE_EQ(alibi[2 * 301 + 10], -AlibiSlopes(4)[2] * 10);
  const std::string png = DrawPeTable(o.out_file);
  EXPECT_TRUE(std::filesystem::exists(png));
  EXPECT_TRUE(std::filesystem::exists(dir / "figures" / "pe_table.gp"));
  std::filesystem::remove_all(dir);
}

// --run tabulates a trained bias: for T5 (table shared by layers) b(d) is the learned bucket value.
TEST(PeTable, TabulatesTheLearnedBiasOfATrainedRun) {
  const auto dir = testing::FreshTempDir("pe_table_run");
  RunOptions ro;
  ro.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(testing::TinyCopyRecipe(), "t5", ro).state, "completed");
  PeTableOptions o;
  o.head_dim = 8;
  o.heads = 2;
  o.max_distance = 200;
  o.out_file = (dir / "pe.h5").string();
  o.runs = {RunFilePath(dir.string(), "t5")};
  WritePeTable(o);
  h5::Reader r(o.out_file);
  std::vector<uint64_t> dims;
  const auto b = r.root().OpenGroup("learned").ReadDoubles("t5", &dims);
  ASSERT_EQ(dims, (std::vector<uint64_t>{2, 2, 201}));
  h5::Reader run(o.runs[0]);
  const auto table = run.root().OpenGroup("model").ReadDoubles("pe.t5.table");  // [bucket, head]
  for (int h = 0; h < 2; ++h)
    for (int d : {0, 1, 7, 40, 200}) {
      const int bucket = T5Bucket(-d, false, 32, 128);
      EXPECT_NEAR(b[(1 * 2 + h) * 201 + d], table[bucket * 2 + h], 1e-6) << h << " " << d;
    }
  EXPECT_TRUE(std::filesystem::exists(DrawPeTable(o.out_file)));
  o.runs = {o.out_file};
  EXPECT_THROW(WritePeTable(o), InputError) << "not a run file";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
