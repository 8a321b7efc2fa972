// A sweep run as a job list, row by row and in any order, then collected, gives what one
// sequential `lexp run` gives (experiments/training/job_list.h). The SLURM array itself is tested
// on a real one-node cluster by tests/slurm/slurm_array_test.sh.
#include "experiments/training/job_list.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/parallel.h"
#include "tests/testing/run_files.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

TEST(JobList, ParsesRowsRangesAndListsAndPrintsThemBack) {
  EXPECT_EQ(ParseJobList("3"), (std::vector<size_t>{3}));
  EXPECT_EQ(ParseJobList("2-5"), (std::vector<size_t>{2, 3, 4, 5}));
  EXPECT_EQ(ParseJobList("0,3,7-9,3"), (std::vector<size_t>{0, 3, 7, 8, 9}));
  for (const char* bad : {"", "x", "-1", "3-", "5-2", "1,,2", "1.5", "99999999999"})
    EXPECT_THROW(ParseJobList(bad), InputError) << bad;
  EXPECT_EQ(JobListText({4, 0, 1, 2, 7, 9, 8}), "0-2,4,7-9");
  EXPECT_EQ(JobListText({5}), "5");
}

// The rows are the models of the sweep in the order a sequential sweep trains them: per task,
// seed and key-sweep value, NoPE first; each names its run file.
TEST(JobList, PlanRowsFollowTheSequentialOrder) {
  const RecipeConfig c = testing::TinyCopyRecipe({"model.encodings=rope,nope", "run.seeds=1,2",
                                                  "run.sweep=encoding_options.rope.base",
                                                  "run.sweep_values=100,1000"});
  // Per seed: NoPE once (the rope option leaves it alone), then rope at each base.
  const auto rows = SweepPlan(c, "out");
  ASSERT_EQ(rows.size(), 6u);
  for (size_t k = 0; k < rows.size(); ++k) EXPECT_EQ(rows[k].index, k);
  EXPECT_EQ(rows[0].encoding, "nope");
  EXPECT_EQ(rows[0].seed, 1);
  EXPECT_EQ(rows[0].sweep_value, "");
  EXPECT_EQ(rows[0].file, (fs::path("out") / "nope-seed1.h5").string());
  EXPECT_EQ(rows[1].label, "rope-base100");
  EXPECT_EQ(rows[1].sweep_key, "encoding_options.rope.base");
  EXPECT_EQ(rows[1].sweep_value, "100");
  EXPECT_EQ(rows[1].file, (fs::path("out") / "rope-base100-seed1.h5").string());
  EXPECT_EQ(rows[2].sweep_value, "1000");
  EXPECT_EQ(rows[3].seed, 2);
  EXPECT_EQ(rows[3].encoding, "nope");
  const std::string table = PlanTable(rows);
  EXPECT_EQ(table.rfind("index\ttask\t", 0), 0u);
  EXPECT_NE(table.find("\n5\tcopy\trope\trope-base1000\t2\t"), std::string::npos) << table;
}

// Rows run in reverse order, the last two at once: NoPE finishes after the RoPE runs that take it
// as their JS reference. Collect analyses those again, and then every file and the summary are
// those of one sequential run; status counts the rows as they go.
TEST(JobList, RowsRunInAnyOrderThenCollectedEqualOneRun) {
  const RecipeConfig c =
      testing::TinyCopyRecipe({"model.encodings=nope,rope", "run.seeds=1,2", "train.steps=20"});
  const fs::path one = testing::FreshTempDir("joblist_one");
  const fs::path jobs = testing::FreshTempDir("joblist_jobs");
  SweepOptions so;
  so.figures = false;
  so.out_dir = one.string();
  RunRecipe(c, so);
  ASSERT_TRUE(fs::exists(one / "plan" / "recipe.toml")) << "a whole run writes its plan";

  const auto rows = SweepPlan(c, jobs.string());
  WritePlanFiles(c, rows, jobs.string());
  const RecipeConfig frozen = ReadFrozenRecipe(jobs.string());
  auto count = [&](RowState s) {
    int n = 0;
    for (const auto& r : ReadRowStates(SweepPlan(frozen, jobs.string()))) n += r.state == s;
    return n;
  };
  EXPECT_EQ(count(RowState::kPending), 4);
  SweepOptions piece;
  piece.figures = false;
  piece.out_dir = jobs.string();
  for (const std::vector<size_t>& part : {std::vector<size_t>{3}, {1}, {2, 0}}) {
    piece.rows = part;
    const auto done = RunRecipe(frozen, piece);
    ASSERT_EQ(done.size(), part.size());
    for (const auto& r : done) EXPECT_EQ(r.state, "completed") << r.label;
  }
  EXPECT_EQ(count(RowState::kDone), 4);
  EXPECT_FALSE(fs::exists(jobs / "summary.h5")) << "pieces leave the summary to collect";
  {
    h5::Reader r((jobs / "rope-seed2.h5").string());
    EXPECT_FALSE(r.root().OpenGroup("analysis").OpenGroup("geometry").HasAttr("reference"))
        << "its NoPE run was not there yet";
  }
  // Running a done row again keeps its file.
  const auto before = fs::last_write_time(jobs / "rope-seed2.h5");
  piece.rows = {3};
  EXPECT_EQ(RunRecipe(frozen, piece)[0].state, "completed");
  EXPECT_EQ(fs::last_write_time(jobs / "rope-seed2.h5"), before);

  const CollectResult res = CollectSweep(jobs.string(), false, nullptr);
  EXPECT_NE(res.report.find("collected 4 of 4 rows"), std::string::npos) << res.report;
  for (const char* f : {"nope-seed1.h5", "rope-seed1.h5", "nope-seed2.h5", "rope-seed2.h5"}) {
    EXPECT_GT(testing::ExpectSameRunFiles((one / f).string(), (jobs / f).string()), 20) << f;
  }
  for (const char* f : {"rope-seed1.h5", "rope-seed2.h5"}) {
    h5::Reader a((one / f).string()), b((jobs / f).string());
    const auto js = [](const h5::Reader& r) {
      return r.root()
          .OpenGroup("analysis")
          .OpenGroup("geometry")
          .OpenGroup("length_9")
          .ReadDoubles("js_vs_reference");
    };
    EXPECT_EQ(js(a), js(b)) << f << ": the JS divergence of the sequential run";
  }
  h5::Reader sa((one / "summary.h5").string()), sb((jobs / "summary.h5").string());
  for (const char* d : {"ruoss", "kazemnejad_exact", "in_distribution", "ruoss_max"})
    EXPECT_EQ(sa.root().OpenGroup("scores").ReadDoubles(d),
              sb.root().OpenGroup("scores").ReadDoubles(d))
        << d;

  // A missing run file and a killed one (a checkpoint only) are listed by index.
  fs::remove(jobs / "nope-seed2.h5");
  std::ofstream(jobs / "rope-seed1.ckpt.h5") << "";
  fs::remove(jobs / "rope-seed1.h5");
  const auto states = ReadRowStates(SweepPlan(frozen, jobs.string()));
  EXPECT_EQ(states[1].state, RowState::kRunning);
  EXPECT_EQ(states[2].state, RowState::kPending);
  const std::string status = StatusReport(states);
  EXPECT_NE(status.find("running       1   rows 1"), std::string::npos) << status;
  EXPECT_NE(status.find("pending       1   rows 2"), std::string::npos) << status;
  EXPECT_NE(CollectSweep(jobs.string(), false, nullptr).report.find("missing rows 1-2"),
            std::string::npos);
  fs::remove_all(one);
  fs::remove_all(jobs);
}

}  // namespace
}  // namespace lexp
