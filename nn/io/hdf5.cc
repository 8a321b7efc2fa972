// See hdf5.h. Errors from the HDF5 library are turned into lexp::Error with the object's name.
#include "nn/io/hdf5.h"

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "nn/check.h"
#include "nn/io/hdf5_detail.h"

namespace lexp::h5 {
namespace detail {

// HDF5 prints its error stack unless told not to; lexp reports errors itself. The setting belongs
// to the calling thread (thread-safe HDF5 keeps one error stack per thread), so every thread
// silences its own, once, when it first opens a file (Reader and Writer: every access goes through
// one; models of a sweep run on worker threads with run.jobs > 1).
void SilenceThisThread() {
  thread_local const bool silenced = H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0;
  (void)silenced;
}

htri_t LinkExists(hid_t loc, const char* name, hid_t lapl) {
  return Cleared(H5Lexists(loc, name, lapl));
}
htri_t AttrExists(hid_t obj, const char* name) { return Cleared(H5Aexists(obj, name)); }

// "f4", "f8", "i8", "u1", ... for a numeric file type, "text" for a string, "other" otherwise.
std::string TypeTag(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT) return "f" + std::to_string(size);
  if (cls == H5T_INTEGER)
    return (H5Tget_sign(type) == H5T_SGN_NONE ? "u" : "i") + std::to_string(size);
  if (cls == H5T_STRING) return "text";
  return "other";
}

Hasher DatasetHasher(const std::string& tag, const std::vector<uint64_t>& dims) {
  Hasher h;
  h.Text(tag);
  h.U64(dims.size());
  for (uint64_t d : dims) h.U64(d);
  return h;
}

Handle Check(hid_t id, herr_t (*closer)(hid_t), const std::string& what) {
  Cleared(id);
  LEXP_CHECK(id >= 0, "HDF5: " + what);
  return Handle(id, closer);
}

// The name of the file holding object `obj`, for messages addressed to the user.
std::string FileOf(hid_t obj) {
  const ssize_t n = H5Fget_name(obj, nullptr, 0);
  if (n <= 0) return "?";
  std::string name(static_cast<size_t>(n) + 1, '\0');
  H5Fget_name(obj, name.data(), name.size());
  name.resize(static_cast<size_t>(n));
  return name;
}

// Reading a file the user gave us: what is missing or malformed is bad input, named with the file.
Handle CheckRead(hid_t id, herr_t (*closer)(hid_t), hid_t where, const std::string& what) {
  if (Cleared(id) < 0) FailInput("file '" + FileOf(where) + "': " + what);
  return Handle(id, closer);
}

void SetStringAttr(hid_t obj, const std::string& name, const std::string& value);
std::string ReadStringAttr(hid_t obj, const std::string& name);
bool FileSealed(hid_t obj);
void VerifyDataset(hid_t ds, hid_t group, const std::string& name, uint64_t h, bool sealed);

Handle Space(const std::vector<uint64_t>& dims) {
  std::vector<hsize_t> d(dims.begin(), dims.end());
  if (d.empty()) return Check(H5Screate(H5S_SCALAR), H5Sclose, "create scalar dataspace");
  return Check(H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr), H5Sclose,
               "create dataspace");
}

void WriteRaw(hid_t group, const std::string& name, hid_t mem_type, hid_t file_type,
              const void* data, size_t count, const std::vector<uint64_t>& dims,
              const std::string& checksum) {
  uint64_t expect = 1;
  for (auto d : dims) expect *= d;
  LEXP_CHECK(expect == count, "HDF5: dataset '" + name + "' has " + std::to_string(count) +
                                  " values for dims of " + std::to_string(expect));
  if (LinkExists(group, name.c_str(), H5P_DEFAULT) > 0) H5Ldelete(group, name.c_str(), H5P_DEFAULT);
  Handle space = Space(dims);
  Handle ds = Check(
      H5Dcreate2(group, name.c_str(), file_type, space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose, "create dataset '" + name + "'");
  if (count > 0)
    LEXP_CHECK(H5Dwrite(ds.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0,
               "HDF5: write dataset '" + name + "'");
  SetStringAttr(ds.id(), kChecksum, checksum);
}

// Text is stored as variable-length UTF-8, the type h5py reads as str (a fixed-length string reads
// as bytes, b'yarn').
Handle TextType() {
  Handle type = Check(H5Tcopy(H5T_C_S1), H5Tclose, "string type");
  H5Tset_size(type.id(), H5T_VARIABLE);
  H5Tset_cset(type.id(), H5T_CSET_UTF8);
  return type;
}

void SetStringAttr(hid_t obj, const std::string& name, const std::string& value) {
  if (AttrExists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
  Handle type = TextType();
  Handle space = Check(H5Screate(H5S_SCALAR), H5Sclose, "scalar space");
  Handle a = Check(H5Acreate2(obj, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT),
                   H5Aclose, "create attribute '" + name + "'");
  const char* text = value.c_str();
  LEXP_CHECK(H5Awrite(a.id(), type.id(), &text) >= 0, "HDF5: write attribute " + name);
}


std::string ReadStringAttr(hid_t obj, const std::string& name) {
  Handle a = CheckRead(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, obj,
                       "no attribute '" + name + "'");
  Handle type = Check(H5Aget_type(a.id()), H5Tclose, "attribute type");
  Handle space = Check(H5Aget_space(a.id()), H5Sclose, "attribute space");
  if (H5Sget_simple_extent_npoints(space.id()) != 1)
    FailInput("file '" + FileOf(obj) + "': attribute '" + name + "' is not a single text");
  return ReadText(type.id(), obj, "attribute '" + name + "'",
                  [&](hid_t mem, void* buf) { return H5Aread(a.id(), mem, buf); });
}

template <typename T>
std::vector<T> ReadRaw(hid_t group, const std::string& name, hid_t mem_type,
                       std::vector<uint64_t>* dims, bool verify) {
  Handle ds = CheckRead(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose, group,
                        "no dataset '" + name + "'");
  Handle type = Check(H5Dget_type(ds.id()), H5Tclose, "dataset type");
  const H5T_class_t cls = H5Tget_class(type.id());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT)
    FailInput("file '" + FileOf(group) + "': dataset '" + name + "' is not numeric");
  Handle space = Check(H5Dget_space(ds.id()), H5Sclose, "dataset space");
  const int rank = H5Sget_simple_extent_ndims(space.id());
  std::vector<hsize_t> d(std::max(rank, 0));
  if (rank > 0) H5Sget_simple_extent_dims(space.id(), d.data(), nullptr);
  uint64_t count = 1;
  for (auto x : d) {
    if (x != 0 && count > (uint64_t{1} << 40) / x)
      FailInput("file '" + FileOf(group) + "': dataset '" + name + "' is implausibly large");
    count *= x;
  }
  std::vector<T> out(count);
  if (count > 0 &&
      Cleared(H5Dread(ds.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data())) < 0)
    FailInput("file '" + FileOf(group) + "': cannot read dataset '" + name + "'");
  const std::vector<uint64_t> shape(d.begin(), d.end());
  if (verify) {
    // The values as written: floats as doubles, integers as int64.
    Hasher h = DatasetHasher(TypeTag(type.id()), shape);
    if (cls == H5T_FLOAT) {
      std::vector<double> v(count);
      if (count > 0 &&
          Cleared(H5Dread(ds.id(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data())) < 0)
        FailInput("file '" + FileOf(group) + "': cannot read dataset '" + name + "'");
      h.Bytes(v.data(), v.size() * sizeof(double));
    } else {
      std::vector<int64_t> v(count);
      if (count > 0 &&
          Cleared(H5Dread(ds.id(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data())) < 0)
        FailInput("file '" + FileOf(group) + "': cannot read dataset '" + name + "'");
      h.Bytes(v.data(), v.size() * sizeof(int64_t));
    }
    VerifyDataset(ds.id(), group, name, h.h, FileSealed(group));
  }
  if (dims) *dims = shape;
  return out;
}

// The text of a scalar attribute's value, for the attributes' hash (numbers at full precision).
std::string AttrValueText(hid_t obj, const char* name) {
  Handle a =
      Check(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose, std::string("open attribute ") + name);
  Handle type = Check(H5Aget_type(a.id()), H5Tclose, "attribute type");
  Handle space = Check(H5Aget_space(a.id()), H5Sclose, "attribute space");
  const H5T_class_t cls = H5Tget_class(type.id());
  const std::string tag = TypeTag(type.id());
  if (H5Sget_simple_extent_npoints(space.id()) != 1) return tag + ":array";
  if (cls == H5T_STRING)
    return tag + ":" +
           ReadText(type.id(), obj, std::string("attribute '") + name + "'",
                    [&](hid_t mem, void* buf) { return H5Aread(a.id(), mem, buf); });
  if (cls == H5T_INTEGER) {
    int64_t v = 0;
    if (Cleared(H5Aread(a.id(), H5T_NATIVE_INT64, &v)) < 0) return tag + ":?";
    return tag + ":" + std::to_string(v);
  }
  if (cls == H5T_FLOAT) {
    double v = 0;
    if (Cleared(H5Aread(a.id(), H5T_NATIVE_DOUBLE, &v)) < 0) return tag + ":?";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return tag + ":" + buf;
  }
  return tag;
}

std::vector<std::string> AttrNamesOf(hid_t obj) {
  std::vector<std::string> names;
  H5Aiterate2(
      obj, H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->push_back(name);
        return 0;
      },
      &names);
  return names;
}

// The names of a group's links, in name order.
std::vector<std::string> ChildNamesOf(hid_t group) {
  std::vector<std::string> names;
  H5Literate(
      group, H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->push_back(name);
        return 0;
      },
      &names);
  return names;
}

// The hash of an object's attributes other than attributes_checksum, by name.
uint64_t AttributesHash(hid_t obj) {
  Hasher h;
  for (const std::string& name : AttrNamesOf(obj)) {
    if (name == kAttributesChecksum) continue;
    h.Text(name);
    h.Text(AttrValueText(obj, name.c_str()));
  }
  return h.h;
}

std::string ObjectName(hid_t obj) {
  const ssize_t n = H5Iget_name(obj, nullptr, 0);
  if (n <= 0) return "?";
  std::string name(static_cast<size_t>(n) + 1, '\0');
  H5Iget_name(obj, name.data(), name.size());
  name.resize(static_cast<size_t>(n));
  return name;
}

bool FileSealed(hid_t obj) {
  const htri_t e = Cleared(H5Aexists_by_name(obj, "/", kAttributesChecksum, H5P_DEFAULT));
  return e > 0;
}

// Verifies the attributes of obj against its attributes_checksum (a sealed file must have one).
void VerifyAttributes(hid_t obj, bool sealed) {
  if (AttrExists(obj, kAttributesChecksum) <= 0) {
    if (sealed)
      FailInput("file '" + FileOf(obj) + "': object '" + ObjectName(obj) +
                "' has no attributes_checksum although the file carries checksums (the file is "
                "damaged or was changed by another program)");
    return;
  }
  const std::string want = ReadStringAttr(obj, kAttributesChecksum);
  if (want != ChecksumText(AttributesHash(obj)))
    FailInput("file '" + FileOf(obj) + "': the attributes of '" + ObjectName(obj) +
              "' fail their checksum (the file is damaged or was changed by another program)");
}

// Verifies a dataset's values (hash h over what was read) against its checksum attribute.
void VerifyDataset(hid_t ds, hid_t group, const std::string& name, uint64_t h, bool sealed) {
  if (AttrExists(ds, kChecksum) <= 0) {
    if (sealed)
      FailInput("file '" + FileOf(group) + "': dataset '" + ObjectName(ds) +
                "' has no checksum although the file carries checksums (the file is damaged or "
                "was changed by another program)");
    return;
  }
  if (ReadStringAttr(ds, kChecksum) != ChecksumText(h))
    FailInput("file '" + FileOf(group) + "': dataset '" + ObjectName(ds) +
              "' fails its checksum (the file is damaged or was changed by another program)");
  (void)name;
}

}  // namespace detail

using namespace detail;

std::string ChecksumText(uint64_t hash) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

bool Group::Sealed() const { return FileSealed(id()); }

void Group::VerifyOwnAttributes() const {
  if (!verify_ || attributes_verified_) return;
  VerifyAttributes(id(), FileSealed(id()));
  attributes_verified_ = true;
}

Group Group::CreateGroup(const std::string& name) const {
  if (LinkExists(id(), name.c_str(), H5P_DEFAULT) > 0) return OpenGroup(name);
  return Group(Check(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     H5Gclose, "create group '" + name + "'"),
               verify_);
}

Group Group::OpenGroup(const std::string& name) const {
  return Group(CheckRead(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), H5Gclose, id(),
                         "no group '" + name + "'"),
               verify_);
}

bool Group::Has(const std::string& name) const {
  // An error is not an absence: a damaged link table would otherwise read as a missing group.
  const htri_t e = LinkExists(id(), name.c_str(), H5P_DEFAULT);
  if (e < 0)
    FailInput("file '" + FileOf(id()) + "': cannot read the links of '" + ObjectName(id()) +
              "' (the file is damaged)");
  return e > 0;
}

bool Group::IsGroup(const std::string& name) const {
  Handle obj = CheckRead(H5Oopen(id(), name.c_str(), H5P_DEFAULT), H5Oclose, id(),
                         "no object '" + name + "'");
  return H5Iget_type(obj.id()) == H5I_GROUP;
}

std::vector<std::string> Group::AttrNames() const {
  VerifyOwnAttributes();
  return AttrNamesOf(id());
}

std::string Group::AttrAsText(const std::string& name) const {
  VerifyOwnAttributes();
  Handle a = CheckRead(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose, id(),
                       "no attribute '" + name + "'");
  Handle type = Check(H5Aget_type(a.id()), H5Tclose, "attribute type");
  switch (H5Tget_class(type.id())) {
    case H5T_STRING:
      return AttrString(name);
    case H5T_INTEGER:
      return std::to_string(AttrInt(name));
    default: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", AttrDouble(name));
      return buf;
    }
  }
}

void Group::Remove(const std::string& name) const {
  // The file being changed is a verified copy of the user's: what fails here is its damage.
  if (Has(name) && Cleared(H5Ldelete(id(), name.c_str(), H5P_DEFAULT)) < 0)
    FailInput("file '" + FileOf(id()) + "': cannot remove '" + name + "' from '" +
              ObjectName(id()) + "' (the file is damaged)");
}

std::vector<std::string> Group::Children() const { return ChildNamesOf(id()); }

void Group::WriteDoubles(const std::string& name, const std::vector<double>& data,
                         const std::vector<uint64_t>& dims, const std::string& axes,
                         const std::string& units) const {
  Hasher h = DatasetHasher("f8", dims);
  h.Bytes(data.data(), data.size() * sizeof(double));
  WriteRaw(id(), name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, data.data(), data.size(), dims,
           ChecksumText(h.h));
  SetChildAttr(name, "axes", axes);
  if (!units.empty()) SetChildAttr(name, "units", units);
}

void Group::WriteFloats(const std::string& name, const std::vector<float>& data,
                        const std::vector<uint64_t>& dims, const std::string& axes,
                        const std::string& units) const {
  Hasher h = DatasetHasher("f4", dims);
  for (float f : data) {
    const double v = f;
    h.Bytes(&v, sizeof v);
  }
  WriteRaw(id(), name, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, data.data(), data.size(), dims,
           ChecksumText(h.h));
  SetChildAttr(name, "axes", axes);
  if (!units.empty()) SetChildAttr(name, "units", units);
}

void Group::WriteInts(const std::string& name, const std::vector<int64_t>& data,
                      const std::vector<uint64_t>& dims, const std::string& axes,
                      const std::string& units) const {
  Hasher h = DatasetHasher("i8", dims);
  h.Bytes(data.data(), data.size() * sizeof(int64_t));
  WriteRaw(id(), name, H5T_NATIVE_INT64, H5T_STD_I64LE, data.data(), data.size(), dims,
           ChecksumText(h.h));
  SetChildAttr(name, "axes", axes);
  if (!units.empty()) SetChildAttr(name, "units", units);
}

void Group::WriteString(const std::string& name, const std::string& text) const {
  if (Has(name)) H5Ldelete(id(), name.c_str(), H5P_DEFAULT);
  Handle type = TextType();
  Handle space = Check(H5Screate(H5S_SCALAR), H5Sclose, "scalar space");
  Handle ds = Check(
      H5Dcreate2(id(), name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose, "create dataset '" + name + "'");
  const char* data = text.c_str();
  LEXP_CHECK(H5Dwrite(ds.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &data) >= 0,
             "HDF5: write text '" + name + "'");
  Hasher h = DatasetHasher("text", {});
  h.Text(text);
  SetStringAttr(ds.id(), kChecksum, ChecksumText(h.h));
}

std::vector<double> Group::ReadDoubles(const std::string& name, std::vector<uint64_t>* dims) const {
  return ReadRaw<double>(id(), name, H5T_NATIVE_DOUBLE, dims, verify_);
}

std::vector<int64_t> Group::ReadInts(const std::string& name, std::vector<uint64_t>* dims) const {
  return ReadRaw<int64_t>(id(), name, H5T_NATIVE_INT64, dims, verify_);
}

namespace {
std::string DimsText(const std::vector<uint64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i)
    s += (i ? ", " : "") + (d[i] == Group::kAnySize ? std::string("any") : std::to_string(d[i]));
  return s + "]";
}
void CheckShape(const Group& g, const std::string& name, const std::vector<uint64_t>& got,
                const std::vector<uint64_t>& want) {
  bool ok = got.size() == want.size();
  for (size_t i = 0; ok && i < got.size(); ++i)
    ok = want[i] == Group::kAnySize || want[i] == got[i];
  if (!ok)
    FailInput("file '" + g.FileName() + "': dataset '" + name + "' has shape " + DimsText(got) +
              ", expected " + DimsText(want) + " (the file is damaged or was not written by lexp)");
}
}  // namespace

std::vector<double> Group::ReadDoublesShaped(const std::string& name,
                                             const std::vector<uint64_t>& dims,
                                             std::vector<uint64_t>* got) const {
  std::vector<uint64_t> d;
  auto v = ReadDoubles(name, &d);
  CheckShape(*this, name, d, dims);
  if (got) *got = std::move(d);
  return v;
}

std::vector<int64_t> Group::ReadIntsShaped(const std::string& name,
                                           const std::vector<uint64_t>& dims,
                                           std::vector<uint64_t>* got) const {
  std::vector<uint64_t> d;
  auto v = ReadInts(name, &d);
  CheckShape(*this, name, d, dims);
  if (got) *got = std::move(d);
  return v;
}

std::string Group::FileName() const { return FileOf(id()); }

std::string Group::ReadString(const std::string& name) const {
  Handle ds = CheckRead(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose, id(),
                        "no dataset '" + name + "'");
  Handle type = Check(H5Dget_type(ds.id()), H5Tclose, "dataset type");
  Handle space = Check(H5Dget_space(ds.id()), H5Sclose, "dataset space");
  if (H5Sget_simple_extent_npoints(space.id()) != 1)
    FailInput("file '" + FileOf(id()) + "': dataset '" + name + "' is not a single text");
  std::string text = ReadText(type.id(), id(), "dataset '" + name + "'", [&](hid_t mem, void* buf) {
    return H5Dread(ds.id(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
  });
  if (verify_) {
    Hasher h = DatasetHasher("text", {});
    h.Text(text);
    VerifyDataset(ds.id(), id(), name, h.h, FileSealed(id()));
  }
  return text;
}

void Group::SetAttr(const std::string& name, const std::string& value) const {
  SetStringAttr(id(), name, value);
}

void Group::SetAttr(const std::string& name, double value) const {
  if (AttrExists(id(), name.c_str()) > 0) H5Adelete(id(), name.c_str());
  Handle space = Check(H5Screate(H5S_SCALAR), H5Sclose, "scalar space");
  Handle a =
      Check(H5Acreate2(id(), name.c_str(), H5T_IEEE_F64LE, space.id(), H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose, "create attribute '" + name + "'");
  H5Awrite(a.id(), H5T_NATIVE_DOUBLE, &value);
}

void Group::SetAttr(const std::string& name, int64_t value) const {
  if (AttrExists(id(), name.c_str()) > 0) H5Adelete(id(), name.c_str());
  Handle space = Check(H5Screate(H5S_SCALAR), H5Sclose, "scalar space");
  Handle a =
      Check(H5Acreate2(id(), name.c_str(), H5T_STD_I64LE, space.id(), H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose, "create attribute '" + name + "'");
  H5Awrite(a.id(), H5T_NATIVE_INT64, &value);
}

void Group::SetChildAttr(const std::string& child, const std::string& name,
                         const std::string& value) const {
  Handle obj =
      Check(H5Oopen(id(), child.c_str(), H5P_DEFAULT), H5Oclose, "open object '" + child + "'");
  SetStringAttr(obj.id(), name, value);
}

bool Group::HasAttr(const std::string& name) const {
  VerifyOwnAttributes();
  const htri_t e = AttrExists(id(), name.c_str());
  if (e < 0)
    FailInput("file '" + FileOf(id()) + "': cannot read the attributes of '" + ObjectName(id()) +
              "' (the file is damaged)");
  return e > 0;
}

std::string Group::AttrString(const std::string& name) const {
  VerifyOwnAttributes();
  return ReadStringAttr(id(), name);
}

namespace {
// A numeric scalar attribute converted to `mem_type`.
template <typename T>
T ReadNumberAttr(hid_t obj, const std::string& name, hid_t mem_type) {
  Handle a = CheckRead(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, obj,
                       "no attribute '" + name + "'");
  Handle type = Check(H5Aget_type(a.id()), H5Tclose, "attribute type");
  Handle space = Check(H5Aget_space(a.id()), H5Sclose, "attribute space");
  const H5T_class_t cls = H5Tget_class(type.id());
  if ((cls != H5T_INTEGER && cls != H5T_FLOAT) || H5Sget_simple_extent_npoints(space.id()) != 1)
    FailInput("file '" + FileOf(obj) + "': attribute '" + name + "' is not a number");
  T v = 0;
  if (Cleared(H5Aread(a.id(), mem_type, &v)) < 0)
    FailInput("file '" + FileOf(obj) + "': cannot read attribute '" + name + "'");
  return v;
}
}  // namespace

double Group::AttrDouble(const std::string& name) const {
  VerifyOwnAttributes();
  return ReadNumberAttr<double>(id(), name, H5T_NATIVE_DOUBLE);
}

int64_t Group::AttrInt(const std::string& name) const {
  VerifyOwnAttributes();
  return ReadNumberAttr<int64_t>(id(), name, H5T_NATIVE_INT64);
}

std::string Group::ChildAttrString(const std::string& child, const std::string& name) const {
  Handle obj = CheckRead(H5Oopen(id(), child.c_str(), H5P_DEFAULT), H5Oclose, id(),
                         "no object '" + child + "'");
  if (verify_) VerifyAttributes(obj.id(), FileSealed(id()));
  return ReadStringAttr(obj.id(), name);
}

bool Group::ChildHasAttr(const std::string& child, const std::string& name) const {
  Handle obj = CheckRead(H5Oopen(id(), child.c_str(), H5P_DEFAULT), H5Oclose, id(),
                         "no object '" + child + "'");
  if (verify_) VerifyAttributes(obj.id(), FileSealed(id()));
  const htri_t e = AttrExists(obj.id(), name.c_str());
  if (e < 0)
    FailInput("file '" + FileOf(id()) + "': cannot read the attributes of '" + child +
              "' (the file is damaged)");
  return e > 0;
}

std::vector<uint64_t> Group::Dims(const std::string& dataset) const {
  Handle ds = CheckRead(H5Dopen2(id(), dataset.c_str(), H5P_DEFAULT), H5Dclose, id(),
                        "no dataset '" + dataset + "'");
  Handle space = Check(H5Dget_space(ds.id()), H5Sclose, "dataset space");
  const int rank = H5Sget_simple_extent_ndims(space.id());
  std::vector<hsize_t> d(std::max(rank, 0));
  if (rank > 0) H5Sget_simple_extent_dims(space.id(), d.data(), nullptr);
  return std::vector<uint64_t>(d.begin(), d.end());
}

std::string Group::DatasetType(const std::string& dataset) const {
  Handle ds = CheckRead(H5Dopen2(id(), dataset.c_str(), H5P_DEFAULT), H5Dclose, id(),
                        "no dataset '" + dataset + "'");
  Handle type = Check(H5Dget_type(ds.id()), H5Tclose, "dataset type");
  const std::string tag = TypeTag(type.id());
  if (tag.size() > 1 && (tag[0] == 'f' || tag[0] == 'i' || tag[0] == 'u'))
    return tag.substr(0, 1) + std::to_string(8 * std::stoi(tag.substr(1)));
  return tag;
}

}  // namespace lexp::h5
