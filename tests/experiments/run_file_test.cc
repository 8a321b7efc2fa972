// The run file module (experiments/core/run_file.h): what a run writes reads back typed and writes
// the same groups again; states are an enum read by name, and anything else is an input error
// naming the file.
#include "experiments/core/run_file.h"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>

#include "experiments/training/sweep.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "tests/testing/run_files.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

TEST(RunFile, WhatARunWritesReadsBackAndWritesTheSameGroups) {
  const fs::path dir = testing::FreshTempDir("run_file");
  RecipeConfig c = testing::TinyCopyRecipe({"model.encodings=rope", "train.steps=20"});
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  RunRecipe(c, so);
  const std::string path = (dir / "rope.h5").string();

  const RunFile f = RunFile::Read(path, true);
  EXPECT_EQ(f.encoding, "rope");
  EXPECT_EQ(f.state, RunState::kCompleted);
  EXPECT_EQ(f.train.step.size(), 20u);
  EXPECT_EQ(f.eval.size(), 3u);
  ASSERT_EQ(f.probes.size(), 2u);
  EXPECT_EQ(f.probes[1].length, 9);
  EXPECT_FALSE(f.probes[1].logits.empty());
  EXPECT_EQ(f.recipe.steps, 20);
  EXPECT_EQ(f.recipe.source_name, "tiny.toml");

  const std::string copy = (dir / "copy.h5").string();
  f.Write(copy);
  EXPECT_EQ(ReadRunFileHead(copy).state, RunState::kAnalyzing) << "completed once analysed";
  h5::Reader a(path), b(copy);
  int compared = 0;
  for (const char* g : {"config", "encoding", "train", "eval", "probe"})
    testing::ExpectSameGroup(a.root().OpenGroup(g), b.root().OpenGroup(g), g, &compared);
  EXPECT_GT(compared, 25);
  const RunFile again = RunFile::Read(copy, true);
  EXPECT_EQ(again.train.loss, f.train.loss);
  EXPECT_EQ(again.probes[0].probs, f.probes[0].probs);
  EXPECT_EQ(again.probes[1].entropy, f.probes[1].entropy);
  fs::remove_all(dir);
}

// Text attributes and datasets are variable-length UTF-8, which h5py reads as str (fixed-length
// strings read as bytes, b'rope').
TEST(RunFile, TextIsVariableLengthUtf8) {
  const fs::path dir = testing::FreshTempDir("run_file_text");
  const std::string path = (dir / "failed.h5").string();
  WriteFailedRunFile(testing::TinyCopyRecipe({}), "rope", path, "why");
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t a = H5Aopen(f, "encoding", H5P_DEFAULT);
  const hid_t at = H5Aget_type(a);
  EXPECT_GT(H5Tis_variable_str(at), 0);
  EXPECT_EQ(H5Tget_cset(at), H5T_CSET_UTF8);
  const hid_t d = H5Dopen2(f, "/config/recipe", H5P_DEFAULT);
  const hid_t dt = H5Dget_type(d);
  EXPECT_GT(H5Tis_variable_str(dt), 0);
  H5Tclose(dt);
  H5Dclose(d);
  H5Tclose(at);
  H5Aclose(a);
  H5Fclose(f);
  EXPECT_EQ(ReadRunFileHead(path).encoding, "rope");
  fs::remove_all(dir);
}

TEST(RunFile, StatesAreReadByNameAndAnythingElseNamesTheFile) {
  for (const RunState s : {RunState::kAnalyzing, RunState::kCompleted, RunState::kDiverged,
                           RunState::kInterrupted, RunState::kFailed})
    EXPECT_EQ(HasFinalWeights(s), HasFinalWeights(std::string(RunStateName(s)))) << RunStateName(s);
  EXPECT_TRUE(HasFinalWeights(RunState::kAnalyzing));
  EXPECT_FALSE(HasFinalWeights(RunState::kDiverged));
  const fs::path dir = testing::FreshTempDir("run_file_states");
  const std::string odd = (dir / "odd.h5").string(), none = (dir / "none.h5").string();
  {
    h5::Writer w(odd);
    w.root().SetAttr("format", "lexp-run/3");
    w.root().CreateGroup("status").SetAttr("state", "resting");
    w.Commit();
  }
  {
    h5::Writer w(none);
    w.root().SetAttr("encoding", "rope");
    w.Commit();
  }
  try {
    ReadRunFileHead(odd);
    ADD_FAILURE() << "an unknown state was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("odd.h5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("resting"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ReadRunFileHead(none), InputError);
  RecipeConfig c = testing::TinyCopyRecipe({});
  const std::string failed = (dir / "failed.h5").string();
  WriteFailedRunFile(c, "rope", failed, "why it failed");
  const RunFileHead h = ReadRunFileHead(failed);
  EXPECT_EQ(h.state, RunState::kFailed);
  EXPECT_EQ(h.message, "why it failed");
  EXPECT_EQ(h.encoding, "rope");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
