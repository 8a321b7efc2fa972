// The `lexp` binary given corrupted and foreign files: each refused with exit 2 naming the file,
// never read into other numbers.
#include <gtest/gtest.h>

#include "tests/experiments/cli_fuzz_fixture.h"

namespace lexp {
namespace {

using namespace cli_fuzz_testing;

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

}  // namespace
}  // namespace lexp
