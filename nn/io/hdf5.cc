// See hdf5.h. Errors from the HDF5 library are turned into lexp::Error with the object's name.
#include "nn/io/hdf5.h"

#include <cstdio>
#include <filesystem>

#include "nn/check.h"

namespace lexp::h5 {
namespace {

struct SilenceHdf5 {
  SilenceHdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};
const SilenceHdf5 kSilence;

Handle Check(hid_t id, herr_t (*closer)(hid_t), const std::string& what) {
  LEXP_CHECK(id >= 0, "HDF5: " + what);
  return Handle(id, closer);
}

Handle Space(const std::vector<uint64_t>& dims) {
  std::vector<hsize_t> d(dims.begin(), dims.end());
  if (d.empty()) return Check(H5Screate(H5S_SCALAR), H5Sclose, "create scalar dataspace");
  return Check(H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr), H5Sclose,
               "create dataspace");
}

void WriteRaw(hid_t group, const std::string& name, hid_t mem_type, hid_t file_type,
              const void* data, size_t count, const std::vector<uint64_t>& dims) {
  uint64_t expect = 1;
  for (auto d : dims) expect *= d;
  LEXP_CHECK(expect == count, "HDF5: dataset '" + name + "' has " + std::to_string(count) +
                                  " values for dims of " + std::to_string(expect));
  if (H5Lexists(group, name.c_str(), H5P_DEFAULT) > 0) H5Ldelete(group, name.c_str(), H5P_DEFAULT);
  Handle space = Space(dims);
  Handle ds = Check(H5Dcreate2(group, name.c_str(), file_type, space.id(), H5P_DEFAULT,
                               H5P_DEFAULT, H5P_DEFAULT),
                    H5Dclose, "create dataset '" + name + "'");
  if (count > 0)
    LEXP_CHECK(H5Dwrite(ds.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0,
               "HDF5: write dataset '" + name + "'");
}

void SetStringAttr(hid_t obj, const std::string& name, const std::string& value) {
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
  Handle type = Check(H5Tcopy(H5T_C_S1), H5Tclose, "string type");
  H5Tset_size(type.id(), std::max<size_t>(1, value.size()));
  H5Tset_cset(type.id(), H5T_CSET_UTF8);
  Handle space = Check(H5Screate(H5S_SCALAR), H5Sclose, "scalar space");
  Handle a = Check(H5Acreate2(obj, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT),
                   H5Aclose, "create attribute '" + name + "'");
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  LEXP_CHECK(H5Awrite(a.id(), type.id(), padded.data()) >= 0, "HDF5: write attribute " + name);
}

std::string ReadStringAttr(hid_t obj, const std::string& name) {
  Handle a = Check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose,
                   "open attribute '" + name + "'");
  Handle type = Check(H5Aget_type(a.id()), H5Tclose, "attribute type");
  LEXP_CHECK(H5Tget_class(type.id()) == H5T_STRING, "HDF5: attribute '" + name + "' is not text");
  const size_t n = H5Tget_size(type.id());
  std::string s(n, '\0');
  LEXP_CHECK(H5Aread(a.id(), type.id(), s.data()) >= 0, "HDF5: read attribute " + name);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
std::vector<T> ReadRaw(hid_t group, const std::string& name, hid_t mem_type,
                       std::vector<uint64_t>* dims) {
  Handle ds = Check(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose,
                    "open dataset '" + name + "'");
  Handle space = Check(H5Dget_space(ds.id()), H5Sclose, "dataset space");
  const int rank = H5Sget_simple_extent_ndims(space.id());
  std::vector<hsize_t> d(std::max(rank, 0));
  if (rank > 0) H5Sget_simple_extent_dims(space.id(), d.data(), nullptr);
  uint64_t count = 1;
  for (auto x : d) count *= x;
  std::vector<T> out(count);
  if (count > 0)
    LEXP_CHECK(H5Dread(ds.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) >= 0,
               "HDF5: read dataset '" + name + "'");
  if (dims) dims->assign(d.begin(), d.end());
  return out;
}

}  // namespace

Group Group::CreateGroup(const std::string& name) const {
  if (H5Lexists(id(), name.c_str(), H5P_DEFAULT) > 0) return OpenGroup(name);
  return Group(Check(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     H5Gclose, "create group '" + name + "'"));
}

Group Group::OpenGroup(const std::string& name) const {
  return Group(Check(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), H5Gclose,
                     "no group '" + name + "' in this file"));
}

bool Group::Has(const std::string& name) const {
  return H5Lexists(id(), name.c_str(), H5P_DEFAULT) > 0;
}

bool Group::IsGroup(const std::string& name) const {
  Handle obj = Check(H5Oopen(id(), name.c_str(), H5P_DEFAULT), H5Oclose, "open object '" + name + "'");
  return H5Iget_type(obj.id()) == H5I_GROUP;
}

std::vector<std::string> Group::AttrNames() const {
  std::vector<std::string> names;
  H5Aiterate2(
      id(), H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->push_back(name);
        return 0;
      },
      &names);
  return names;
}

std::string Group::AttrAsText(const std::string& name) const {
  Handle a = Check(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose,
                   "open attribute '" + name + "'");
  Handle type = Check(H5Aget_type(a.id()), H5Tclose, "attribute type");
  switch (H5Tget_class(type.id())) {
    case H5T_STRING: return AttrString(name);
    case H5T_INTEGER: return std::to_string(AttrInt(name));
    default: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", AttrDouble(name));
      return buf;
    }
  }
}

void Group::Remove(const std::string& name) const {
  if (Has(name)) LEXP_CHECK(H5Ldelete(id(), name.c_str(), H5P_DEFAULT) >= 0, "cannot remove " + name);
}

std::vector<std::string> Group::Children() const {
  std::vector<std::string> names;
  H5Literate(
      id(), H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->push_back(name);
        return 0;
      },
      &names);
  return names;
}

void Group::WriteDoubles(const std::string& name, const std::vector<double>& data,
                         const std::vector<uint64_t>& dims, const std::string& axes,
                         const std::string& units) const {
  WriteRaw(id(), name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, data.data(), data.size(), dims);
  SetChildAttr(name, "axes", axes);
  if (!units.empty()) SetChildAttr(name, "units", units);
}

void Group::WriteFloats(const std::string& name, const std::vector<float>& data,
                        const std::vector<uint64_t>& dims, const std::string& axes,
                        const std::string& units) const {
  WriteRaw(id(), name, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, data.data(), data.size(), dims);
  SetChildAttr(name, "axes", axes);
  if (!units.empty()) SetChildAttr(name, "units", units);
}

void Group::WriteInts(const std::string& name, const std::vector<int64_t>& data,
                      const std::vector<uint64_t>& dims, const std::string& axes,
                      const std::string& units) const {
  WriteRaw(id(), name, H5T_NATIVE_INT64, H5T_STD_I64LE, data.data(), data.size(), dims);
  SetChildAttr(name, "axes", axes);
  if (!units.empty()) SetChildAttr(name, "units", units);
}

void Group::WriteString(const std::string& name, const std::string& text) const {
  if (Has(name)) H5Ldelete(id(), name.c_str(), H5P_DEFAULT);
  Handle type = Check(H5Tcopy(H5T_C_S1), H5Tclose, "string type");
  H5Tset_size(type.id(), std::max<size_t>(1, text.size()));
  H5Tset_cset(type.id(), H5T_CSET_UTF8);
  Handle space = Check(H5Screate(H5S_SCALAR), H5Sclose, "scalar space");
  Handle ds = Check(H5Dcreate2(id(), name.c_str(), type.id(), space.id(), H5P_DEFAULT,
                               H5P_DEFAULT, H5P_DEFAULT),
                    H5Dclose, "create dataset '" + name + "'");
  const std::string padded = text.empty() ? std::string(1, '\0') : text;
  LEXP_CHECK(H5Dwrite(ds.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, padded.data()) >= 0,
             "HDF5: write text '" + name + "'");
}

std::vector<double> Group::ReadDoubles(const std::string& name, std::vector<uint64_t>* dims) const {
  return ReadRaw<double>(id(), name, H5T_NATIVE_DOUBLE, dims);
}

std::vector<int64_t> Group::ReadInts(const std::string& name, std::vector<uint64_t>* dims) const {
  return ReadRaw<int64_t>(id(), name, H5T_NATIVE_INT64, dims);
}

std::string Group::ReadString(const std::string& name) const {
  Handle ds = Check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose,
                    "open dataset '" + name + "'");
  Handle type = Check(H5Dget_type(ds.id()), H5Tclose, "dataset type");
  const size_t n = H5Tget_size(type.id());
  std::string s(n, '\0');
  LEXP_CHECK(H5Dread(ds.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, s.data()) >= 0,
             "HDF5: read text '" + name + "'");
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

void Group::SetAttr(const std::string& name, const std::string& value) const {
  SetStringAttr(id(), name, value);
}

void Group::SetAttr(const std::string& name, double value) const {
  if (H5Aexists(id(), name.c_str()) > 0) H5Adelete(id(), name.c_str());
  Handle space = Check(H5Screate(H5S_SCALAR), H5Sclose, "scalar space");
  Handle a = Check(
      H5Acreate2(id(), name.c_str(), H5T_IEEE_F64LE, space.id(), H5P_DEFAULT, H5P_DEFAULT),
      H5Aclose, "create attribute '" + name + "'");
  H5Awrite(a.id(), H5T_NATIVE_DOUBLE, &value);
}

void Group::SetAttr(const std::string& name, int64_t value) const {
  if (H5Aexists(id(), name.c_str()) > 0) H5Adelete(id(), name.c_str());
  Handle space = Check(H5Screate(H5S_SCALAR), H5Sclose, "scalar space");
  Handle a = Check(
      H5Acreate2(id(), name.c_str(), H5T_STD_I64LE, space.id(), H5P_DEFAULT, H5P_DEFAULT),
      H5Aclose, "create attribute '" + name + "'");
  H5Awrite(a.id(), H5T_NATIVE_INT64, &value);
}

void Group::SetChildAttr(const std::string& child, const std::string& name,
                         const std::string& value) const {
  Handle obj = Check(H5Oopen(id(), child.c_str(), H5P_DEFAULT), H5Oclose,
                     "open object '" + child + "'");
  SetStringAttr(obj.id(), name, value);
}

bool Group::HasAttr(const std::string& name) const { return H5Aexists(id(), name.c_str()) > 0; }

std::string Group::AttrString(const std::string& name) const { return ReadStringAttr(id(), name); }

double Group::AttrDouble(const std::string& name) const {
  Handle a = Check(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose,
                   "open attribute '" + name + "'");
  double v = 0;
  LEXP_CHECK(H5Aread(a.id(), H5T_NATIVE_DOUBLE, &v) >= 0, "HDF5: read attribute " + name);
  return v;
}

int64_t Group::AttrInt(const std::string& name) const {
  Handle a = Check(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose,
                   "open attribute '" + name + "'");
  int64_t v = 0;
  LEXP_CHECK(H5Aread(a.id(), H5T_NATIVE_INT64, &v) >= 0, "HDF5: read attribute " + name);
  return v;
}

std::string Group::ChildAttrString(const std::string& child, const std::string& name) const {
  Handle obj = Check(H5Oopen(id(), child.c_str(), H5P_DEFAULT), H5Oclose,
                     "open object '" + child + "'");
  return ReadStringAttr(obj.id(), name);
}

Writer::Writer(const std::string& path, Mode mode) : path_(path), tmp_(path + ".tmp") {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  if (mode == Mode::kUpdate) {
    LEXP_CHECK(std::filesystem::exists(path), "no such file to update: '" + path + "'");
    std::filesystem::copy_file(path, tmp_, std::filesystem::copy_options::overwrite_existing);
    file_ = Check(H5Fopen(tmp_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose,
                  "cannot open '" + tmp_ + "' for update");
  } else {
    file_ = Check(H5Fcreate(tmp_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose,
                  "cannot create '" + tmp_ + "'");
  }
  root_ = Group(Check(H5Gopen2(file_.id(), "/", H5P_DEFAULT), H5Gclose, "open root"));
}

Writer::~Writer() {
  if (!committed_) {
    root_ = Group();
    file_ = Handle();
    std::remove(tmp_.c_str());
  }
}

void Writer::Commit() {
  root_ = Group();
  file_ = Handle();  // closes the file
  std::filesystem::rename(tmp_, path_);
  committed_ = true;
}

Reader::Reader(const std::string& path) {
  LEXP_CHECK(std::filesystem::exists(path), "no such file: '" + path + "'");
  file_ = Check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose,
                "cannot open '" + path + "' as HDF5");
  root_ = Group(Check(H5Gopen2(file_.id(), "/", H5P_DEFAULT), H5Gclose, "open root"));
}

}  // namespace lexp::h5
