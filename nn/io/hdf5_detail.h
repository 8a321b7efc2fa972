// Internals nn/io/hdf5.cc (groups and datasets) and nn/io/hdf5_files.cc (files, seals, copies)
// share: HDF5 error handling and the integrity scheme's hash (hdf5.h). Not for other code.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/io/hdf5.h"

namespace lexp::h5::detail {

void SilenceThisThread();

// A failed call leaves its error records on the calling thread's stack until that thread's next
// HDF5 call; a worker thread whose last call failed would keep them to the end, and HDF5 cannot
// close at exit while records hold its error messages ("HDF5: infinite loop closing library").
// Every failure lexp handles is cleared at once.
template <typename R>
R Cleared(R r) {
  if (r < 0) H5Eclear2(H5E_DEFAULT);
  return r;
}
// The integrity scheme (hdf5.h): 64-bit FNV-1a over a dataset's type tag, shape and values (floats
// as doubles, integers as int64, text as its bytes), and over an object's attributes.
constexpr const char* kChecksum = "checksum";
constexpr const char* kAttributesChecksum = "attributes_checksum";

struct Hasher {
  uint64_t h = 14695981039346656037ull;
  void Bytes(const void* p, size_t n) {
    const unsigned char* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= b[i];
      h *= 1099511628211ull;
    }
  }
  void Text(const std::string& t) {
    const uint64_t n = t.size();
    Bytes(&n, sizeof n);
    Bytes(t.data(), t.size());
  }
  void U64(uint64_t v) { Bytes(&v, sizeof v); }
};

// The name of the file holding object `obj`, for messages addressed to the user.
std::string FileOf(hid_t obj);
// An HDF5 id checked (an internal error names `what`) and owned.
Handle Check(hid_t id, herr_t (*closer)(hid_t), const std::string& what);
// "f4", "f8", "i8", "u1", ... for a numeric file type, "text" for a string, "other" otherwise.
std::string TypeTag(hid_t type);
Hasher DatasetHasher(const std::string& tag, const std::vector<uint64_t>& dims);
void SetStringAttr(hid_t obj, const std::string& name, const std::string& value);
std::vector<std::string> ChildNamesOf(hid_t group);
uint64_t AttributesHash(hid_t obj);
// Reading a file the user gave us: what is missing or malformed is bad input, named with the file.
Handle CheckRead(hid_t id, herr_t (*closer)(hid_t), hid_t where, const std::string& what);
// Whether the file holding obj is sealed (its root carries attributes_checksum).
bool FileSealed(hid_t obj);
// Checks obj's attributes against its attributes_checksum (required when sealed).
void VerifyAttributes(hid_t obj, bool sealed);

// Text of a scalar string attribute or dataset, fixed-length (as lexp writes it) or variable-length
// (h5py's default). `read` reads the object into a buffer of the given memory type.
template <typename Read>
std::string ReadText(hid_t file_type, hid_t where, const std::string& what, Read read) {
  if (H5Tget_class(file_type) != H5T_STRING)
    FailInput("file '" + FileOf(where) + "': " + what + " is not text");
  if (H5Tis_variable_str(file_type) > 0) {
    Handle mem = Check(H5Tcopy(H5T_C_S1), H5Tclose, "string type");
    H5Tset_size(mem.id(), H5T_VARIABLE);
    H5Tset_cset(mem.id(), H5Tget_cset(file_type));
    char* text = nullptr;
    if (Cleared(read(mem.id(), static_cast<void*>(&text))) < 0)
      FailInput("file '" + FileOf(where) + "': cannot read " + what);
    std::string s = text ? text : "";
    H5free_memory(text);
    return s;
  }
  const size_t n = H5Tget_size(file_type);
  std::string s(n, '\0');
  if (Cleared(read(file_type, static_cast<void*>(s.data()))) < 0)
    FailInput("file '" + FileOf(where) + "': cannot read " + what);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

}  // namespace lexp::h5::detail
