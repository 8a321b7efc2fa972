// The seal of a file's bytes (nn/io/hdf5.h, data/README.md): a committed file starts with the
// seal of every byte after its user block; one flipped byte anywhere after it, or in the seal, is
// refused before libhdf5 parses the file; a file written without a seal (before it existed) is
// read as before; an update copies the verified objects into a new, sealed file.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

std::string Head(const fs::path& p, size_t n) {
  std::ifstream f(p, std::ios::binary);
  std::string s(n, '\0');
  f.read(s.data(), static_cast<std::streamsize>(n));
  return s;
}

void FlipByte(const fs::path& p, uint64_t at) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 1);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(&c, 1);
}

std::string ReadError(const fs::path& p) {
  try {
    h5::Reader r(p.string());
    r.root().VerifyAll();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(FileSeal, EveryByteAfterTheUserBlockAndTheSealItselfAreChecked) {
  const fs::path dir = testing::FreshTempDir("file_seal");
  const fs::path good = dir / "good.h5";
  {
    h5::Writer w(good.string());
    w.root().WriteDoubles("x", {1, 2, 3}, {3}, "i");
    w.Commit();
  }
  EXPECT_EQ(Head(good, 23), "LEXP-HDF5-SEAL fnv1a64:");
  EXPECT_EQ(ReadError(good), "");
  const uint64_t size = fs::file_size(good);
  // Bytes of HDF5's superblock, its metadata, the last byte and the seal's digits.
  for (const uint64_t at : {uint64_t{512}, uint64_t{600}, size / 2, size - 1, uint64_t{30}}) {
    const fs::path bad = dir / ("bad" + std::to_string(at) + ".h5");
    fs::copy_file(good, bad);
    FlipByte(bad, at);
    EXPECT_NE(ReadError(bad).find("its bytes do not match the checksum it was written with"),
              std::string::npos)
        << "byte " << at << ": " << ReadError(bad);
  }
  // A flip in the seal's magic is a damaged seal, not a file written before seals.
  for (const uint64_t at : {uint64_t{0}, uint64_t{9}}) {
    const fs::path bad = dir / ("magic" + std::to_string(at) + ".h5");
    fs::copy_file(good, bad);
    FlipByte(bad, at);
    EXPECT_NE(ReadError(bad).find("its seal is unreadable"), std::string::npos)
        << "byte " << at << ": " << ReadError(bad);
  }
  fs::remove_all(dir);
}

TEST(FileSeal, AFileWithoutASealIsReadWithItsOwnChecksums) {
  const fs::path dir = testing::FreshTempDir("file_seal_legacy");
  const fs::path plain = dir / "plain.h5";
  const hid_t f = H5Fcreate(plain.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t n = 2;
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t ds = H5Dcreate2(f, "x", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT,
                              H5P_DEFAULT);
  const double v[2] = {4, 5};
  H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
  H5Dclose(ds);
  H5Sclose(space);
  H5Fclose(f);
  h5::Reader r(plain.string());
  EXPECT_EQ(r.root().ReadDoubles("x"), (std::vector<double>{4, 5}));
  fs::remove_all(dir);
}

TEST(FileSeal, AnUpdateWritesANewSealedFileWithTheSameContent) {
  const fs::path dir = testing::FreshTempDir("file_seal_update");
  const fs::path p = dir / "f.h5";
  {
    h5::Writer w(p.string());
    w.root().WriteDoubles("x", {1, 2}, {2}, "i");
    w.root().CreateGroup("g").WriteString("note", "kept");
    w.Commit();
  }
  {
    h5::Writer w(p.string(), h5::Writer::Mode::kUpdate);
    w.root().Remove("x");
    w.root().WriteDoubles("y", {7}, {1}, "i");
    w.Commit();
  }
  EXPECT_EQ(Head(p, 23), "LEXP-HDF5-SEAL fnv1a64:");
  h5::Reader r(p.string());
  r.root().VerifyAll();
  EXPECT_FALSE(r.root().Has("x"));
  EXPECT_EQ(r.root().ReadDoubles("y"), (std::vector<double>{7}));
  EXPECT_EQ(r.root().OpenGroup("g").ReadString("note"), "kept");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
