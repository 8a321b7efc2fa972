// probe.capture and lexp eval --capture: the chosen sites land in the run file with their axes,
// hold the probe's own tensors, and capturing changes no result.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "experiments/core/run_file.h"
#include "experiments/training/eval_command.h"
#include "experiments/training/trainer.h"
#include "nn/io/hdf5.h"
#include "tests/testing/run_files.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

TEST(ProbeCapture, SitesAreStoredWithAxesAndChangeNoResult) {
  const fs::path dir = testing::FreshTempDir("probe_capture");
  RunOptions o;
  o.out_dir = (dir / "plain").string();
  ASSERT_EQ(TrainAndEvaluate(testing::TinyCopyRecipe({"model.encodings=rope"}), "rope", o).state,
            "completed");
  o.out_dir = (dir / "captured").string();
  const RecipeConfig with =
      testing::TinyCopyRecipe({"model.encodings=rope",
                               "probe.capture=[\"layer*.attn.q_pe\", \"layer1.attn.pattern\", "
                               "\"final.ln\"]"});
  ASSERT_EQ(TrainAndEvaluate(with, "rope", o).state, "completed");

  h5::Reader a(RunFilePath((dir / "plain").string(), "rope"));
  h5::Reader b(RunFilePath((dir / "captured").string(), "rope"));
  int compared = 0;
  for (const char* g : {"eval", "model"})
    testing::ExpectSameGroup(a.root().OpenGroup(g), b.root().OpenGroup(g), g, &compared);
  EXPECT_EQ(a.root().OpenGroup("train").ReadDoubles("loss"),
            b.root().OpenGroup("train").ReadDoubles("loss"));
  EXPECT_EQ(a.root().OpenGroup("analysis").ReadDoubles("entropy"),
            b.root().OpenGroup("analysis").ReadDoubles("entropy"));
  EXPECT_GT(compared, 20);

  const h5::Group p = b.root().OpenGroup("probe").OpenGroup("length_9");
  const h5::Group plain = a.root().OpenGroup("probe").OpenGroup("length_9");
  EXPECT_EQ(plain.ReadDoubles("probs"), p.ReadDoubles("probs"));
  const uint64_t T = static_cast<uint64_t>(p.AttrInt("sequence_length"));
  for (const char* site : {"layer0.attn.q_pe", "layer1.attn.q_pe"}) {
    EXPECT_EQ(p.Dims(site), (std::vector<uint64_t>{1, T, 2, 8})) << site;
    EXPECT_EQ(p.ChildAttrString(site, "axes"), "sample,query,head,channel");
  }
  EXPECT_EQ(p.Dims("final.ln"), (std::vector<uint64_t>{1, T, 16}));
  // Units by what the site holds, as the probe's own maps say theirs.
  EXPECT_EQ(p.ChildAttrString("layer1.attn.pattern", "units"),
            "attention probability, 0 where masked");
  EXPECT_EQ(p.ChildAttrString("layer0.attn.q_pe", "units"),
            "activation (model units: the residual stream's scale)");
  EXPECT_FALSE(p.Has("layer0.attn.pattern")) << "only what the globs match";
  EXPECT_FALSE(plain.Has("final.ln"));
  // The captured pattern of layer 1 is the probe's own map of layer 1 (probs: [s, l, h, q, k]).
  const auto pattern = p.ReadDoubles("layer1.attn.pattern");
  const auto probs = p.ReadDoubles("probs");
  const size_t per_layer = 2 * T * T;
  ASSERT_EQ(pattern.size(), per_layer);
  EXPECT_EQ(pattern, std::vector<double>(probs.begin() + per_layer, probs.end()));

  // lexp eval --capture on the plain run stores the same tensors as training with capture did.
  EvalCommandOptions e;
  e.run_file = RunFilePath((dir / "plain").string(), "rope");
  e.sets = {"probe.capture=[\"final.ln\"]"};
  const RunSummary s = EvaluateRunFile(e);
  ASSERT_EQ(s.state, "completed");
  h5::Reader ev(s.path);
  EXPECT_EQ(ev.root().OpenGroup("probe").OpenGroup("length_9").ReadDoubles("final.ln"),
            p.ReadDoubles("final.ln"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
