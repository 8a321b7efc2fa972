// A small RAII layer over the HDF5 C API: files, groups, n-d numeric datasets with an `axes`
// attribute (and optional `units`), scalar and string attributes, and reading them back. Every lexp
// output file goes through this, so every dataset is self-describing. Files are written to
// "<name>.tmp" and renamed on Commit(), so a crash never leaves a half file under the final name;
// the temporary is created exclusively (never through an existing file or link).
//
// Integrity: HDF5 stores no checksum of its own for lexp's layout, so a bit flip inside a weight
// would be read as another weight. Every dataset lexp writes carries an attribute `checksum` (a
// 64-bit FNV-1a hash of its type, shape and values) and, when the file is committed, every object
// (the root, each group and dataset) an attribute `attributes_checksum` over its other attributes.
// A file opened for reading verifies a dataset's checksum whenever it is read, and an object's
// attributes when one of them is first read; a mismatch, or a checksum missing from a file whose
// root carries one, is an input error naming the file and the object. A file whose root has no
// `attributes_checksum` was written before checksums (or by another program) and is read
// unverified; readers of run files refuse that for the formats that carry them. Opening a file for
// update verifies all of it first, so that an update never re-seals damage.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lexp::h5 {

class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    Reset();
    id_ = o.id_;
    closer_ = o.closer_;
    o.id_ = -1;
    return *this;
  }
  ~Handle() { Reset(); }
  hid_t id() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now and reports the library's verdict (a file's close flushes it).
  bool Close() {
    const bool ok = id_ < 0 || !closer_ || closer_(id_) >= 0;
    id_ = -1;
    return ok;
  }

 private:
  void Reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  herr_t (*closer_)(hid_t) = nullptr;
};

// A group (or the file's root) to which datasets and attributes are written or read.
class Group {
 public:
  Group() = default;
  // verify: the group belongs to a file opened for reading, whose checksums are verified.
  explicit Group(Handle h, bool verify = false) : h_(std::move(h)), verify_(verify) {}
  hid_t id() const { return h_.id(); }
  // True when the file's root carries checksums (a file written by this version of lexp).
  bool Sealed() const;

  Group CreateGroup(const std::string& name) const;  // creates or opens
  Group OpenGroup(const std::string& name) const;
  bool Has(const std::string& name) const;
  bool IsGroup(const std::string& name) const;
  std::vector<std::string> AttrNames() const;
  // Any scalar attribute (text, integer or float) as text; for comparisons and printing.
  std::string AttrAsText(const std::string& name) const;
  std::vector<std::string> Children() const;
  void Remove(const std::string& name) const;  // unlinks a child (dataset or group) if present

  // Row-major n-d datasets. `axes` names each dimension ("layer,head,query,key"); units optional.
  void WriteDoubles(const std::string& name, const std::vector<double>& data,
                    const std::vector<uint64_t>& dims, const std::string& axes,
                    const std::string& units = "") const;
  void WriteFloats(const std::string& name, const std::vector<float>& data,
                   const std::vector<uint64_t>& dims, const std::string& axes,
                   const std::string& units = "") const;
  void WriteInts(const std::string& name, const std::vector<int64_t>& data,
                 const std::vector<uint64_t>& dims, const std::string& axes,
                 const std::string& units = "") const;
  void WriteString(const std::string& name,
                   const std::string& text) const;  // scalar string dataset

  std::vector<double> ReadDoubles(const std::string& name,
                                  std::vector<uint64_t>* dims = nullptr) const;
  std::vector<int64_t> ReadInts(const std::string& name,
                                std::vector<uint64_t>* dims = nullptr) const;
  // Datasets that must have exactly `dims` (kAnySize matches any extent; *got receives the actual
  // dims); otherwise an input error naming the file, the dataset and both shapes. Every reader of a
  // file it did not just write checks shapes this way.
  static constexpr uint64_t kAnySize = ~uint64_t{0};
  std::vector<double> ReadDoublesShaped(const std::string& name, const std::vector<uint64_t>& dims,
                                        std::vector<uint64_t>* got = nullptr) const;
  std::vector<int64_t> ReadIntsShaped(const std::string& name, const std::vector<uint64_t>& dims,
                                      std::vector<uint64_t>* got = nullptr) const;
  std::string ReadString(const std::string& name) const;
  // The file holding this group, for messages.
  std::string FileName() const;

  void SetAttr(const std::string& name, const std::string& value) const;
  void SetAttr(const std::string& name, const char* value) const {
    SetAttr(name, std::string(value));
  }
  void SetAttr(const std::string& name, double value) const;
  void SetAttr(const std::string& name, int64_t value) const;
  void SetAttr(const std::string& name, int value) const {
    SetAttr(name, static_cast<int64_t>(value));
  }
  void SetAttr(const std::string& name, bool value) const {
    SetAttr(name, static_cast<int64_t>(value));
  }
  // Attributes of a child object (dataset or group) of this group.
  void SetChildAttr(const std::string& child, const std::string& name,
                    const std::string& value) const;
  bool HasAttr(const std::string& name) const;
  std::string AttrString(const std::string& name) const;
  double AttrDouble(const std::string& name) const;
  int64_t AttrInt(const std::string& name) const;
  std::string ChildAttrString(const std::string& child, const std::string& name) const;
  bool ChildHasAttr(const std::string& child, const std::string& name) const;
  // The dimensions of a dataset of any type ({} for a scalar).
  std::vector<uint64_t> Dims(const std::string& dataset) const;
  // The stored element type of a numeric dataset: "f32", "f64", "i32", "i64", ... (text: "text").
  std::string DatasetType(const std::string& dataset) const;
  // Reads every dataset and attribute below this group, verifying their checksums (a sealed file).
  void VerifyAll() const;

 private:
  void VerifyOwnAttributes() const;
  Handle h_;
  bool verify_ = false;
  mutable bool attributes_verified_ = false;
};

// The content hashes of the integrity scheme (see above), exposed for tests.
std::string ChecksumText(uint64_t hash);

// Rewrites every checksum of an HDF5 file in place from its current content: the file is then
// sealed as if lexp had written it. For tests that build files that are damaged in meaning but
// consistent in their checksums (a NaN weight, a wrong shape), so that the checks behind the
// checksums are exercised; and for a user who changed a run file on purpose, who then owns it.
void Reseal(const std::string& path);
// Rewrites only the seal of a sealed file's bytes (the user block a Writer fills), leaving its
// dataset and attribute checksums as they are: for tests of the checks behind the seal (a dataset
// changed without its checksum). No-op for a file without a seal.
void RestampFileSeal(const std::string& path);

// Clears the calling thread's HDF5 error stack. A thread that made HDF5 calls calls it before it
// ends: HDF5 1.10 frees an ended thread's stack without releasing the records left on it (even a
// successful call can leave some), and then cannot close at exit ("HDF5: infinite loop closing
// library").
void ClearThreadErrors();

// A file being written: lives at "<path>.tmp" until Commit() renames it to `path`.
// kUpdate starts from a copy of the existing file (to add or replace groups); the original stays
// untouched until Commit().
class Writer {
 public:
  enum class Mode { kCreate, kUpdate };
  explicit Writer(const std::string& path, Mode mode = Mode::kCreate);
  ~Writer();  // an uncommitted file is removed
  Group& root() { return root_; }
  void Commit();

 private:
  std::string path_, tmp_;
  Handle file_;
  Group root_;
  bool committed_ = false;
};

// A file opened read-only.
class Reader {
 public:
  explicit Reader(const std::string& path);
  const Group& root() const { return root_; }

 private:
  Handle file_;
  Group root_;
};

}  // namespace lexp::h5
