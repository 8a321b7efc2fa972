// Recipe parsing: every bad input names the key, the file and what is allowed.
#include "experiments/core/recipe.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"

namespace lexp {
namespace {

// Returns the error message of parsing + validating `toml` (empty when it is accepted).
std::string ErrorOf(const std::string& toml, const std::vector<std::string>& sets = {}) {
  try {
    RecipeConfig c = ParseRecipe(toml, "bad.toml");
    ApplyOverrides(c, sets);
    ValidateRecipe(c);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void ExpectMentions(const std::string& msg, const std::vector<std::string>& parts) {
  ASSERT_FALSE(msg.empty()) << "accepted, but should be an error";
  for (const auto& p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(Recipe, DefaultsAreValid) { EXPECT_EQ(ErrorOf(""), ""); }

TEST(Recipe, EveryShippedRecipeParsesAndValidates) {
  int n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(LEXP_SOURCE_DIR) + "/experiments/recipes")) {
    if (e.path().extension() != ".toml") continue;
    std::ifstream f(e.path());
    const std::string text((std::istreambuf_iterator<char>(f)), {});
    EXPECT_EQ(ErrorOf(text), "") << e.path();
    ++n;
  }
  EXPECT_GE(n, 3);
}

TEST(Recipe, UnknownKeyNamesKeyFileAndAllowedKeys) {
  ExpectMentions(ErrorOf("[train]\nstpes = 10\n"),
                 {"bad.toml", "train.stpes", "not a known key", "steps", "batch_size"});
  ExpectMentions(ErrorOf("[trian]\nsteps = 10\n"), {"bad.toml", "trian", "[train]"});
}

TEST(Recipe, WrongTypeNamesKeyFileAndType) {
  ExpectMentions(ErrorOf("[train]\nsteps = \"many\"\n"),
                 {"bad.toml", "train.steps", "\"many\"", "wrong type", "integer"});
  ExpectMentions(ErrorOf("[model]\nencodings = \"rope\"\n"),
                 {"bad.toml", "model.encodings", "list of strings"});
  ExpectMentions(ErrorOf("[train]\nlr = true\n"), {"train.lr", "number"});
}

TEST(Recipe, OutOfRangeNamesTheRange) {
  ExpectMentions(ErrorOf("[train]\nsteps = 0\n"),
                 {"bad.toml", "train.steps", "out of range", "[1,"});
  ExpectMentions(ErrorOf("[model]\nlayout = \"sideways\"\n"),
                 {"model.layout", "\"decoder\"", "\"encoder\""});
  ExpectMentions(ErrorOf("[model]\nd_model = 30\nn_heads = 4\n"),
                 {"model.d_model", "multiple of model.n_heads"});
}

TEST(Recipe, UnknownEncodingTaskOrOptionListsWhatExists) {
  ExpectMentions(ErrorOf("[model]\nencodings = [\"rope\", \"xpoz\"]\n"),
                 {"bad.toml", "model.encodings", "unknown encoding 'xpoz'", "alibi", "t5"});
  ExpectMentions(ErrorOf("[task]\nname = \"sorting\"\n"),
                 {"bad.toml", "task.name", "unknown task 'sorting'", "copy", "parity_check"});
  ExpectMentions(ErrorOf("[model]\nencodings = [\"rope\"]\n[encoding_options.rope]\nbse = 10\n"),
                 {"bad.toml", "rope", "no option 'bse'", "base (default 10000)"});
  ExpectMentions(ErrorOf("[model]\nencodings = [\"rope\"]\n[encoding_options.alibi]\n"),
                 {"encoding_options.alibi", "does not train"});
}

TEST(Recipe, OverridesUseTheSameChecks) {
  EXPECT_EQ(ErrorOf("", {"train.steps=5", "model.encodings=rope,alibi", "eval.lengths=1,2,40"}),
            "");
  RecipeConfig c = ParseRecipe("", "x");
  ApplyOverrides(c, {"train.steps=5", "model.encodings=rope", "encoding_options.rope.base=500",
                     "task.name=reverse_string"});
  EXPECT_EQ(c.steps, 5);
  EXPECT_EQ(c.encodings, std::vector<std::string>{"rope"});
  EXPECT_EQ(c.encoding_options["rope"]["base"], "500");
  EXPECT_EQ(c.task, "reverse_string");
  ExpectMentions(ErrorOf("", {"train.stepz=5"}),
                 {"train.stepz", "not a recipe key", "train.steps"});
  ExpectMentions(ErrorOf("", {"train.steps=-3"}), {"train.steps", "out of range"});
  ExpectMentions(ErrorOf("", {"train.steps"}), {"expected key=value"});
}

TEST(Recipe, RoundTripsThroughItsTomlForm) {
  RecipeConfig c = ParseRecipe(
      "[train]\nsteps = 77\n[model]\nencodings = [\"t5\"]\n"
      "[encoding_options.t5]\nnum_buckets = 16\n",
      "x");
  RecipeConfig d = ParseRecipe(RecipeToToml(c), "y");
  EXPECT_EQ(RecipeToToml(c), RecipeToToml(d));
  EXPECT_EQ(d.steps, 77);
  EXPECT_EQ(d.encoding_options["t5"]["num_buckets"], "16");
}

// Variants hold quoted values ("pi: encoding_options.rope.scaling=\"pi\""): the frozen recipe of
// lexp plan and slurm, and the one stored in every run file, must read back as the same strings.
TEST(Recipe, QuotesAndBackslashesInStringsRoundTrip) {
  RecipeConfig c = ParseRecipe("[run]\nname = \"q\"\n", "x");
  ApplyOverrides(c, {R"(run.variants=["plain", "pi: encoding_options.rope.scaling=\"pi\"; encoding_options.rope.factor=2", "odd: a\\b"])"});
  ASSERT_EQ(c.variants.size(), 3u);
  const RecipeConfig d = ParseRecipe(RecipeToToml(c), "y");
  ASSERT_EQ(d.variants.size(), 3u);
  EXPECT_EQ(d.variants, c.variants);
  EXPECT_EQ(d.variants[1],
            "pi: encoding_options.rope.scaling=\"pi\"; encoding_options.rope.factor=2");
  EXPECT_EQ(d.variants[2], "odd: a\\b");
}

TEST(Recipe, EvaluationGridReachesEightTimesTheTrainingLength) {
  RecipeConfig c;
  c.train_max_length = 16;
  const auto g = c.EvalLengths();
  EXPECT_EQ(g.front(), 1);
  EXPECT_EQ(g.back(), 128);
  for (int n = 1; n <= 32; ++n) EXPECT_NE(std::find(g.begin(), g.end(), n), g.end());
  EXPECT_TRUE(std::is_sorted(g.begin(), g.end()));
  EXPECT_EQ(c.ProbeLengths(), (std::vector<int>{16, 32, 64, 128}));
}

}  // namespace
}  // namespace lexp

namespace lexp {
namespace {

// Absolute tables (learned, TUPE) and position schemes are sized by MaxSequenceTokens: it must
// hold the longest sequence of every task, in both layouts, whatever its answer's length (MQAR's
// answer slots are twice its input).
TEST(Recipe, MaxSequenceTokensHoldsEveryTasksLongestSequence) {
  for (const auto& info : ListTasks()) {
    const auto task = CreateTask(info.name, {});
    for (const char* layout : {"decoder", "encoder"}) {
      if (std::string(layout) == "encoder" && !task->SupportsEncoder()) continue;
      RecipeConfig c;
      c.task = info.name;
      c.layout = layout;
      c.train_max_length = std::min(5, task->MaxLength());
      const int M = std::min(20, task->MaxLength());
      c.eval_lengths = {std::max(task->MinLength(), 2), M};
      c.probe_lengths = {M};
      const SequenceLayout lay(*task, c.layout == "encoder" ? Layout::kEncoder : Layout::kDecoder);
      EXPECT_GE(c.MaxSequenceTokens(), lay.SequenceLengthFor(M)) << info.name << " " << layout;
    }
  }
}

}  // namespace
}  // namespace lexp
