// The `lexp` binary fuzzed with bad input, as a user meets it: a table of bad recipes,
// overrides, paths and corrupted files, each with the exit code and a fragment of the message it
// must print; every documented exit code (0, 1, 2, 3); and runs killed at many points while they
// write, after which no file looks complete that is not and --resume finishes the run into the
// files an uninterrupted run writes.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "experiments/core/recipe.h"
#include "nn/io/hdf5.h"
#include "tests/testing/lexp_process.h"
#include "tests/testing/run_files.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

const std::string kLexp = testing::kLexpBinary;

// A recipe that trains in well under a second: every bad-input case starts from it.
const char* kTinyRecipe = R"(
[task]
name = "copy"
vocab = 12
[model]
d_model = 16
n_heads = 2
n_layers = 1
encodings = ["rope"]
[train]
max_length = 4
steps = 30
batch_size = 8
warmup_steps = 3
log_every = 10
checkpoint_every = 10
[eval]
lengths = [2, 4, 6]
samples = 8
batch_size = 8
[probe]
lengths = [4]
samples = 2
stored_samples = 1
)";

using Result = testing::LexpResult;
using testing::Slurp;

// Runs lexp in `cwd` with `args` (and `env` assignments before it), capturing both streams.
Result Lexp(const fs::path& cwd, const std::vector<std::string>& args,
            const std::string& env = "") {
  return testing::RunLexp(cwd, args, env);
}

// Every file under `dir`, relative to it.
std::vector<std::string> Files(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

// A user's error names their input, never lexp's source.
const std::regex kSourceLocation(R"([A-Za-z_]+\.(cc|h):[0-9]+)");

struct BadInput {
  std::string what;
  std::vector<std::string> args;  // after `lexp`; RECIPE is the tiny recipe's path
  int code;
  std::string fragment;
};

// The exit code and message fragment the table expects, and no lexp source location.
void ExpectRefused(const BadInput& bad, const Result& r) {
  EXPECT_EQ(r.code, bad.code) << bad.what << "\n" << r.err;
  EXPECT_NE(r.err.find(bad.fragment), std::string::npos)
      << bad.what << ": '" << bad.fragment << "' not in: " << r.err;
  EXPECT_FALSE(std::regex_search(r.err, kSourceLocation))
      << bad.what << ": a user's error carries a source location: " << r.err;
}

class CliFuzz : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = testing::FreshTempDir("cli_fuzz");
    std::ofstream(root_ / "tiny.toml") << kTinyRecipe;
    fs::create_directories(root_ / "somedir");
    // One completed run to corrupt in the file cases.
    const Result r = Lexp(root_, {"run", "tiny.toml", "--out", "good", "--no-figures"});
    ASSERT_EQ(r.code, 0) << r.err;
    good_ = root_ / "good" / "rope.h5";
    ASSERT_TRUE(fs::exists(good_));
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  // A copy of the good run file, changed by `edit` through the HDF5 C API.
  // A copy of the good run file changed by `edit` (raw HDF5, as another program would) and then
  // resealed (h5::Reseal), so that its checksums hold and the checks behind them are what refuses
  // it; reseal = false leaves the dataset and attribute checksums as they were (only the seal of
  // the file's bytes is renewed), for the refusal by those checksums.
  static std::string Corrupt(const std::string& name, const std::function<void(hid_t)>& edit,
                             bool reseal = true) {
    const fs::path dir = root_ / "corrupt";
    fs::create_directories(dir);
    const fs::path p = dir / (name + ".h5");
    fs::copy_file(good_, p, fs::copy_options::overwrite_existing);
    const hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    edit(f);
    H5Fclose(f);
    if (reseal)
      h5::Reseal(p.string());
    else
      h5::RestampFileSeal(p.string());  // the file's bytes sealed, its dataset checksums stale
    return p.string();
  }

  static fs::path root_, good_;
};
fs::path CliFuzz::root_, CliFuzz::good_;

void ReplaceDoubles(hid_t file, const char* name, const std::vector<double>& values) {
  H5Ldelete(file, name, H5P_DEFAULT);
  const hsize_t n = values.size();
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t ds =
      H5Dcreate2(file, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(ds);
  H5Sclose(space);
}

// The same as float32, the type lexp stores weights in.
void ReplaceFloats(hid_t file, const char* name, const std::vector<float>& values) {
  H5Ldelete(file, name, H5P_DEFAULT);
  const hsize_t n = values.size();
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t ds =
      H5Dcreate2(file, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(ds);
  H5Sclose(space);
}

// A variable-length UTF-8 string attribute, as h5py writes Python strings by default.
void SetVariableLengthString(hid_t obj, const char* name, const char* value) {
  H5Adelete(obj, name);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, type, &value);
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
}

TEST_F(CliFuzz, BadRecipesAndOverridesExitTwoNamingTheKeyAndWriteNothing) {
  const std::vector<BadInput> table = {
      {"unknown key", {"run", "RECIPE", "--set", "train.stepz=3"}, 2, "train.stepz"},
      {"wrong type", {"run", "RECIPE", "--set", "train.steps=many"}, 2, "train.steps"},
      {"out of range", {"run", "RECIPE", "--set", "train.steps=0"}, 2, "train.steps"},
      {"NaN learning rate", {"run", "RECIPE", "--set", "train.lr=nan"}, 2, "train.lr"},
      {"infinite learning rate", {"run", "RECIPE", "--set", "train.lr=inf"}, 2, "train.lr"},
      {"unknown encoding", {"run", "RECIPE", "--set", "model.encodings=ropey"}, 2, "ropey"},
      {"a capture site of a layer the model lacks",
       {"run", "RECIPE", "--set", "probe.capture=layer7.attn.q"},
       2,
       "probe.capture: 'layer7.attn.q' matches no capture site"},
      {"a negative steps cap", {"run", "RECIPE", "--set", "train.steps_cap=-1"}, 2,
       "train.steps_cap"},
      {"a steps cap too small for the length schedule's phases",
       {"run", "RECIPE", "--set", "train.length_schedule=0:2,1:3,2:4", "--set",
        "train.steps_cap=2"},
       2,
       "train.steps_cap = 2 shrinks train.steps = 30: "},
      {"a length schedule not ending at train.max_length",
       {"run", "RECIPE", "--set", "train.length_schedule=0:2,10:3"},
       2,
       "train.length_schedule: the last length is 3"},
      {"an evaluation during training at a length the evaluation skips",
       {"run", "RECIPE", "--set", "train.eval_every=5", "--set", "train.eval_every_lengths=7"},
       2,
       "train.eval_every_lengths: length 7 is not one of the evaluation lengths"},
      {"scratchpad components out of order",
       {"run", "RECIPE", "--set", "task.name=parity", "--set", "task.vocab=0", "--set",
        "task.scratchpad=ci"},
       2,
       "task.scratchpad = \"ci\": the components are a subset of i (input)"},
      {"an unknown text corpus",
       {"run", "RECIPE", "--set", "task.name=text_lm", "--set", "task.vocab=0", "--set",
        "task.corpus=wikipedia"},
       2,
       "task.corpus = \"wikipedia\"; allowed: fortunes, kjv, python"},
      {"a text corpus for a task that reads none",
       {"run", "RECIPE", "--set", "task.corpus=kjv"},
       2,
       "task.corpus = \"kjv\" chooses text_lm's text; task 'copy' reads none"},
      {"a text corpus given a number",
       {"run", "RECIPE", "--set", "task.name=text_lm", "--set", "task.vocab=0", "--set",
        "task.corpus=7"},
       2,
       "task.corpus"},
      {"a scratchpad for a task without one",
       {"run", "RECIPE", "--set", "task.scratchpad=icovr"},
       2,
       "has no scratchpad; it is defined for addition, summation, parity"},
      {"a negative evaluation interval",
       {"run", "RECIPE", "--set", "train.eval_every=-1"},
       2,
       "train.eval_every"},
      {"a length schedule entry that is not STEP:LENGTH",
       {"run", "RECIPE", "--set", "train.length_schedule=0-2"},
       2,
       "'0-2' is not STEP:LENGTH"},
      {"an unknown LoRA target",
       {"run", "RECIPE", "--set", "train.lora_rank=2", "--set", "train.lora_targets=q,w"},
       2,
       "train.lora_targets: 'w' is not a LoRA target; allowed: q, k, v, o, mlp"},
      {"a LoRA rank above the width",
       {"run", "RECIPE", "--set", "train.lora_rank=100"},
       2,
       "train.lora_rank = 100 exceeds model.d_model"},
      {"capture without stored samples",
       {"run", "RECIPE", "--set", "probe.capture=final.ln", "--set", "probe.stored_samples=0"},
       2,
       "probe.stored_samples is 0"},
      {"unknown option", {"run", "RECIPE", "--set", "encoding_options.rope.bse=3"}, 2, "bse"},
      {"probe length beyond the task",
       {"run", "RECIPE", "--set", "probe.lengths=50000000"},
       2,
       "probe.lengths"},
      {"memory the machine does not have",
       {"run", "RECIPE", "--set", "probe.lengths=1048576"},
       2,
       "needs about"},
      {"lambda cap beyond every sequence",
       {"run", "RECIPE", "--set", "model.encodings=transformer_xl", "--set", "model.pattern=lambda",
        "--set", "model.pattern_limit=1000000"},
       2,
       "model.pattern_limit"},
      {"negative recurrence memory",
       {"run", "RECIPE", "--set", "model.pattern=recurrence", "--set", "model.pattern_memory=-4"},
       2,
       "model.pattern_memory"},
      {"memory layer beyond the model",
       {"run", "RECIPE", "--set", "model.pattern=sliding_window", "--set", "model.knn_layer=7"},
       2,
       "model.knn_layer = 7 is not a layer"},
      {"memory layer without a pattern",
       {"run", "RECIPE", "--set", "model.knn_layer=0"},
       2,
       "with pattern = \"full\" there are none"},
      {"unknown memory merge",
       {"run", "RECIPE", "--set", "model.pattern=sliding_window", "--set", "model.knn_layer=0",
        "--set", "model.knn_merge=average"},
       2,
       "model.knn_merge"},
      {"crossbatch without a memory layer",
       {"run", "RECIPE", "--set", "model.knn_crossbatch=4"},
       2,
       "model.knn_crossbatch = 4 mixes the memories of a memory layer"},
      {"crossbatch of no document",
       {"run", "RECIPE", "--set", "model.pattern=sliding_window", "--set", "model.knn_layer=0",
        "--set", "model.knn_crossbatch=0"},
       2,
       "model.knn_crossbatch"},
      {"LongMem without a backbone",
       {"run", "RECIPE", "--set", "model.longmem_layers=1"},
       2,
       "model.longmem_layers trains a side network beside a trained backbone; set "
       "train.init_from"},
      {"LongMem side network not dividing the backbone",
       {"run", "RECIPE", "--set", "model.n_layers=3", "--set", "model.longmem_layers=2", "--set",
        "train.init_from=x.h5"},
       2,
       "model.n_layers = 3 must be a multiple"},
      {"LongMem memory layer beyond the side network",
       {"run", "RECIPE", "--set", "model.longmem_layers=1", "--set", "train.init_from=x.h5",
        "--set", "model.longmem_memory_layer=1"},
       2,
       "model.longmem_memory_layer = 1 is not a side block"},
      {"LongMem memory without a side network",
       {"run", "RECIPE", "--set", "model.longmem_memory_layer=0"},
       2,
       "set model.longmem_layers too"},
      {"LongMem with its own memory layer",
       {"run", "RECIPE", "--set", "model.longmem_layers=1", "--set", "train.init_from=x.h5",
        "--set", "model.pattern=sliding_window", "--set", "model.knn_layer=0"},
       2,
       "model.longmem_layers and model.knn_layer exclude each other"},
      {"memory chunks larger than the retrieval",
       {"run", "RECIPE", "--set", "model.pattern=sliding_window", "--set", "model.knn_layer=0",
        "--set", "model.knn_top_k=2", "--set", "model.knn_chunk=4"},
       2,
       "model.knn_chunk = 4 exceeds model.knn_top_k = 2"},
      {"unknown precision",
       {"run", "RECIPE", "--set", "model.precision=fp16"},
       2,
       "model.precision"},
      {"unknown rotary precision",
       {"run", "RECIPE", "--set", "model.precision_rotary=half"},
       2,
       "model.precision_rotary"},
      {"bf16 logits with DA",
       {"run", "RECIPE", "--set", "model.encodings=da", "--set", "model.precision=bf16"},
       2,
       "encoding 'da' recomputes its logits in fp32"},
      {"precision of the wrong type",
       {"run", "RECIPE", "--set", "model.precision_logits=16"},
       2,
       "model.precision_logits"},
      {"landmarks with a pattern",
       {"run", "RECIPE", "--set", "model.landmark_block=4", "--set",
        "model.pattern=sliding_window"},
       2,
       "model.pattern must be \"full\""},
      {"landmarks with an absolute encoding",
       {"run", "RECIPE", "--set", "model.landmark_block=4", "--set", "model.encodings=sinusoidal"},
       2,
       "encoding 'sinusoidal' adds positions to the token embeddings"},
      {"landmark remap with xpos",
       {"run", "RECIPE", "--set", "model.landmark_block=4", "--set", "model.landmark_top_k=1",
        "--set", "model.encodings=xpos"},
       2,
       "model.landmark_remap"},
      {"recurrence in the encoder layout",
       {"run", "RECIPE", "--set", "model.pattern=recurrence", "--set", "model.layout=encoder"},
       2,
       "model.layout must be \"decoder\""},
      {"lambda with sinusoidal",
       {"run", "RECIPE", "--set", "model.encodings=sinusoidal", "--set", "model.pattern=lambda"},
       2,
       "cannot do"},
      {"sinks with learned",
       {"run", "RECIPE", "--set", "model.encodings=learned", "--set", "model.pattern=sinks"},
       2,
       "cannot do"},
      {"negative rerope window",
       {"run", "RECIPE", "--set", "encoding_options.rope.scaling=rerope", "--set",
        "encoding_options.rope.window=-2"},
       2,
       "window"},
      {"negative init_std",
       {"run", "RECIPE", "--set", "model.encodings=learned", "--set",
        "encoding_options.learned.init_std=-1"},
       2,
       "init_std"},
      {"infinite rope base",
       {"run", "RECIPE", "--set", "encoding_options.rope.base=inf"},
       2,
       "finite"},
      {"negative attn_factor",
       {"run", "RECIPE", "--set", "encoding_options.rope.scaling=yarn", "--set",
        "encoding_options.rope.attn_factor=-1"},
       2,
       "attn_factor"},
      {"negative original_length",
       {"run", "RECIPE", "--set", "encoding_options.rope.scaling=yarn", "--set",
        "encoding_options.rope.original_length=-8"},
       2,
       "original_length must be >= 0"},
      {"PoSE target shorter than training",
       {"run", "RECIPE", "--set", "model.positions=pose", "--set", "model.positions_max=2"},
       2,
       "positions_max"},
      {"more stored probe sequences than probed",
       {"run", "RECIPE", "--set", "probe.stored_samples=5"},
       2,
       "probe.stored_samples"},
      {"xpos in the encoder layout",
       {"run", "RECIPE", "--set", "model.encodings=xpos", "--set", "model.layout=encoder"},
       2,
       "decoder"},
      {"anchor documents under the encoder layout",
       {"run", "RECIPE", "--set", "model.layout=encoder", "--set", "model.pattern=anchor"},
       2,
       "\"anchor\" is a causal pattern; model.layout must be \"decoder\""},
      {"self_extend without a group size",
       {"run", "RECIPE", "--set", "model.encodings=rope", "--set", "model.pattern=self_extend"},
       2,
       "pattern_group"},
      {"self_extend with an encoding that cannot remap",
       {"run", "RECIPE", "--set", "model.encodings=sinusoidal", "--set",
        "model.pattern=self_extend", "--set", "model.pattern_group=2"},
       2,
       "cannot do"},
      {"string without a shift",
       {"run", "RECIPE", "--set", "model.encodings=rope", "--set", "model.pattern=string"},
       2,
       "model.pattern_shift > model.pattern_window"},
      {"string with a shift inside its window",
       {"run", "RECIPE", "--set", "model.encodings=rope", "--set", "model.pattern=string", "--set",
        "model.pattern_window=8", "--set", "model.pattern_shift=4"},
       2,
       "got S = 4, W = 8"},
      {"string with an encoding that cannot remap",
       {"run", "RECIPE", "--set", "model.encodings=sinusoidal", "--set", "model.pattern=string",
        "--set", "model.pattern_window=2", "--set", "model.pattern_shift=8"},
       2,
       "cannot do"},
      {"longrope without its factors",
       {"run", "RECIPE", "--set", "model.encodings=rope", "--set",
        "encoding_options.rope.scaling=longrope"},
       2,
       "one factor per rotary pair"},
      {"longrope with a factor that is not a number",
       {"run", "RECIPE", "--set", "model.encodings=rope", "--set",
        "encoding_options.rope.scaling=longrope", "--set",
        "encoding_options.rope.long_factors=\"1, two\""},
       2,
       "long_factors must be numbers"},
      {"longrope start tokens under another rule",
       {"run", "RECIPE", "--set", "model.encodings=rope", "--set",
        "encoding_options.rope.start_tokens=4"},
       2,
       "belong to scaling 'longrope'"},
      {"longrope start tokens under a remapping pattern",
       {"run", "RECIPE", "--set", "model.encodings=rope", "--set",
        "encoding_options.rope.scaling=longrope", "--set",
        "encoding_options.rope.long_factors=1,1,1,1", "--set",
        "encoding_options.rope.start_tokens=2", "--set", "model.pattern=self_extend", "--set",
        "model.pattern_group=2"},
       2,
       "use start_tokens = 0"},
      {"longrope's search asked of a training run",
       {"run", "RECIPE", "--set", "model.encodings=rope", "--set",
        "encoding_options.rope.scaling=longrope", "--set",
        "encoding_options.rope.long_factors=search"},
       2,
       "is LongRoPE's search on a trained run, which lexp eval"},
      {"abacus on a task without digits",
       {"run", "RECIPE", "--set", "model.encodings=abacus"},
       2,
       "has no digits"},
      {"abacus in the encoder layout",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "model.encodings=abacus", "--set", "model.layout=encoder"},
       2,
       "blanks"},
      {"abacus with a negative offset",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "model.encodings=abacus", "--set", "encoding_options.abacus.max_k=-1"},
       2,
       "max_k must be >= 0"},
      {"abacus with a table shorter than its offsets",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "model.encodings=abacus", "--set", "encoding_options.abacus.rows=50"},
       2,
       "rows must be > max_k + 1"},
      {"abacus under a position scheme",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "model.encodings=abacus", "--set", "model.positions=randomized", "--set",
        "model.positions_max=200"},
       2,
       "model.positions"},
      {"abacus with a table too short for the run's sequences",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "model.encodings=abacus", "--set", "encoding_options.abacus.rows=102"},
       2,
       "set rows to at least"},
      {"position_coupling on a task without digits",
       {"run", "RECIPE", "--set", "model.encodings=position_coupling"},
       2,
       "has no digits"},
      {"position_coupling with a negative start",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "model.encodings=position_coupling", "--set", "encoding_options.position_coupling.max_start=-3"},
       2,
       "max_start must be >= 0"},
      {"position_coupling with a table too short for its starts",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "model.encodings=position_coupling", "--set", "encoding_options.position_coupling.rows=150"},
       2,
       "rows must be > max_start + 1"},
      {"position_coupling with a misspelt option",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "model.encodings=position_coupling", "--set", "encoding_options.position_coupling.max_k=9"},
       2,
       "max_start"},
      {"cope with a negative table size",
       {"run", "RECIPE", "--set", "model.encodings=cope", "--set", "encoding_options.cope.npos=-1"},
       2,
       "npos must be >= 0"},
      {"cope with a misspelt option",
       {"run", "RECIPE", "--set", "model.encodings=cope", "--set", "encoding_options.cope.n_pos=9"},
       2,
       "npos"},
      {"cope with a non-boolean nodiv",
       {"run", "RECIPE", "--set", "model.encodings=cope", "--set", "encoding_options.cope.nodiv=2"},
       2,
       "nodiv"},
      {"cope with segment recurrence",
       {"run", "RECIPE", "--set", "model.encodings=cope", "--set", "model.pattern=recurrence"},
       2,
       "cannot follow"},
      {"cope with landmarks",
       {"run", "RECIPE", "--set", "model.encodings=cope", "--set", "model.landmark_block=4"},
       2,
       "model.landmark_block"},
      {"cope under a remapping pattern",
       {"run", "RECIPE", "--set", "model.encodings=cope", "--set", "model.pattern=self_extend",
        "--set", "model.pattern_group=2"},
       2,
       "count gates on the content"},
      {"dape with a zero-width MLP",
       {"run", "RECIPE", "--set", "model.encodings=dape", "--set", "encoding_options.dape.width=0"},
       2,
       "width must be >= 1"},
      {"dape over a base that is not a bias",
       {"run", "RECIPE", "--set", "model.encodings=dape", "--set", "encoding_options.dape.base=rope"},
       2,
       "kerple_log"},
      {"dape with a misspelt option",
       {"run", "RECIPE", "--set", "model.encodings=dape", "--set", "encoding_options.dape.hidden=8"},
       2,
       "width"},
      {"dape with segment recurrence",
       {"run", "RECIPE", "--set", "model.encodings=dape", "--set", "model.pattern=recurrence"},
       2,
       "cannot follow"},
      {"dape with landmarks",
       {"run", "RECIPE", "--set", "model.encodings=dape", "--set", "model.landmark_block=4"},
       2,
       "model.landmark_block"},
      {"index hints on a task without digits",
       {"run", "RECIPE", "--set", "task.index_hints=20"},
       2,
       "has none (leave it at 0)"},
      {"a variant that changes the task (the sweep's summary has one row per task)",
       {"run", "RECIPE", "--set", "run.variants=[\"a\", \"b: task.name=\\\"passkey_lm\\\"\"]"},
       2,
       "sets task.name: the task is the sweep's axis"},
      {"a key sweep over the task",
       {"run", "RECIPE", "--set", "run.sweep=task.name", "--set",
        "run.sweep_values=[\"copy\", \"passkey_lm\"]"},
       2,
       "the task is swept by task.names"},
      {"the log-n temperature twice (model.log_n and RoPE's own)",
       {"run", "RECIPE", "--set", "model.encodings=rope", "--set", "model.log_n=1", "--set",
        "encoding_options.rope.log_n=true"},
       2,
       "would apply the log-n temperature twice"},
      {"the log-n temperature twice (model.log_n and ReRoPE's automatic one)",
       {"run", "RECIPE", "--set", "model.encodings=rope", "--set", "model.log_n=1", "--set",
        "encoding_options.rope.scaling=rerope"},
       2,
       "would apply the log-n temperature twice"},
      {"clamped positions without the first unseen one",
       {"run", "RECIPE", "--set", "model.positions=clamp"},
       2,
       "needs model.positions_max"},
      {"needles for a task without them",
       {"run", "RECIPE", "--set", "task.needles=3"},
       2,
       "task.needles = 3 sets the needles of niah_multikey"},
      {"more hops than two chains of distinct variables hold",
       {"run", "RECIPE", "--set", "task.name=variable_tracking", "--set", "task.vocab=0", "--set",
        "task.hops=9"},
       2,
       "task.hops"},
      {"an alphabet size for a RULER task (fixed alphabets)",
       {"run", "RECIPE", "--set", "task.name=niah_multikey", "--set", "task.vocab=12"},
       2,
       "task 'niah_multikey' has a fixed alphabet"},
      {"a RULER task in a task sweep with a misspelt one",
       {"run", "RECIPE", "--set", "task.vocab=0", "--set",
        "task.names=[\"common_words\", \"frequent_word\"]"},
       2,
       "unknown task 'frequent_word'"},
      {"passkey_lm in the encoder layout",
       {"run", "RECIPE", "--set", "task.name=passkey_lm", "--set", "task.vocab=0", "--set",
        "model.layout=encoder"},
       2,
       "needs the decoder layout"},
      {"passkey_lm's haystack of too few symbols",
       {"run", "RECIPE", "--set", "task.name=passkey_lm", "--set", "task.vocab=3"},
       2,
       "needs vocab > 4"},
      {"greedy decoding of passkey_lm (a language-modelling sequence, no end token)",
       {"run", "RECIPE", "--set", "task.name=passkey_lm", "--set", "task.vocab=0", "--set",
        "eval.decoding=greedy"},
       2,
       "eval.decoding"},
      {"tokens to copy on a task without them",
       {"run", "RECIPE", "--set", "task.copy_tokens=4"},
       2,
       "has none (leave it at 0)"},
      {"selective copy trained below its tokens to copy",
       {"run", "RECIPE", "--set", "task.name=selective_copy", "--set", "task.copy_tokens=12"},
       2,
       "supports lengths 12.."},
      {"negative tokens to copy",
       {"run", "RECIPE", "--set", "task.name=selective_copy", "--set", "task.copy_tokens=-2"},
       2,
       "task.copy_tokens"},
      {"index hints too few for the evaluated numbers",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "task.index_hints=3"},
       2,
       "supports lengths 1..2"},
      {"index hints with abacus",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "task.index_hints=100", "--set", "model.encodings=abacus"},
       2,
       "use one or the other"},
      {"a negative number of index hints",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "task.index_hints=-2"},
       2,
       "task.index_hints"},
      {"an unknown padding",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=0", "--set",
        "task.padding=spaces"},
       2,
       "zeros"},
      {"zero padding on a task without operands",
       {"run", "RECIPE", "--set", "task.padding=zeros"},
       2,
       "has none"},
      {"a vocabulary for an arithmetic task",
       {"run", "RECIPE", "--set", "task.name=addition_reversed", "--set", "task.vocab=7"},
       2,
       "fixed alphabet"},
      {"greedy decoding of a language-modelling source",
       {"run", "RECIPE", "--set", "task.name=markov_lm", "--set", "eval.decoding=greedy"},
       2,
       "eval.decoding"},
      {"absolute run name", {"run", "RECIPE", "--set", "run.name=/abs"}, 2, "run.name"},
      {"run name going up", {"run", "RECIPE", "--set", "run.name=../../x"}, 2, "run.name"},
      {"run name ..", {"run", "RECIPE", "--set", "run.name=.."}, 2, "run.name"},
      {"run name .", {"run", "RECIPE", "--set", "run.name=."}, 2, "run.name"},
      {"empty run name", {"run", "RECIPE", "--set", "run.name="}, 2, "run.name"},
      {"fine-tuning from a path that goes up",
       {"run", "RECIPE", "--out", "sweep", "--set", "run.sweep=train.init_from", "--set",
        "run.sweep_values=../../evil.h5"},
       2,
       "init_from"},
      {"a directory as the recipe", {"run", "somedir"}, 2, "not a file"},
      {"an empty recipe path", {"run", ""}, 2, "empty"},
      {"a missing recipe", {"run", "missing.toml"}, 2, "does not exist"},
      {"output below a regular file",
       {"run", "RECIPE", "--out", "tiny.toml/x"},
       2,
       "cannot create"},
      {"output under /proc", {"run", "RECIPE", "--out", "/proc/lexp_fuzz"}, 2, "cannot create"},
      {"unknown command", {"runn"}, 2, "unknown command"},
      {"unknown list topic", {"list", "colours"}, 2, "topics"},
      {"--resume with --overwrite", {"run", "RECIPE", "--resume", "--overwrite"}, 2, "excludes"},
      {"figures on a missing path", {"figures", "nowhere"}, 2, "does not exist"},
      {"figures on a file", {"figures", "tiny.toml"}, 2, "is a file"},
      {"report of a missing directory", {"report", "nowhere"}, 2, "nowhere is not a directory"},
      {"report of a file", {"report", "tiny.toml"}, 2, "tiny.toml is not a directory"},
      {"bench with an unknown config", {"bench", "--config", "XL"}, 2, "unknown config"},
      {"a job that is not a row", {"run", "RECIPE", "--job", "x"}, 2, "--job 'x'"},
      {"a job range that runs backwards", {"run", "RECIPE", "--job", "5-2"}, 2, "backwards"},
      {"a job beyond the plan", {"run", "RECIPE", "--job", "7"}, 2, "has 1 rows (0-0"},
      {"--job with --overwrite", {"run", "RECIPE", "--job", "0", "--overwrite"}, 2, "excludes"},
      {"status of a directory without a plan", {"status", "somedir"}, 2, "has no plan"},
      {"status of a missing directory", {"status", "nowhere"}, 2, "not a directory"},
      {"collect of a directory without a plan", {"collect", "somedir"}, 2, "has no plan"},
      {"slurm given a run directory", {"slurm", "somedir"}, 2, "--resubmit"},
      {"slurm resubmit of a directory without a plan",
       {"slurm", "somedir", "--resubmit"},
       2,
       "has no plan"},
      {"slurm with a shell character in --partition",
       {"slurm", "RECIPE", "--partition", "a;b"},
       2,
       "--partition"},
      {"slurm with no CPU per task",
       {"slurm", "RECIPE", "--cpus-per-task", "0"},
       2,
       "cpus-per-task"},
      // The second fuzz's findings (issue 31): each refused where it is given, nothing written.
      {"C1: pe-table with no head", {"pe-table", "--heads", "0"}, 2, "pe-table: --heads 0"},
      {"C1: pe-table with negative heads", {"pe-table", "--heads", "-3"}, 2, "--heads -3"},
      {"U1: a negative thread count",
       {"--threads", "-1", "list", "tasks"},
       2,
       "'-1': allowed: 0 (every core) or a number of threads"},
      {"U2: a theory too long for memory",
       {"theory", "--max-distance", "100000000000"},
       2,
       "--max-distance 100000000000 would not fit in memory"},
      {"U3: pe-table with a negative training length",
       {"pe-table", "--train-length", "-1"},
       2,
       "pe-table: --train-length -1"},
      {"A1: an evaluation length twice",
       {"run", "RECIPE", "--set", "eval.lengths=3,3"},
       2,
       "eval.lengths lists 3 twice"},
      {"A2: an NF4 base without LoRA",
       {"run", "RECIPE", "--set", "train.lora_base=nf4"},
       2,
       "train.lora_base = \"nf4\" applies to LoRA's frozen matrices"},
      {"A3: an empty --job", {"run", "RECIPE", "--job", ""}, 2, "--job '': expected"},
      {"A4: slurm --time that sbatch does not take",
       {"slurm", "RECIPE", "--time", "abc"},
       2,
       "--time 'abc': allowed"},
      {"A4: slurm --mem that sbatch does not take",
       {"slurm", "RECIPE", "--mem", "lots"},
       2,
       "--mem 'lots': allowed"},
      {"A5: bench with negative steps", {"bench", "--steps", "-1"}, 2, "--steps -1: allowed"},
      // The cluster script's own options (issue 31).
      {"slurm --collect-time that sbatch does not take",
       {"slurm", "RECIPE", "--collect-time", "soon"},
       2,
       "--collect-time 'soon': allowed"},
      {"slurm --collect-mem that sbatch does not take",
       {"slurm", "RECIPE", "--collect-mem", "1.5G"},
       2,
       "--collect-mem '1.5G': allowed"},
      {"slurm --build-preset that is not a preset to run",
       {"slurm", "RECIPE", "--build-preset", "asan"},
       2,
       "--build-preset 'asan': allowed: release"},
      {"slurm --binary that does not exist",
       {"slurm", "RECIPE", "--binary", "nowhere/lexp"},
       2,
       "--binary 'nowhere/lexp': not an executable file"},
      {"slurm --binary that is not lexp",
       {"slurm", "RECIPE", "--binary", "/bin/true"},
       2,
       "'/bin/true' is not a lexp binary"},
      {"slurm --binary and --build-preset",
       {"slurm", "RECIPE", "--binary", "/bin/true", "--build-preset", "portable"},
       2,
       "give --binary or --build-preset, not both"},
      {"collect with --data-only and --no-figures",
       {"collect", "somedir", "--data-only", "--no-figures"},
       2,
       "excludes"},
      {"late check: a learned table shorter than the longest sequence",
       {"run", "RECIPE", "--set", "model.encodings=learned", "--set",
        "encoding_options.learned.max_len=4"},
       2,
       "encoding_options.learned.max_len = 4 rows"},
      {"late check: train.init_from of another width",
       {"run", "RECIPE", "--set", "train.init_from=GOOD", "--set", "model.d_model=32"},
       2,
       "the model needs [15 x 32]"},
      {"late check: LoRA from a file of another width",
       {"run", "RECIPE", "--set", "train.init_from=GOOD", "--set", "model.d_model=32", "--set",
        "train.lora_rank=2"},
       2,
       "train.init_from"},
  };
  for (const auto& bad : table) {
    const fs::path cwd = testing::FreshTempDir("cli_case");
    std::ofstream(cwd / "tiny.toml") << kTinyRecipe;
    fs::create_directories(cwd / "somedir");
    const auto before = Files(cwd);
    std::vector<std::string> args = bad.args;
    for (auto& a : args) {
      if (a == "RECIPE") a = "tiny.toml";
      for (const std::string key : {"train.init_from=GOOD"})
        if (a == key) a = "train.init_from=" + good_.string();
    }
    ExpectRefused(bad, Lexp(cwd, args));
    EXPECT_EQ(Files(cwd), before) << bad.what << ": wrote files";
    EXPECT_FALSE(fs::exists("/proc/lexp_fuzz"));
    fs::remove_all(cwd);
  }
  EXPECT_FALSE(fs::exists(fs::temp_directory_path().parent_path() / "evil.h5"));
}

TEST_F(CliFuzz, CorruptedAndForeignFilesExitTwoNamingTheFile) {
  const std::string nan_weights = Corrupt("nan_weights", [](hid_t f) {
    ReplaceFloats(f, "/model/head.b", std::vector<float>(15, std::nanf("")));
  });
  const std::string f64_weights = Corrupt("f64_weights", [](hid_t f) {
    ReplaceDoubles(f, "/model/head.b", std::vector<double>(15, 0.5));
  });
  const std::string nan_unsealed = Corrupt(
      "nan_unsealed",
      [](hid_t f) { ReplaceDoubles(f, "/model/head.b", std::vector<double>(15, std::nan(""))); },
      false);
  const std::string ragged_eval = Corrupt("ragged_eval", [](hid_t f) {
    ReplaceDoubles(f, "/eval/token_accuracy", {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
  });
  const std::string no_status =
      Corrupt("no_status", [](hid_t f) { H5Ldelete(f, "/status", H5P_DEFAULT); });
  const std::string h5py_strings = Corrupt("h5py_strings", [](hid_t f) {
    const hid_t g = H5Gopen2(f, "/status", H5P_DEFAULT);
    SetVariableLengthString(g, "state", "failed");
    H5Gclose(g);
  });
  const std::string string_array = Corrupt("string_array", [](hid_t f) {
    // h5py writes attrs['state'] = ['a', 'b'] as an array of variable-length strings.
    const hid_t g = H5Gopen2(f, "/status", H5P_DEFAULT);
    H5Adelete(g, "state");
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    const hsize_t two = 2;
    const hid_t space = H5Screate_simple(1, &two, nullptr);
    const hid_t a = H5Acreate2(g, "state", type, space, H5P_DEFAULT, H5P_DEFAULT);
    const char* values[2] = {"completed", "failed"};
    H5Awrite(a, type, values);
    H5Aclose(a);
    H5Sclose(space);
    H5Tclose(type);
    H5Gclose(g);
  });
  const std::string weights_shape = Corrupt("weights_shape", [](hid_t f) {
    ReplaceFloats(f, "/model/layer0.attn.qkv.w", {1, 2, 3});
  });
  const fs::path dir = root_ / "corrupt";
  std::ofstream(dir / "text.h5") << "not an HDF5 file\n";
  std::ofstream(dir / "bad_metric.toml")
      << "[claim]\nid = \"X98\"\nname = \"metric\"\nstatement = \"s\"\nsource = \"src\"\n"
         "published = \"p\"\nprotocol = \"pr\"\n[[stage]]\nname = \"train\"\n"
         "recipe = \"default\"\n[criterion]\nmetric = \"sink_share\"\nlengths = [4, 4]\n"
         "holds = [\"rope > 0.1\"]\n";
  // A claim that fine-tunes three seeds from one pre-training (no {seed} in init_from).
  std::ofstream(dir / "shared_pretraining.toml")
      << "[claim]\nid = \"X99\"\nname = \"shared\"\nstatement = \"s\"\nsource = \"src\"\n"
         "published = \"p\"\nprotocol = \"pr\"\n[[stage]]\nname = \"pretrain\"\n"
         "recipe = \"default\"\n[[stage]]\nname = \"finetune\"\nrecipe = \"default\"\n"
         "init_from = \"pretrain/rope.h5\"\nset = [\"run.seeds=[1, 2, 3]\"]\n[criterion]\n"
         "metric = \"loss\"\nlengths = [4, 4]\nholds = [\"rope < 9\"]\n";
  {
    std::ifstream in(good_, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(dir / "truncated.h5", std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  }
  const std::string ragged_loss = Corrupt("ragged_loss", [](hid_t f) {
    ReplaceDoubles(f, "/eval/loss", {1.0, 2.0});
  });
  fs::create_directories(dir / "ragged_dir");
  fs::copy_file(ragged_eval, dir / "ragged_dir" / "rope.h5");
  fs::create_directories(dir / "ragged_loss_dir");
  fs::copy_file(ragged_loss, dir / "ragged_loss_dir" / "rope.h5");
  // U5: a root encoding no encoding has; U6: a foreign HDF5 file among the runs; U7: a run whose
  // /eval/loss lost a bit, met by base-law.
  const std::string bad_encoding = Corrupt("bad_encoding", [](hid_t f) {
    const hid_t root = H5Gopen2(f, "/", H5P_DEFAULT);
    SetVariableLengthString(root, "encoding", "ropez");
    H5Gclose(root);
  });
  fs::create_directories(dir / "foreign_dir");
  fs::copy_file(good_, dir / "foreign_dir" / "rope.h5");
  {
    h5::Writer w((dir / "foreign_dir" / "other.h5").string());
    w.root().WriteDoubles("x", {1, 2}, {2}, "i");
    w.Commit();
  }
  fs::create_directories(dir / "flipped_dir");
  {
    fs::copy_file(good_, dir / "flipped_dir" / "rope.h5");
    const hid_t f = H5Fopen((dir / "flipped_dir" / "rope.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t ds = H5Dopen2(f, "/eval/loss", H5P_DEFAULT);
    const haddr_t at = H5Dget_offset(ds);  // from the file's start, user block included
    H5Dclose(ds);
    H5Fclose(f);
    std::fstream b(dir / "flipped_dir" / "rope.h5",
                   std::ios::in | std::ios::out | std::ios::binary);
    b.seekg(static_cast<std::streamoff>(at) + 3);
    char c = 0;
    b.read(&c, 1);
    c = static_cast<char>(c ^ 4);
    b.seekp(static_cast<std::streamoff>(at) + 3);
    b.write(&c, 1);
  }
  // The same flipped bit behind a renewed seal of the file's bytes: the dataset's own checksum
  // refuses it.
  fs::create_directories(dir / "flipped_restamped_dir");
  fs::copy_file(dir / "flipped_dir" / "rope.h5", dir / "flipped_restamped_dir" / "rope.h5");
  h5::RestampFileSeal((dir / "flipped_restamped_dir" / "rope.h5").string());
  const std::vector<BadInput> table = {
      {"evaluating NaN weights", {"eval", nan_weights, "--no-figures"}, 2, "not finite"},
      {"U4: a scaling rule's value that is no number",
       {"eval", good_.string(), "--scale", "yarn:factor=abc", "--no-figures"},
       2,
       "--scale 'yarn:factor=abc': factor = 'abc' is not a number"},
      {"U5: a root encoding no encoding has",
       {"analyze", bad_encoding},
       2,
       "its root attribute encoding is 'ropez', which is no encoding of lexp"},
      {"U6: figures of a directory holding a foreign HDF5 file",
       {"figures", (dir / "foreign_dir").string()},
       2,
       "other.h5' is not a lexp run file (no root attribute 'format')"},
      {"U7: base-law names the damaged file it meets",
       {"base-law", (dir / "flipped_dir").string()},
       2,
       "flipped_dir/rope.h5' is damaged: its bytes do not match the checksum it was written with"},
      {"a flipped bit behind a renewed seal",
       {"base-law", (dir / "flipped_restamped_dir").string()},
       2,
       "flipped_restamped_dir/rope.h5': dataset '/eval/loss' fails its checksum"},
      {"A6: eval --set of a key an evaluation ignores",
       {"eval", good_.string(), "--set", "train.steps=5", "--no-figures"},
       2,
       "lexp eval --set train.steps=5: an evaluation does not train"},
      {"eval: longrope's search under another scaling rule",
       {"eval", good_.string(), "--set", "encoding_options.rope.long_factors=search",
        "--no-figures"},
       2,
       "long_factors = \"search\" belongs to scaling 'longrope'"},
      {"eval: longrope's search without an extension",
       {"eval", good_.string(), "--set", "encoding_options.rope.scaling=longrope", "--set",
        "encoding_options.rope.long_factors=search", "--no-figures"},
       2,
       "needs encoding_options.rope.factor = s > 1"},
      {"eval: longrope's search with a misspelt setting",
       {"eval", good_.string(), "--set", "encoding_options.rope.scaling=longrope", "--set",
        "encoding_options.rope.factor=2", "--set",
        "encoding_options.rope.long_factors=\"search:iters=3\"", "--no-figures"},
       2,
       "unknown key 'iters'; allowed: search[:length=L,samples=S,iterations=I,population=P]"},
      {"eval: longrope's search with n-hat given",
       {"eval", good_.string(), "--set", "encoding_options.rope.scaling=longrope", "--set",
        "encoding_options.rope.factor=2", "--set", "encoding_options.rope.long_factors=search",
        "--set", "encoding_options.rope.start_tokens=4", "--no-figures"},
       2,
       "searches start_tokens (n-hat) too"},
      {"eval --set task.name of another family",
       {"eval", good_.string(), "--set", "task.name=flip_flop_sparse", "--no-figures"},
       2,
       "an evaluation reads a task of its family only"},
      {"eval --set task.name of an unknown task",
       {"eval", good_.string(), "--set", "task.name=flip_flap", "--no-figures"},
       2,
       "flip_flap"},
      {"eval --name that is a path",
       {"eval", good_.string(), "--name", "../x", "--no-figures"},
       2,
       "lexp eval --name '../x': a plain name"},
      {"eval --name for two rules",
       {"eval", good_.string(), "--name", "x", "--scale", "pi:factor=2", "--scale", "none",
        "--no-figures"},
       2,
       "lexp eval --name names one evaluation"},
      {"weights stored as float64 (F2)",
       {"eval", f64_weights, "--no-figures"},
       2,
       "head.b is stored as f64, lexp stores weights as f32"},
      {"evaluating weights another program replaced without their checksum",
       {"eval", nan_unsealed, "--no-figures"},
       2,
       "dataset '/model/head.b' has no checksum although the file carries checksums"},
      {"eval --capture of an unknown site",
       {"eval", nan_weights, "--capture", "layer0.attn.query"},
       2,
       "'layer0.attn.query' matches no capture site"},
      {"eval --analyses of an unknown analysis",
       {"eval", good_.string(), "--analyses", "geometry,entropy", "--no-figures"},
       2,
       "lexp eval --analyses: unknown analysis 'entropy'; allowed: \"all\", \"none\" or a list "
       "of geometry expectation"},
      {"eval --analyses naming nothing",
       {"eval", good_.string(), "--analyses", ",", "--no-figures"},
       2,
       "lexp eval --analyses names nothing; allowed: all, none, or names from geometry"},
      {"eval --analyses with none beside a name",
       {"eval", good_.string(), "--analyses", "none", "geometry", "--no-figures"},
       2,
       "\"all\" and \"none\" stand alone"},
      {"eval --analyses and --set probe.analyses both",
       {"eval", good_.string(), "--analyses", "geometry", "--set", "probe.analyses=[\"none\"]",
        "--no-figures"},
       2,
       "give the analyses once"},
      {"probe.analyses naming a replay the recipe turned off",
       {"eval", good_.string(), "--set", "probe.replay=0", "--set",
        "probe.analyses=[\"rotary\"]", "--no-figures"},
       2,
       "probe.analyses: 'rotary' replays the trained model, and probe.replay = 0 turns the "
       "replays off"},
      {"figures of mismatched /eval arrays",
       {"figures", (dir / "ragged_dir").string()},
       2,
       "has shape"},
      {"analysis of a file without /status", {"analyze", no_status}, 2, "no /status"},
      {"h5py's variable-length strings read as text",
       {"analyze", h5py_strings},
       2,
       "did not complete (failed)"},
      {"weights of the wrong shape", {"analyze", weights_shape}, 2, "layer0.attn.qkv.w"},
      {"an array of strings where one text belongs",
       {"analyze", string_array},
       2,
       "not a single text"},
      {"fine-tuning from a file that is not a run",
       {"run", "tiny.toml", "--out", "finetune", "--no-figures", "--set",
        "train.init_from=tiny.toml"},
       2,
       "tiny.toml"},
      {"a compressor not trained on its prompts",
       {"compress", good_.string(), "--lm", good_.string()},
       2,
       "train.score_input = 1"},
      {"a compression ratio of 1",
       {"compress", good_.string(), "--lm", good_.string(), "--ratios", "1"},
       2,
       "in [0, 1)"},
      {"a compressor that is not a run file",
       {"compress", good_.string(), "--lm", (dir / "text.h5").string()},
       2,
       "as HDF5"},
      {"a text file as a run file", {"analyze", (dir / "text.h5").string()}, 2, "as HDF5"},
      {"diagnose of a text file", {"diagnose", (dir / "text.h5").string()}, 2, "as HDF5"},
      {"diagnose of a truncated run file",
       {"diagnose", (dir / "truncated.h5").string()},
       2,
       "truncated.h5"},
      {"diagnose at a length within the training lengths",
       {"diagnose", good_.string(), "--lengths", "1"},
       2,
       "diagnosis reads lengths beyond N"},
      {"diagnose at a length that is not a number",
       {"diagnose", good_.string(), "--lengths", "long"},
       2,
       "--lengths"},
      {"diagnose with an unknown intervention",
       {"diagnose", good_.string(), "--interventions", "distance_clamp,rerope"},
       2,
       "intervention 'rerope'; allowed: distance_clamp, position_remap"},
      {"a truncated run file", {"eval", (dir / "truncated.h5").string()}, 2, "truncated.h5"},
      {"a directory as a run file", {"analyze", dir.string()}, 2, ""},
      {"dump of a path the file lacks",
       {"dump", good_.string(), "/nothing"},
       2,
       "has no dataset or group '/nothing'"},
      {"dump of a directory", {"dump", dir.string()}, 2, "not a file"},
      {"reproduce without a claim", {"reproduce"}, 2, "name claims by id, or --all, or --list"},
      {"reproduce of an unknown claim",
       {"reproduce", "Q7"},
       2,
       "'Q7' is not a claim of lexp reproduce; claims: P1, P2"},
      {"reproduce at an unknown budget", {"reproduce", "P2", "--budget", "huge"}, 2, "--budget"},
      {"reproduce with claims and --all", {"reproduce", "P2", "--all"}, 2, "or --all"},
      {"a claim file that does not exist", {"reproduce", "nosuch.toml"}, 2, "nosuch.toml"},
      {"reproduce --table with a claim",
       {"reproduce", "--table", "M7"},
       2,
       "lexp reproduce --table runs nothing: give no claim"},
      {"reproduce --table of a budget without verdicts",
       {"reproduce", "--table", "--out", (dir / "no_verdicts").string()},
       2,
       "holds no verdicts of the smoke budget"},
      {"reproduce --slurm with --collect",
       {"reproduce", "M7", "--slurm", "--collect"},
       2,
       "--slurm writes the jobs, --collect judges what they made; give one"},
      {"reproduce --submit without --slurm",
       {"reproduce", "M7", "--submit"},
       2,
       "--submit goes with --slurm"},
      {"reproduce --collect before the arrays ran",
       {"reproduce", "M7", "--collect", "--out", (dir / "collect_before").string()},
       2,
       "is pending; --collect trains nothing"},
      {"reproduce --slurm with a time sbatch does not take",
       {"reproduce", "M7", "--slurm", "--time", "soon", "--out", (dir / "slurm_time").string()},
       2,
       "--time 'soon': allowed: minutes"},
      {"a recipe given as a claim file",
       {"reproduce", (root_ / "tiny.toml").string()},
       2,
       "tiny.toml': unknown table 'eval'; allowed: [claim], [[stage]], [criterion], [trend], "
       "[budget]"},
      {"a claim fine-tuning several seeds from one pre-training (smoke keeps 2 of its 3)",
       {"reproduce", (dir / "shared_pretraining.toml").string(), "--out",
        (dir / "shared_out").string()},
       2,
       "starts all 2 seeds from one pre-training; write {seed} in it"},
      {"a criterion metric lexp does not read",
       {"reproduce", (dir / "bad_metric.toml").string(), "--out", (dir / "bad_metric").string()},
       2,
       "allowed: exact_match, token_accuracy, loss, js_to_reference, attention_entropy, "
       "sink_mass, loss_limit, exact_match_limit, token_accuracy_limit, gap_share, "
       "shift_move, position_probe_error"},
      {"base-law on a run whose losses miss lengths",
       {"base-law", (dir / "ragged_loss_dir").string()},
       2,
       "ragged_loss_dir"},
      {"base-law with an unknown criterion",
       {"base-law", good_.parent_path().string(), "--criterion", "perplexity"},
       2,
       "--criterion 'perplexity' is not one of auto, loss, token_accuracy, exact_match"},
      {"base-law with a tolerance of 1 or more",
       {"base-law", good_.parent_path().string(), "--tolerance", "1.5"},
       2,
       "--tolerance must lie in (0, 1)"},
  };
  for (const auto& bad : table) ExpectRefused(bad, Lexp(root_, bad.args));
  // No temporary left beside the corrupted files.
  for (const auto& f : Files(dir))
    EXPECT_EQ(f.find(".tmp"), std::string::npos) << "temporary left behind: " << f;
}

// What a run that finishes must still say (exit 0): an evaluation whose loss is not finite at a
// length (xPos with scale_base = 1 overflows at n = 128) warns and records the lengths in the
// file; LoRA adapters trained on a random model (no train.init_from) are noted.
TEST_F(CliFuzz, RunsThatFinishSayWhatTheirNumbersCannotMean) {
  const Result nan =
      Lexp(root_, {"run", "tiny.toml", "--out", "nan_eval", "--no-figures", "--set",
                   "model.encodings=xpos", "--set", "encoding_options.xpos.scale_base=1", "--set",
                   "eval.lengths=2,4,128", "--set", "probe.lengths=4"});
  EXPECT_EQ(nan.code, 0) << nan.err;
  EXPECT_NE(nan.err.find("the evaluation loss is not finite at n = 128"), std::string::npos)
      << nan.err;
  {
    h5::Reader r((root_ / "nan_eval" / "xpos.h5").string());
    EXPECT_EQ(r.root().OpenGroup("eval").AttrString("nonfinite_lengths"), "128");
  }
  const Result lora = Lexp(root_, {"run", "tiny.toml", "--out", "lora_random", "--no-figures",
                                   "--set", "train.lora_rank=2"});
  EXPECT_EQ(lora.code, 0) << lora.err;
  EXPECT_NE(lora.err.find("train.lora_rank = 2 with no train.init_from trains adapters on a "
                          "frozen random model"),
            std::string::npos)
      << lora.err;
}

// A subdirectory lexp writes inside --out that is a symbolic link (figures/, plan/, slurm/, a task
// sweep's task folder, a figure selection's folder) is refused naming it, and nothing is written
// to where it points.
TEST_F(CliFuzz, LinkedSubdirectoriesAreNeverWrittenThrough) {
  struct Case {
    std::string what, link;  // link: the subdirectory of out made a link
    std::vector<std::string> args;
  };
  const std::vector<Case> cases = {
      {"plan/ of a run", "plan", {"run", "tiny.toml", "--out", "out", "--no-figures"}},
      {"figures/ of a run", "figures", {"run", "tiny.toml", "--out", "out"}},
      {"figures/ redrawn", "figures", {"figures", "GOOD"}},
      {"a selection's figures/", "figures", {"figures", "GOOD", "--runs", "rope"}},
      {"slurm/ of a sweep", "slurm", {"slurm", "tiny.toml", "--out", "out"}},
      {"a task's folder",
       "copy",
       {"run", "tiny.toml", "--out", "out", "--no-figures", "--set",
        "task.names=copy,reverse_string"}},
  };
  for (const auto& c : cases) {
    const fs::path cwd = testing::FreshTempDir("cli_link");
    std::ofstream(cwd / "tiny.toml") << kTinyRecipe;
    fs::path out = cwd / "out";
    std::vector<std::string> args = c.args;
    for (auto& a : args)
      if (a == "GOOD") {
        fs::copy(good_.parent_path(), cwd / "good", fs::copy_options::recursive);
        fs::remove_all(cwd / "good" / "figures");
        out = cwd / "good";
        a = out.string();
      }
    fs::create_directories(out);
    fs::create_directories(cwd / "target");
    fs::create_directory_symlink(cwd / "target", out / c.link);
    const Result r = Lexp(cwd, args);
    EXPECT_EQ(r.code, 2) << c.what << "\n" << r.err;
    EXPECT_NE(r.err.find("is a symbolic link"), std::string::npos) << c.what << ": " << r.err;
    EXPECT_TRUE(fs::is_empty(cwd / "target")) << c.what << ": written through the link";
    fs::remove_all(cwd);
  }
}

// Models trained at once on threads of their own leave no HDF5 state behind: the library closes
// at exit without "HDF5: infinite loop closing library" (an ended thread's error records).
TEST_F(CliFuzz, APackedSweepExitsWithoutHdf5Complaints) {
  const Result r = Lexp(root_, {"run", "tiny.toml", "--out", "packed", "--no-figures", "--jobs",
                                "2", "--set", "model.encodings=nope,sinusoidal,alibi,rope"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("HDF5"), std::string::npos) << r.err;
}

TEST_F(CliFuzz, EveryDocumentedExitCode) {
  EXPECT_EQ(Lexp(root_, {"list", "encodings"}).code, 0);
  // 1: a model of the sweep diverged; its file says so, with the history up to the step.
  const Result diverged =
      Lexp(root_, {"run", "tiny.toml", "--out", "diverged", "--no-figures", "--set", "train.lr=10",
                   "--set", "train.weight_decay=10", "--set", "train.warmup_steps=1", "--set",
                   "model.encodings=rope,alibi"});
  EXPECT_EQ(diverged.code, 1) << diverged.err;
  {
    h5::Reader r((root_ / "diverged" / "rope.h5").string());
    EXPECT_EQ(r.root().OpenGroup("status").AttrString("state"), "diverged");
    const auto steps = r.root().OpenGroup("status").AttrInt("steps_completed");
    EXPECT_GT(steps, 0);
    EXPECT_EQ(static_cast<int64_t>(r.root().OpenGroup("train").ReadDoubles("loss").size()), steps);
  }
  EXPECT_TRUE(fs::exists(root_ / "diverged" / "alibi.h5")) << "the sweep went on";
  // 2: bad input, without a source location.
  const Result bad = Lexp(root_, {"run", "tiny.toml", "--set", "train.steps=-1"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_FALSE(std::regex_search(bad.err, kSourceLocation)) << bad.err;
  // 3: an internal error, with its location.
  const Result internal = Lexp(root_, {"internal-error-for-tests"});
  EXPECT_EQ(internal.code, 3);
  EXPECT_TRUE(std::regex_search(internal.err, kSourceLocation)) << internal.err;
  EXPECT_NE(internal.err.find("internal error"), std::string::npos);
}

// gnuplot's own messages stay in <figure>.log beside the script; the user sees lexp's lines. A
// one-task seed sweep's score table (1 x 2 cells) is drawn too (gnuplot's "with image" refused it).
// lexp dump prints a dataset with its shape, axes and units, and a group with its contents.
TEST_F(CliFuzz, DumpPrintsDatasetsWithTheirAxes) {
  const Result d = Lexp(root_, {"dump", good_.string(), "/eval/loss"});
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("/eval/loss  [3]"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("axes: length"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("units: nats per scored token"), std::string::npos) << d.out;
  const Result g = Lexp(root_, {"dump", good_.string(), "/status"});
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(g.out.find("@state = completed"), std::string::npos) << g.out;
}

// --print-recipe prints a recipe that reads back, and the files the run will write; an
// encoder-layout run with NoPE says that NoPE is order-blind there.
TEST_F(CliFuzz, PrintRecipeListsTheFilesAndReadsBack) {
  const Result r = Lexp(
      root_, {"run", "tiny.toml", "--out", "printed", "--print-recipe", "--set", "run.seeds=1,2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("printed/rope-seed2.h5"), std::string::npos) << r.out;
  EXPECT_NO_THROW(ParseRecipe(r.out, "printed recipe"));
  EXPECT_FALSE(fs::exists(root_ / "printed")) << "printing writes nothing";
  const Result enc = Lexp(root_, {"run", "tiny.toml", "--out", "encoder", "--no-figures", "--set",
                                  "model.layout=encoder", "--set", "model.encodings=nope"});
  EXPECT_EQ(enc.code, 0) << enc.err;
  EXPECT_NE(enc.out.find("order-blind"), std::string::npos) << enc.out;
}

// --format svg,pdf draws every figure in those formats too, from the same scripts.
TEST_F(CliFuzz, FiguresAreAlsoDrawnAsSvgAndPdf) {
  const Result r = Lexp(root_, {"run", "tiny.toml", "--out", "formats", "--format", "png,svg,pdf"});
  ASSERT_EQ(r.code, 0) << r.err;
  int pngs = 0;
  for (const auto& e : fs::directory_iterator(root_ / "formats" / "figures")) {
    if (e.path().extension() != ".png") continue;
    ++pngs;
    for (const char* ext : {".svg", ".pdf"}) {
      fs::path other = e.path();
      other.replace_extension(ext);
      EXPECT_TRUE(fs::exists(other) && fs::file_size(other) > 0) << other;
    }
  }
  EXPECT_GT(pngs, 3);
  const Result bad = Lexp(root_, {"figures", "formats", "--format", "jpg"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("png, svg or pdf"), std::string::npos) << bad.err;
}

// figures --runs draws a subset into its own folder, leaving the full set; an unknown name lists
// the runs there are.
TEST_F(CliFuzz, FiguresOfASubsetOfRuns) {
  ASSERT_EQ(Lexp(root_, {"run", "tiny.toml", "--out", "subset", "--no-figures", "--set",
                         "model.encodings=nope,alibi,rope"})
                .code,
            0);
  const Result r = Lexp(root_, {"figures", "subset", "--runs", "nope,rope"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream dat(root_ / "subset" / "figures" / "nope+rope" / "accuracy_vs_length.dat");
  std::stringstream text;
  text << dat.rdbuf();
  EXPECT_NE(text.str().find("# encoding nope"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("# encoding rope"), std::string::npos);
  EXPECT_EQ(text.str().find("# encoding alibi"), std::string::npos) << "not selected";
  EXPECT_FALSE(fs::exists(root_ / "subset" / "figures" / "accuracy_vs_length.png"));
  const Result bad = Lexp(root_, {"figures", "subset", "--runs", "ropey"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("its runs: alibi, nope, rope"), std::string::npos) << bad.err;
}

TEST_F(CliFuzz, GnuplotMessagesStayInTheFigureLogs) {
  const Result r = Lexp(root_, {"run", "tiny.toml", "--out", "gnuplot", "--set",
                                "model.encodings=nope,rope", "--set", "run.seeds=1,2"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* word : {"warning", "pclose", "undefined", "line "}) {
    EXPECT_EQ(r.out.find(word), std::string::npos) << word << " in: " << r.out;
    EXPECT_EQ(r.err.find(word), std::string::npos) << word << " in: " << r.err;
  }
  EXPECT_TRUE(fs::exists(root_ / "gnuplot" / "figures" / "score_table.png"));
  EXPECT_FALSE(fs::exists(root_ / "gnuplot" / "figures" / "score_table.log"))
      << "the 1 x 2 table draws without a gnuplot message";
  const Result again = Lexp(root_, {"figures", "gnuplot"});
  EXPECT_EQ(again.code, 0) << again.err << " (a sweep directory with plan/ beside the runs)";
}

TEST_F(CliFuzz, RefusesToReplaceFinishedRunsAndNeverFollowsALinkedTemporary) {
  const fs::path out = root_ / "twice";
  ASSERT_EQ(Lexp(root_, {"run", "tiny.toml", "--out", "twice", "--no-figures"}).code, 0);
  const auto written = fs::last_write_time(out / "rope.h5");
  const Result again = Lexp(root_, {"run", "tiny.toml", "--out", "twice", "--no-figures"});
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("already holds"), std::string::npos) << again.err;
  EXPECT_EQ(fs::last_write_time(out / "rope.h5"), written);
  // A link planted where the temporary goes: the link is replaced, its target left alone.
  std::ofstream(root_ / "precious") << "keep me";
  fs::create_symlink(root_ / "precious", out / "rope.h5.tmp");
  const Result over =
      Lexp(root_, {"run", "tiny.toml", "--out", "twice", "--no-figures", "--overwrite"});
  EXPECT_EQ(over.code, 0) << over.err;
  EXPECT_EQ(Slurp(root_ / "precious"), "keep me");
  EXPECT_FALSE(fs::exists(out / "rope.h5.tmp"));
}

// Killed (SIGKILL) at many points while it draws (D2), lexp figures leaves under a figure's own
// name (.png, .dat, .gp) only the whole file an uninterrupted draw writes; what it was writing is
// a temporary (*.tmp), and the next draw puts everything in place.
TEST_F(CliFuzz, KilledFiguresLeaveOnlyWholeFiles) {
  auto fresh = [&](const std::string& name) {
    fs::remove_all(root_ / name);
    fs::copy(good_.parent_path(), root_ / name, fs::copy_options::recursive);
    fs::remove_all(root_ / name / "figures");
    return root_ / name;
  };
  const fs::path reference = fresh("fig_reference");
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(Lexp(root_, {"figures", reference.string()}).code, 0);
  const double full = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto whole_name = [](const std::string& f) {
    return f.find(".tmp") == std::string::npos && f.find(".run.gp") == std::string::npos &&
           f.find(".log") == std::string::npos;
  };
  int checked = 0;
  for (int k = 1; k <= 10; ++k) {
    const fs::path dir = fresh("fig_killed" + std::to_string(k));
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::vector<std::string> args = {"figures", dir.string()};
      std::vector<char*> argv = {const_cast<char*>(kLexp.c_str())};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
      execv(kLexp.c_str(), argv.data());
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(full * k / 11.0));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    for (const auto& f : Files(dir / "figures")) {
      if (!whole_name(f)) continue;
      EXPECT_EQ(Slurp(dir / "figures" / f), Slurp(reference / "figures" / f))
          << "killed after " << k << "/11 of a draw: " << f << " is not whole";
      ++checked;
    }
    ASSERT_EQ(Lexp(root_, {"figures", dir.string()}).code, 0);
    for (const auto& f : Files(dir / "figures"))
      EXPECT_TRUE(whole_name(f) || f.find(".log") != std::string::npos) << f << " left behind";
  }
  EXPECT_GT(checked, 0) << "no kill landed after a figure was written";
}

// Killed (SIGKILL) at many points of a run: every .h5 left is readable or a temporary, none says
// "completed" without its evaluation and analysis, and --resume finishes into the files of an
// uninterrupted run.
TEST_F(CliFuzz, KilledAtAnyPointResumeFinishesTheFilesOfAnUninterruptedRun) {
  const std::vector<std::string> run = {
      "run",   "tiny.toml",     "--no-figures", "--set", "model.encodings=rope,alibi",
      "--set", "train.steps=60"};
  auto with_out = [&](const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = run;
    a.insert(a.end(), {"--out", out});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(Lexp(root_, with_out("reference")).code, 0);
  const double full = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int killed_with_files = 0;
  for (int k = 1; k <= 12; ++k) {
    const std::string out = "killed" + std::to_string(k);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (chdir(root_.c_str()) != 0) _exit(127);
      std::vector<std::string> args = with_out(out);
      std::vector<char*> argv = {const_cast<char*>(kLexp.c_str())};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
      execv(kLexp.c_str(), argv.data());
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(full * k / 13.0));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    for (const auto& f : Files(root_ / out)) {
      if (f.size() < 3 || f.substr(f.size() - 3) != ".h5") continue;
      ++killed_with_files;
      h5::Reader r((root_ / out / f).string());  // readable: files appear only when complete
      if (f.find(".ckpt.") != std::string::npos) continue;
      const std::string state = r.root().OpenGroup("status").AttrString("state");
      EXPECT_TRUE(state == "completed" || state == "analyzing") << f << ": " << state;
      if (state == "completed") {
        EXPECT_TRUE(r.root().OpenGroup("analysis").Has("geometry")) << f;
        EXPECT_TRUE(r.root().OpenGroup("analysis").Has("expectation")) << f;
      }
    }
    const Result resumed = Lexp(root_, with_out(out, {"--resume"}));
    ASSERT_EQ(resumed.code, 0) << resumed.err;
    // The run files, the sweep's job list (plan/) and the report page, whole.
    for (const auto& f : Files(root_ / out))
      EXPECT_TRUE(f == "rope.h5" || f == "alibi.h5" || f == ".lexp.lock" || f == "report.html" ||
                  (f.rfind("plan", 0) == 0 && f.find(".tmp") == std::string::npos))
          << out << " left " << f;
    for (const char* name : {"rope.h5", "alibi.h5"})
      testing::ExpectSameRunFiles((root_ / "reference" / name).string(),
                                  (root_ / out / name).string());
  }
  EXPECT_GT(killed_with_files, 0) << "no kill landed after a file was written";
}

}  // namespace
}  // namespace lexp
