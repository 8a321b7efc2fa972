// train.init_from: a run starts from another run's trained weights (fine-tuning, as the RoPE
// base-scaling law's setting needs); a missing file is named with its key.
#include <gtest/gtest.h>

#include <filesystem>

#include "experiments/training/trainer.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/optim/nf4.h"
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

namespace lexp {
namespace {

namespace fs = std::filesystem;

// LoRA fine-tunings of one trained rope run (the source, trained once for the suite).
class LoraFineTune : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testing::FreshTempDir("fine_tune_lora");
    RunOptions o;
    o.out_dir = (dir_ / "source").string();
    const RunSummary s = TrainAndEvaluate(
        testing::TinyCopyRecipe({"model.encodings=rope", "train.steps=30"}), "rope", o);
    LEXP_CHECK(s.state == "completed", "the source run did not complete");
    source_ = RunFilePath(o.out_dir, "rope");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // The recipe that fine-tunes the source with these overrides.
  static RecipeConfig FromSource(std::vector<std::string> sets) {
    sets.insert(sets.begin(), {"model.encodings=rope", "train.init_from=" + source_});
    return testing::TinyCopyRecipe(sets);
  }
  static RunOptions Into(const std::string& name) {
    RunOptions o;
    o.out_dir = (dir_ / name).string();
    return o;
  }
  // Stopped after 8 steps and resumed into `name`: the same training history and `weight` as the
  // uninterrupted run `done`.
  static void ExpectResumeEquals(const RecipeConfig& recipe, const std::string& name,
                                 const h5::Reader& done, const std::string& weight) {
    RunOptions o = Into(name);
    o.stop_after_steps = 8;
    ASSERT_EQ(TrainAndEvaluate(recipe, "rope", o).state, "interrupted");
    o.stop_after_steps = 0;
    o.resume = true;
    ASSERT_EQ(TrainAndEvaluate(recipe, "rope", o).state, "completed");
    h5::Reader r(RunFilePath(o.out_dir, "rope"));
    EXPECT_EQ(r.root().OpenGroup("train").ReadDoubles("loss"),
              done.root().OpenGroup("train").ReadDoubles("loss"));
    EXPECT_EQ(r.root().OpenGroup("model").ReadDoubles(weight),
              done.root().OpenGroup("model").ReadDoubles(weight));
  }

  static inline fs::path dir_;
  static inline std::string source_;
};

// Only the adapters train: weights it does not target are the source's bit for bit, the targeted
// ones are W0 + (alpha / r) A B with the adapters the file holds, the counts say what trained, and
// an interrupted run resumes to the same file.
TEST_F(LoraFineTune, TrainsOnlyItsAdaptersAndResumes) {
  const RecipeConfig lora =
      FromSource({"train.steps=20", "train.lora_rank=2", "train.lora_alpha=4",
                  "train.lora_targets=q,v", "train.lr=1e-2", "train.checkpoint_every=1000"});
  RunOptions ob = Into("lora");
  ASSERT_EQ(TrainAndEvaluate(lora, "rope", ob).state, "completed");
  h5::Reader ra(source_), rb(RunFilePath(ob.out_dir, "rope"));
  const h5::Group ma = ra.root().OpenGroup("model"), mb = rb.root().OpenGroup("model");
  for (const char* name : {"tok_emb", "layer0.mlp.fc1.w", "layer1.attn.proj.w", "head.w",
                           "layer0.ln1.g", "layer1.attn.qkv.b"})
    EXPECT_EQ(ma.ReadDoubles(name), mb.ReadDoubles(name)) << name << " is frozen";
  // Targets: q (columns 0..15) and v (32..47) of the fused [16, 48] projection; k untouched.
  const auto w0 = ma.ReadDoubles("layer1.attn.qkv.w"), w = mb.ReadDoubles("layer1.attn.qkv.w");
  const auto Aq = mb.ReadDoubles("layer1.attn.q.lora_A"),
             Bq = mb.ReadDoubles("layer1.attn.q.lora_B");
  const auto A = mb.ReadDoubles("layer1.attn.v.lora_A"), B = mb.ReadDoubles("layer1.attn.v.lora_B");
  ASSERT_EQ(A.size(), 16u * 2);
  ASSERT_EQ(B.size(), 2u * 16);
  ASSERT_EQ(Aq.size(), 16u * 2);
  double moved = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 48; ++j) {
      double want = w0[i * 48 + j];
      for (int r = 0; r < 2; ++r) {
        if (j < 16) want += 2.0 * Aq[i * 2 + r] * Bq[r * 16 + j];
        if (j >= 32) want += 2.0 * A[i * 2 + r] * B[r * 16 + (j - 32)];
      }
      if (j >= 16 && j < 32) {
        EXPECT_EQ(w[i * 48 + j], w0[i * 48 + j]) << "k is not a target";
      }
      EXPECT_NEAR(w[i * 48 + j], want, 1e-5) << i << "," << j;
      moved = std::max(moved, std::abs(w[i * 48 + j] - w0[i * 48 + j]));
    }
  EXPECT_GT(moved, 1e-4) << "the adapters trained";
  EXPECT_EQ(rb.root().AttrInt("trainable_parameters"), 2 * 2 * (16 * 2 + 2 * 16));
  EXPECT_EQ(rb.root().AttrInt("total_parameters"),
            ra.root().AttrInt("total_parameters") + 2 * 2 * (16 * 2 + 2 * 16));
  ExpectResumeEquals(lora, "lora_resumed", rb, "layer1.attn.qkv.w");
}

// LongMem: the side network (a copy of backbone block 1, plus its final norm and its memory's
// gate) is all that trains; the backbone is the source's bit for bit, the counts say so, and the
// run resumes to the same file.
TEST_F(LoraFineTune, LongMemTrainsItsSideNetworkOnly) {
  const RecipeConfig longmem =
      FromSource({"train.steps=20", "model.longmem_layers=1", "model.longmem_memory_layer=0",
                  "model.pattern=\"sliding_window\"", "model.pattern_window=3",
                  "model.pattern_when=\"always\"", "model.knn_top_k=4", "model.knn_chunk=2",
                  "train.lr=1e-2", "train.checkpoint_every=1000"});
  RunOptions ob = Into("longmem");
  ASSERT_EQ(TrainAndEvaluate(longmem, "rope", ob).state, "completed");
  h5::Reader ra(source_), rb(RunFilePath(ob.out_dir, "rope"));
  const h5::Group ma = ra.root().OpenGroup("model"), mb = rb.root().OpenGroup("model");
  for (const std::string& name : ma.Children())
    EXPECT_EQ(ma.ReadDoubles(name), mb.ReadDoubles(name)) << name << " is the frozen backbone";
  // The side block started as block 1 and trained.
  for (const std::string part : {"attn.qkv.w", "mlp.fc1.w", "ln2.g"}) {
    const auto side = mb.ReadDoubles("side0." + part), start = ma.ReadDoubles("layer1." + part);
    ASSERT_EQ(side.size(), start.size());
    double moved = 0;
    for (size_t i = 0; i < side.size(); ++i) moved = std::max(moved, std::abs(side[i] - start[i]));
    EXPECT_GT(moved, 1e-4) << part;
  }
  const int64_t C = 16, F = 64,
                block = 2 * 2 * C + (C * 3 * C + 3 * C) + (C * C + C) + (C * F + F) + (F * C + C);
  EXPECT_EQ(rb.root().AttrInt("trainable_parameters"), block + 2 * C + 2);  // + norm + gate
  EXPECT_EQ(rb.root().AttrInt("total_parameters"),
            ra.root().AttrInt("total_parameters") + block + 2 * C + 2);
  ExpectResumeEquals(longmem, "longmem_resumed", rb, "side0.attn.qkv.w");
}

// LongLoRA's fine-tuning: the adapters, the token embedding and every LayerNorm train; the other
// weights stay the source's.
TEST_F(LoraFineTune, LongLoraAlsoTrainsEmbeddingsAndNorms) {
  RunOptions ob = Into("longlora");
  ASSERT_EQ(TrainAndEvaluate(FromSource({"train.steps=10", "train.lora_rank=2",
                                         "train.lora_also_train=embeddings,norms",
                                         "model.pattern=shifted_sparse", "model.pattern_when=train",
                                         "train.lr=1e-2"}),
                             "rope", ob)
                .state,
            "completed");
  h5::Reader ra(source_), rb(RunFilePath(ob.out_dir, "rope"));
  const h5::Group ma = ra.root().OpenGroup("model"), mb = rb.root().OpenGroup("model");
  for (const char* name : {"tok_emb", "layer0.ln1.g", "layer1.ln2.b", "ln_f.g"})
    EXPECT_NE(ma.ReadDoubles(name), mb.ReadDoubles(name)) << name << " trains";
  for (const char* name : {"head.w", "layer0.mlp.fc1.w", "layer1.attn.proj.w"})
    EXPECT_EQ(ma.ReadDoubles(name), mb.ReadDoubles(name)) << name << " is frozen";
  // Adapters 2 layers x (q, v) x (16 x 2 + 2 x 16); embedding 16 x vocab; 5 LayerNorms of 2 x 16.
  const int64_t vocab = static_cast<int64_t>(ma.ReadDoubles("tok_emb").size()) / 16;
  EXPECT_EQ(rb.root().AttrInt("trainable_parameters"), 256 + 16 * vocab + 5 * 32);
  EXPECT_EQ(rb.root().AttrInt("total_parameters"), ra.root().AttrInt("total_parameters") + 256);
}

// LongQLoRA's base: the frozen layer matrices are their NF4 round trip, the adapters on top; the
// untargeted layer matrices are the source's NF4 round trip exactly.
TEST_F(LoraFineTune, Nf4BaseHoldsTheFrozenMatricesAsNf4StoresThem) {
  RunOptions ob = Into("nf4");
  ASSERT_EQ(
      TrainAndEvaluate(FromSource({"train.steps=5", "train.lora_rank=2", "train.lora_base=nf4"}),
                       "rope", ob)
          .state,
      "completed");
  h5::Reader ra(source_), rb(RunFilePath(ob.out_dir, "rope"));
  auto w = ra.root().OpenGroup("model").ReadDoubles("layer0.mlp.fc1.w");
  std::vector<float> f(w.begin(), w.end());
  Nf4RoundTrip(f.data(), static_cast<long>(f.size()));
  const auto got = rb.root().OpenGroup("model").ReadDoubles("layer0.mlp.fc1.w");
  ASSERT_EQ(got.size(), f.size());
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(got[i], static_cast<double>(f[i])) << i;
  EXPECT_NE(got, w) << "quantized";
  EXPECT_EQ(rb.root().OpenGroup("model").ReadDoubles("tok_emb"),
            ra.root().OpenGroup("model").ReadDoubles("tok_emb"))
      << "embeddings are not layer matrices";
}

}  // namespace
}  // namespace lexp
