// What the command-line fuzz tests share (cli_fuzz_*_test.cc): a tiny recipe, the fixture that
// trains one good run to corrupt, the table of bad input with its check (exit code, message, no
// source location, nothing written), and raw HDF5 edits as another program would make them.
#pragma once

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

namespace lexp::cli_fuzz_testing {

namespace fs = std::filesystem;

inline const std::string kLexp = testing::kLexpBinary;

// A recipe that trains in well under a second: every bad-input case starts from it.
inline constexpr const char* kTinyRecipe = R"(
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
inline Result Lexp(const fs::path& cwd, const std::vector<std::string>& args,
            const std::string& env = "") {
  return testing::RunLexp(cwd, args, env);
}

// Every file under `dir`, relative to it.
inline std::vector<std::string> Files(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

// A user's error names their input, never lexp's source.
inline const std::regex kSourceLocation(R"([A-Za-z_]+\.(cc|h):[0-9]+)");

struct BadInput {
  std::string what;
  std::vector<std::string> args;  // after `lexp`; RECIPE is the tiny recipe's path
  int code;
  std::string fragment;
};

// The exit code and message fragment the table expects, and no lexp source location.
inline void ExpectRefused(const BadInput& bad, const Result& r) {
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

  // Every case of a table of bad input, each in a fresh directory with the tiny recipe: refused
  // as the row says, and nothing written.
  static void ExpectEveryRowRefused(const std::vector<BadInput>& table);

  inline static fs::path root_, good_;
};

inline void ReplaceDoubles(hid_t file, const char* name, const std::vector<double>& values) {
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
inline void ReplaceFloats(hid_t file, const char* name, const std::vector<float>& values) {
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
inline void SetVariableLengthString(hid_t obj, const char* name, const char* value) {
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


inline void CliFuzz::ExpectEveryRowRefused(const std::vector<BadInput>& table) {
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
}

}  // namespace lexp::cli_fuzz_testing
