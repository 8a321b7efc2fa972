// The corruption fuzz: damaged copies of a real run file, made by a fixed-seed generator, fed to
// every command that reads run files. Each command must either exit 0 with exactly the results it
// gives on the intact file (the damage lies in a part it does not read) or exit 2 naming the file;
// never exit 0 with other results, never crash. The damage:
//  * a bit flipped inside the stored values of every dataset of the file (found through HDF5's own
//    storage offsets), and bit flips at random places anywhere in the file (metadata included);
//  * changes another program could make, left without their checksums: a dataset replaced, an
//    attribute rewritten;
//  * the same kinds of change resealed (h5::Reseal: checksums that hold), so that what refuses
//    them is the check behind the checksums: a weight's type (F2), its shape (F3), a recipe edited
//    against its weights (F4), an unknown or missing format (F5), a state that is not final or not
//    one lexp writes (F6, F8), removed and renamed groups.
// Commands: eval, analyze, status, collect, figures (data only), base-law, dump (not of the
// resealed files: it shows a file's content as it is), and a training run fine-tuning from the
// damaged file (train.init_from).
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "nn/io/hdf5.h"
#include "nn/rng.h"
#include "tests/testing/lexp_process.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

const char* kRecipe = R"(
[task]
name = "copy"
vocab = 8
[model]
d_model = 8
n_heads = 2
n_layers = 1
encodings = ["nope", "rope"]
[train]
max_length = 3
steps = 10
batch_size = 4
warmup_steps = 2
log_every = 100
checkpoint_every = 100
[eval]
lengths = [2, 3, 5]
samples = 4
batch_size = 4
[probe]
lengths = [3, 5]
samples = 2
stored_samples = 1
)";

// A damaged copy of the run file: how it was made, and the edit that makes it.
struct Damage {
  std::string what;
  std::function<void(const fs::path&)> apply;
  // Resealed: checksums that hold over changed content. `lexp dump`, which shows a file's content
  // as it is, is not held to the intact output there.
  bool resealed = false;
};

// Every dataset of an HDF5 file with the file offset and size of its stored values.
struct StoredDataset {
  std::string name;
  uint64_t offset = 0, size = 0;
};

std::vector<StoredDataset> StoredDatasets(const fs::path& file) {
  std::vector<StoredDataset> out;
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  H5Ovisit(
      f, H5_INDEX_NAME, H5_ITER_INC,
      [](hid_t obj, const char* name, const H5O_info_t* info, void* data) -> herr_t {
        if (info->type != H5O_TYPE_DATASET) return 0;
        const hid_t ds = H5Dopen2(obj, name, H5P_DEFAULT);
        const haddr_t at = H5Dget_offset(ds);
        const hsize_t size = H5Dget_storage_size(ds);
        if (at != HADDR_UNDEF && size > 0)
          static_cast<std::vector<StoredDataset>*>(data)->push_back({name, at, size});
        H5Dclose(ds);
        return 0;
      },
      &out);
  H5Fclose(f);
  return out;
}

void FlipBit(const fs::path& file, uint64_t byte, int bit) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(byte));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ (1 << bit));
  f.seekp(static_cast<std::streamoff>(byte));
  f.write(&c, 1);
}

// Raw HDF5 edits, as another program (h5py) makes them.
void Edit(const fs::path& file, const std::function<void(hid_t)>& edit) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  edit(f);
  H5Fclose(f);
}

void SetText(hid_t obj, const char* name, const std::string& value) {
  H5Adelete(obj, name);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  const char* text = value.c_str();
  H5Awrite(a, type, &text);
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
}

void SetGroupText(hid_t f, const char* group, const char* name, const std::string& value) {
  const hid_t g = H5Gopen2(f, group, H5P_DEFAULT);
  SetText(g, name, value);
  H5Gclose(g);
}

// Replaces a dataset with the same values stored as `type` (and, with `dims`, another shape).
void Retype(hid_t f, const char* name, hid_t type, std::vector<hsize_t> dims = {}) {
  const hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  const hid_t space = H5Dget_space(ds);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  std::vector<double> v(static_cast<size_t>(n));
  H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  if (dims.empty()) {
    dims.resize(static_cast<size_t>(H5Sget_simple_extent_ndims(space)));
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  }
  H5Sclose(space);
  H5Dclose(ds);
  H5Ldelete(f, name, H5P_DEFAULT);
  const hid_t s2 = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t d2 = H5Dcreate2(f, name, type, s2, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d2, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dclose(d2);
  H5Sclose(s2);
}

// The recipe text of the file, edited by `change`, written back as /config/recipe.
void EditRecipe(hid_t f, const std::function<std::string(std::string)>& change) {
  const hid_t ds = H5Dopen2(f, "/config/recipe", H5P_DEFAULT);
  const hid_t type = H5Dget_type(ds);
  char* text = nullptr;
  const hid_t mem = H5Tcopy(H5T_C_S1);
  H5Tset_size(mem, H5T_VARIABLE);
  H5Tset_cset(mem, H5Tget_cset(type));
  H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text);
  const std::string edited = change(text);
  H5free_memory(text);
  H5Dclose(ds);
  H5Ldelete(f, "/config/recipe", H5P_DEFAULT);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t d2 =
      H5Dcreate2(f, "/config/recipe", mem, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const char* out = edited.c_str();
  H5Dwrite(d2, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, &out);
  H5Dclose(d2);
  H5Sclose(space);
  H5Tclose(mem);
  H5Tclose(type);
}

// The damage of the fuzz, generated from a fixed seed over the file's own datasets.
std::vector<Damage> Damages(const fs::path& good) {
  std::vector<Damage> d;
  Rng rng(2026);
  for (const StoredDataset& s : StoredDatasets(good)) {
    const uint64_t byte = s.offset + rng.UniformInt(0, static_cast<int64_t>(s.size) - 1);
    const int bit = static_cast<int>(rng.UniformInt(0, 7));
    d.push_back({fmt::format("a bit flipped in {}", s.name),
                 [=](const fs::path& f) { FlipBit(f, byte, bit); }});
  }
  const uint64_t size = fs::file_size(good);
  for (int k = 0; k < 24; ++k) {
    const uint64_t byte = rng.UniformInt(0, static_cast<int64_t>(size) - 1);
    const int bit = static_cast<int>(rng.UniformInt(0, 7));
    d.push_back({fmt::format("a bit flipped at byte {}", byte),
                 [=](const fs::path& f) { FlipBit(f, byte, bit); }});
  }
  auto sealed = [](std::function<void(hid_t)> edit) {
    return [=](const fs::path& f) {
      Edit(f, edit);
      h5::Reseal(f.string());
    };
  };
  auto unsealed = [](std::function<void(hid_t)> edit) {
    return [=](const fs::path& f) { Edit(f, edit); };
  };
  const std::vector<std::pair<std::string, std::function<void(hid_t)>>> edits = {
      {"tok_emb stored as int32 (F2)", [](hid_t f) { Retype(f, "/model/tok_emb", H5T_STD_I32LE); }},
      {"tok_emb stored as float64", [](hid_t f) { Retype(f, "/model/tok_emb", H5T_IEEE_F64LE); }},
      {"the query/key/value weights reshaped to 1-D (F3)",
       [](hid_t f) { Retype(f, "/model/layer0.attn.qkv.w", H5T_IEEE_F32LE, {8 * 24}); }},
      {"the recipe edited to 2 layers (F4)",
       [](hid_t f) {
         EditRecipe(f, [](std::string r) {
           return std::regex_replace(r, std::regex("n_layers = 1"), "n_layers = 2");
         });
       }},
      {"the recipe edited to another width",
       [](hid_t f) {
         EditRecipe(f, [](std::string r) {
           return std::regex_replace(r, std::regex("d_model = 8"), "d_model = 16");
         });
       }},
      {"format lexp-run/99 (F5)", [](hid_t f) { SetGroupText(f, "/", "format", "lexp-run/99"); }},
      {"format removed", [](hid_t f) { H5Adelete_by_name(f, "/", "format", H5P_DEFAULT); }},
      {"format lexp-run/2 on a sealed file",
       [](hid_t f) { SetGroupText(f, "/", "format", "lexp-run/2"); }},
      {"state running (F6)", [](hid_t f) { SetGroupText(f, "/status", "state", "running"); }},
      {"state bogus (F8)", [](hid_t f) { SetGroupText(f, "/status", "state", "bogus"); }},
      {"encoding edited to a name no encoding has",
       [](hid_t f) { SetGroupText(f, "/", "encoding", "ropez"); }},
      {"/eval removed", [](hid_t f) { H5Ldelete(f, "/eval", H5P_DEFAULT); }},
      {"/model removed", [](hid_t f) { H5Ldelete(f, "/model", H5P_DEFAULT); }},
      {"/config removed", [](hid_t f) { H5Ldelete(f, "/config", H5P_DEFAULT); }},
      {"/status removed", [](hid_t f) { H5Ldelete(f, "/status", H5P_DEFAULT); }},
      {"/analysis removed", [](hid_t f) { H5Ldelete(f, "/analysis", H5P_DEFAULT); }},
      {"/eval renamed",
       [](hid_t f) { H5Lmove(f, "/eval", f, "/eval2", H5P_DEFAULT, H5P_DEFAULT); }},
      {"/model/head.w renamed",
       [](hid_t f) { H5Lmove(f, "/model/head.w", f, "/model/head.x", H5P_DEFAULT, H5P_DEFAULT); }},
      {"/eval/loss shortened", [](hid_t f) { Retype(f, "/eval/loss", H5T_IEEE_F64LE, {2}); }},
  };
  for (const auto& [what, edit] : edits) {
    d.push_back({what + ", resealed", sealed(edit), true});
    d.push_back({what + ", checksums left as they were", unsealed(edit)});
  }
  // A state lexp writes (failed), resealed, is a valid file of another run, not damage: only the
  // unsealed edit is.
  d.push_back({"state failed, checksums left as they were",
               unsealed([](hid_t f) { SetGroupText(f, "/status", "state", "failed"); })});
  return d;
}

// A command's output with what legitimately differs between directories and runs taken out:
// the directory's path, wall-clock times and throughput.
std::string Normal(std::string s, const fs::path& dir) {
  const std::string d = dir.string();
  for (size_t at; (at = s.find(d)) != std::string::npos;) s.replace(at, d.size(), "DIR");
  s = std::regex_replace(
      s,
      std::regex(R"([0-9.]+k? tok/s|ETA [0-9:]+|in [0-9.]+ ?s\b|greedy decoding took [^\n]*)"),
      "T");
  return s;
}

// The figure data (.dat files) of a directory's figures/, by name.
std::map<std::string, std::string> FigureData(const fs::path& dir) {
  std::map<std::string, std::string> out;
  if (!fs::exists(dir / "figures")) return out;
  for (const auto& e : fs::directory_iterator(dir / "figures"))
    if (e.path().extension() == ".dat")
      out[e.path().filename().string()] = Normal(testing::Slurp(e.path()), dir);
  return out;
}

// One reading command on a case directory (a copy of the run directory with its rope.h5 maybe
// damaged): its exit code, normalised output, and figure data.
struct Outcome {
  int code = 0;
  std::string out, err;
  std::map<std::string, std::string> figures;
};

struct Command {
  std::string name;
  std::function<std::vector<std::string>(const fs::path& dir)> args;
};

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"eval",
       [](const fs::path& d) {
         return std::vector<std::string>{"eval", (d / "rope.h5").string(), "--no-figures"};
       }},
      {"analyze",
       [](const fs::path& d) {
         return std::vector<std::string>{"analyze", (d / "rope.h5").string()};
       }},
      {"status",
       [](const fs::path& d) {
         return std::vector<std::string>{"status", d.string()};
       }},
      {"collect",
       [](const fs::path& d) {
         return std::vector<std::string>{"collect", d.string(), "--no-figures"};
       }},
      {"figures",
       [](const fs::path& d) {
         return std::vector<std::string>{"figures", d.string(), "--data-only"};
       }},
      {"base-law",
       [](const fs::path& d) {
         return std::vector<std::string>{"base-law", d.string()};
       }},
      {"dump",
       [](const fs::path& d) {
         return std::vector<std::string>{"dump", (d / "rope.h5").string(), "/eval/loss"};
       }},
      {"init_from",
       [](const fs::path& d) {
         return std::vector<std::string>{"run",
                                         (d.parent_path() / "recipe.toml").string(),
                                         "--out",
                                         (d / "tuned").string(),
                                         "--no-figures",
                                         "--set",
                                         "model.encodings=rope",
                                         "--set",
                                         "train.init_from=" + (d / "rope.h5").string()};
       }},
  };
  return commands;
}

// A fresh copy of the good directory for one command.
fs::path CaseDir(const fs::path& root, const fs::path& good, const std::string& name) {
  const fs::path d = root / name;
  fs::remove_all(d);
  fs::create_directories(d);
  fs::copy(good, d, fs::copy_options::recursive);
  return d;
}

Outcome RunCommand(const Command& c, const fs::path& dir) {
  const testing::LexpResult r = testing::RunLexp(dir, c.args(dir));
  Outcome o;
  o.code = r.code;
  o.out = Normal(r.out, dir);
  o.err = r.err;
  o.figures = FigureData(dir);
  // What a training run or an evaluation wrote is compared through what it printed.
  return o;
}

TEST(CorruptionFuzz, EveryReadingCommandRefusesADamagedFileOrGivesTheIntactResults) {
  const fs::path root = testing::FreshTempDir("corruption_fuzz");
  std::ofstream(root / "recipe.toml") << kRecipe;
  const testing::LexpResult trained =
      testing::RunLexp(root, {"run", "recipe.toml", "--out", "good", "--no-figures"});
  ASSERT_EQ(trained.code, 0) << trained.err;
  const fs::path good = root / "good";
  // The intact directory's results, command by command.
  std::vector<Outcome> intact;
  for (const Command& c : Commands()) {
    intact.push_back(RunCommand(c, CaseDir(root, good, "intact_" + c.name)));
    ASSERT_EQ(intact.back().code, 0) << c.name << ": " << intact.back().err;
  }
  const std::vector<Damage> damages = Damages(good / "rope.h5");
  ASSERT_GE(damages.size(), 150u);
  // Each damaged file is made once, here, on one thread; the commands then run on copies of it.
  std::vector<fs::path> damaged(damages.size());
  for (size_t k = 0; k < damages.size(); ++k) {
    damaged[k] = root / fmt::format("damaged{}.h5", k);
    fs::copy_file(good / "rope.h5", damaged[k]);
    damages[k].apply(damaged[k]);
  }
  // Every damage against every command, on two threads; the verdicts are kept in order.
  struct Verdict {
    std::string what;
    int refused = 0, identical = 0;
    std::vector<std::string> wrong;  // silent different results or crashes
  };
  std::vector<Verdict> verdicts(damages.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next++) < damages.size();) {
      Verdict& v = verdicts[k];
      v.what = damages[k].what;
      for (size_t c = 0; c < Commands().size(); ++c) {
        const Command& cmd = Commands()[c];
        if (damages[k].resealed && cmd.name == "dump") continue;
        const fs::path dir = CaseDir(root, good, fmt::format("case{}_{}", k, cmd.name));
        fs::copy_file(damaged[k], dir / "rope.h5", fs::copy_options::overwrite_existing);
        const Outcome o = RunCommand(cmd, dir);
        if (o.code == 2 && o.err.find("rope.h5") != std::string::npos) {
          ++v.refused;
        } else if (o.code == 0 && o.out == intact[c].out && o.figures == intact[c].figures) {
          ++v.identical;
        } else {
          v.wrong.push_back(fmt::format(
              "{} exit {}: {}", cmd.name, o.code,
              o.code == 0 ? "results differ from the intact file's" : o.err.substr(0, 300)));
        }
        fs::remove_all(dir);
      }
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  int refused = 0, identical = 0, wrong = 0;
  for (const Verdict& v : verdicts) {
    refused += v.refused;
    identical += v.identical;
    wrong += static_cast<int>(v.wrong.size());
    for (const std::string& w : v.wrong) ADD_FAILURE() << v.what << ": " << w;
  }
  std::printf(
      "corruption fuzz: %zu damaged files x %zu commands: %d refused naming the file, %d "
      "with the intact results, %d otherwise\n",
      damages.size(), Commands().size(), refused, identical, wrong);
  EXPECT_EQ(wrong, 0);
  fs::remove_all(root);
}

}  // namespace
}  // namespace lexp
