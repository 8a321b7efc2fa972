// See hdf5.h: files (Writer, Reader), the seal of their bytes and objects, and copies of a file's
// contents when it is updated. Groups and datasets are in hdf5.cc.
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/io/hdf5_detail.h"

namespace lexp::h5 {

using namespace detail;

// Every object of the group and below, as a reader would meet them (hdf5.h).
void Group::VerifyAll() const {
  const bool sealed = FileSealed(id());
  VerifyAttributes(id(), sealed);
  for (const std::string& child : Children()) {
    if (IsGroup(child)) {
      Group(CheckRead(H5Gopen2(id(), child.c_str(), H5P_DEFAULT), H5Gclose, id(),
                      "no group '" + child + "'"),
            true)
          .VerifyAll();
      continue;
    }
    Handle ds = CheckRead(H5Dopen2(id(), child.c_str(), H5P_DEFAULT), H5Dclose, id(),
                          "no dataset '" + child + "'");
    VerifyAttributes(ds.id(), sealed);
    Handle type = Check(H5Dget_type(ds.id()), H5Tclose, "dataset type");
    const Group self(CheckRead(H5Oopen(id(), ".", H5P_DEFAULT), H5Oclose, id(), "no group"), true);
    if (H5Tget_class(type.id()) == H5T_STRING)
      self.ReadString(child);
    else
      self.ReadDoubles(child);
  }
}

namespace {
// Writes attributes_checksum on every object below (and including) obj: the file's seal.
void Seal(hid_t obj) {
  SetStringAttr(obj, kAttributesChecksum, ChecksumText(AttributesHash(obj)));
  const std::vector<std::string> children = ChildNamesOf(obj);
  for (const std::string& c : children) {
    Handle o = Check(H5Oopen(obj, c.c_str(), H5P_DEFAULT), H5Oclose, "open object '" + c + "'");
    if (H5Iget_type(o.id()) == H5I_GROUP)
      Seal(o.id());
    else
      SetStringAttr(o.id(), kAttributesChecksum, ChecksumText(AttributesHash(o.id())));
  }
}
}  // namespace

namespace {
// Every file a Writer makes starts with a user block that HDF5 skips, holding a checksum of all
// the bytes after it: a reader refuses a file whose bytes changed before libhdf5 parses any of it
// (libhdf5 1.10 can crash on damaged metadata that its own checksums do not cover). Files written
// before the seal existed have no such block and are read as before.
constexpr size_t kUserBlock = 512;
constexpr const char* kSealMagic = "LEXP-HDF5-SEAL fnv1a64:";

// FNV-1a of the bytes of `path` from kUserBlock to the end; false when it cannot be read.
bool HashAfterUserBlock(const std::string& path, uint64_t* out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  Hasher h;
  std::vector<unsigned char> buf(1 << 16);
  bool ok = std::fseek(f, static_cast<long>(kUserBlock), SEEK_SET) == 0;
  while (ok) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), f);
    h.Bytes(buf.data(), n);
    if (n < buf.size()) {
      ok = !std::ferror(f);
      break;
    }
  }
  std::fclose(f);
  *out = h.h;
  return ok;
}

// Writes the seal into the user block of a closed file made by a Writer.
void StampSeal(const std::string& path) {
  uint64_t hash = 0;
  LEXP_INPUT_CHECK(HashAfterUserBlock(path, &hash), "cannot read back '" + path + "'");
  char text[kUserBlock] = {};
  std::snprintf(text, sizeof text, "%s%016llx\n", kSealMagic, static_cast<unsigned long long>(hash));
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  LEXP_INPUT_CHECK(f != nullptr, "cannot write '" + path + "'");
  const bool ok = std::fwrite(text, 1, kUserBlock, f) == kUserBlock;
  LEXP_INPUT_CHECK(std::fclose(f) == 0 && ok, "cannot write '" + path + "' (disk full?)");
}

// True when the file has a seal (the first bytes are its magic).
bool HasSeal(const std::string& path, std::string* block) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  block->assign(kUserBlock, '\0');
  const size_t n = std::fread(block->data(), 1, kUserBlock, f);
  std::fclose(f);
  return n == kUserBlock && block->compare(0, std::strlen(kSealMagic), kSealMagic) == 0;
}

// Refuses a sealed file whose bytes no longer match its seal.
void VerifySeal(const std::string& path) {
  std::string block;
  if (!HasSeal(path, &block)) {
    // A seal whose magic lost a few bytes is a damaged seal, not a file written before seals.
    const size_t m = std::strlen(kSealMagic);
    size_t same = 0;
    for (size_t i = 0; i < m && i < block.size(); ++i) same += block[i] == kSealMagic[i];
    LEXP_INPUT_CHECK(same < m / 2, "file '" + path + "' is damaged: its seal is unreadable");
    return;
  }
  const std::string digits = block.substr(std::strlen(kSealMagic), 16);
  uint64_t hash = 0;
  const bool read = HashAfterUserBlock(path, &hash);
  char want[17];
  std::snprintf(want, sizeof want, "%016llx", static_cast<unsigned long long>(hash));
  LEXP_INPUT_CHECK(read && digits == want && block[std::strlen(kSealMagic) + 16] == '\n',
                   "file '" + path +
                       "' is damaged: its bytes do not match the checksum it was written with");
}

// Copies every attribute of src onto dst, each read whole with its own type; false when one
// cannot be read.
bool CopyAttributes(hid_t src, hid_t dst) {
  H5O_info_t info;
  if (Cleared(H5Oget_info2(src, &info, H5O_INFO_NUM_ATTRS)) < 0) return false;
  for (hsize_t a = 0; a < info.num_attrs; ++a) {
    const hid_t aid = Cleared(
        H5Aopen_by_idx(src, ".", H5_INDEX_NAME, H5_ITER_INC, a, H5P_DEFAULT, H5P_DEFAULT));
    if (aid < 0) return false;
    Handle attr(aid, H5Aclose);
    const hid_t t = Cleared(H5Aget_type(attr.id()));
    const hid_t sp = Cleared(H5Aget_space(attr.id()));
    if (t < 0 || sp < 0) return false;
    Handle type(t, H5Tclose), space(sp, H5Sclose);
    const ssize_t name_len = H5Aget_name(attr.id(), 0, nullptr);
    if (name_len < 0) return false;
    std::string name(static_cast<size_t>(name_len), '\0');
    H5Aget_name(attr.id(), name.size() + 1, name.data());
    const hssize_t n = H5Sget_simple_extent_npoints(space.id());
    const size_t size = H5Tget_size(type.id());
    if (n < 0 || size == 0) return false;
    std::vector<unsigned char> buf(static_cast<size_t>(n) * size);
    if (Cleared(H5Aread(attr.id(), type.id(), buf.data())) < 0) return false;
    const hid_t out = Cleared(
        H5Acreate2(dst, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT));
    const herr_t w = out >= 0 ? H5Awrite(out, type.id(), buf.data()) : -1;
    if (out >= 0) H5Aclose(out);
    H5Dvlen_reclaim(type.id(), space.id(), H5P_DEFAULT, buf.data());  // no-op without vlen data
    if (w < 0) return false;
  }
  return true;
}

// Copies the attributes of group src and every object below it into group dst, dataset by
// dataset (each read whole with its own type and creation properties); false when something
// cannot be read. (H5Ocopy is not used: libhdf5 1.10 crashes copying variable-length string
// attributes kept in dense storage.)
bool CopyGroup(hid_t src, hid_t dst) {
  if (!CopyAttributes(src, dst)) return false;
  for (const std::string& child : ChildNamesOf(src)) {
    const hid_t o = Cleared(H5Oopen(src, child.c_str(), H5P_DEFAULT));
    if (o < 0) return false;
    Handle obj(o, H5Oclose);
    if (H5Iget_type(obj.id()) == H5I_GROUP) {
      // A fresh creation list with the source's link order (its own list holds addresses in
      // the source file).
      const hid_t src_gcpl = Cleared(H5Gget_create_plist(obj.id()));
      if (src_gcpl < 0) return false;
      Handle src_props(src_gcpl, H5Pclose);
      unsigned order = 0;
      H5Pget_link_creation_order(src_props.id(), &order);
      Handle props = Check(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, "group creation properties");
      if (order != 0) H5Pset_link_creation_order(props.id(), order);
      Handle g = Check(H5Gcreate2(dst, child.c_str(), H5P_DEFAULT, props.id(), H5P_DEFAULT),
                       H5Gclose, "copy group '" + child + "'");
      if (!CopyGroup(obj.id(), g.id())) return false;
      continue;
    }
    const hid_t t = Cleared(H5Dget_type(obj.id()));
    const hid_t sp = Cleared(H5Dget_space(obj.id()));
    const hid_t dcpl = Cleared(H5Dget_create_plist(obj.id()));
    if (t < 0 || sp < 0 || dcpl < 0) return false;
    Handle type(t, H5Tclose), space(sp, H5Sclose), props(dcpl, H5Pclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.id());
    const size_t size = H5Tget_size(type.id());
    if (n < 0 || size == 0) return false;
    std::vector<unsigned char> buf(static_cast<size_t>(n) * size);
    if (n > 0 &&
        Cleared(H5Dread(obj.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data())) < 0)
      return false;
    // A chunked dataset keeps its chunks and filters; a contiguous one is created afresh (the
    // source's creation list holds its place in the source file).
    const bool chunked = H5Pget_layout(props.id()) == H5D_CHUNKED;

    const hid_t d = Cleared(H5Dcreate2(dst, child.c_str(), type.id(), space.id(), H5P_DEFAULT,
                                       chunked ? props.id() : H5P_DEFAULT, H5P_DEFAULT));
    const herr_t w =
        d < 0 ? -1
        : n > 0 ? H5Dwrite(d, type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data())
                : 0;
    if (n > 0) H5Dvlen_reclaim(type.id(), space.id(), H5P_DEFAULT, buf.data());  // no-op without vlen
    if (d < 0) return false;
    Handle ds(d, H5Dclose);
    if (w < 0 || !CopyAttributes(obj.id(), ds.id())) return false;
  }
  return true;
}

// Copies the root of the file at `source` (opened read only) into the empty file `dest`.
bool CopyContents(const std::string& source, hid_t dest) {
  const hid_t sf = Cleared(H5Fopen(source.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (sf < 0) return false;
  Handle src(sf, H5Fclose);
  const hid_t sr = Cleared(H5Gopen2(src.id(), "/", H5P_DEFAULT));
  if (sr < 0) return false;
  Handle src_root(sr, H5Gclose);
  Handle dst_root = Check(H5Gopen2(dest, "/", H5P_DEFAULT), H5Gclose, "open root");
  return CopyGroup(src_root.id(), dst_root.id());
}
}  // namespace

Writer::Writer(const std::string& path, Mode mode) : path_(path), tmp_(path + ".tmp") {
  SilenceThisThread();
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  LEXP_INPUT_CHECK(!ec, "cannot create the directory '" + parent.string() + "': " + ec.message());
  LEXP_INPUT_CHECK(!fs::is_directory(path), "'" + path + "' is a directory, not a file");
  // A temporary left by a killed run, or anything else at that name (a symbolic link included:
  // removing it removes the link, not its target), goes; the new one is created exclusively.
  fs::remove(tmp_, ec);
  LEXP_INPUT_CHECK(!ec, "cannot remove '" + tmp_ + "': " + ec.message());
  // Closing the file closes every object still open in it (groups a caller still holds), so the
  // file is complete on disk when Commit() renames it.
  Handle fapl = Check(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "file access properties");
  H5Pset_fclose_degree(fapl.id(), H5F_CLOSE_STRONG);
  // Object headers of format 2 carry HDF5's own checksums: damaged metadata is refused by the
  // library when read, instead of being parsed (a flipped bit in an attribute message of a
  // version-1 header can crash libhdf5 itself, h5dump included, when the file is closed).
  H5Pset_libver_bounds(fapl.id(), H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  // The user block that Commit fills with the file's seal.
  Handle fcpl = Check(H5Pcreate(H5P_FILE_CREATE), H5Pclose, "file creation properties");
  H5Pset_userblock(fcpl.id(), kUserBlock);
  if (mode == Mode::kUpdate) {
    LEXP_INPUT_CHECK(fs::is_regular_file(path), "no such file to update: '" + path + "'");
    // The whole file is verified first: resealing it after the update must not bless damage.
    Reader(path).root().VerifyAll();
    // The update is made in a new file that every object of the user's is copied into, read
    // only: a damaged file is never opened for writing, where libhdf5 can crash on closing what
    // it could not change (a flipped bit in a group's link storage, met by a removal).
    const hid_t f = Cleared(H5Fcreate(tmp_.c_str(), H5F_ACC_EXCL, fcpl.id(), fapl.id()));
    LEXP_INPUT_CHECK(f >= 0, "cannot create '" + tmp_ + "' (is the directory writable?)");
    file_ = Handle(f, H5Fclose);
    bool copied = false;
    try {
      copied = CopyContents(path, file_.id());
    } catch (...) {
      file_ = Handle();
      fs::remove(tmp_, ec);
      throw;
    }
    if (!copied) {
      file_ = Handle();
      fs::remove(tmp_, ec);
      FailInput("file '" + path + "' cannot be read whole (the file is damaged)");
    }
  } else {
    const hid_t f = Cleared(H5Fcreate(tmp_.c_str(), H5F_ACC_EXCL, fcpl.id(), fapl.id()));
    LEXP_INPUT_CHECK(f >= 0, "cannot create '" + tmp_ + "' (is the directory writable?)");
    file_ = Handle(f, H5Fclose);
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
  Seal(root_.id());
  root_ = Group();
  LEXP_INPUT_CHECK(file_.Close(), "cannot write '" + tmp_ + "' (disk full?)");
  StampSeal(tmp_);
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  LEXP_INPUT_CHECK(!ec, "cannot rename '" + tmp_ + "' to '" + path_ + "': " + ec.message());
  committed_ = true;
}

void ClearThreadErrors() { H5Eclear2(H5E_DEFAULT); }

namespace {
// Sets the checksum of every dataset below obj from its values (Reseal).
void ChecksumDatasets(hid_t obj) {
  const std::vector<std::string> children = ChildNamesOf(obj);
  for (const std::string& c : children) {
    Handle o = Check(H5Oopen(obj, c.c_str(), H5P_DEFAULT), H5Oclose, "open object '" + c + "'");
    if (H5Iget_type(o.id()) == H5I_GROUP) {
      ChecksumDatasets(o.id());
      continue;
    }
    Handle type = Check(H5Dget_type(o.id()), H5Tclose, "dataset type");
    Handle space = Check(H5Dget_space(o.id()), H5Sclose, "dataset space");
    const int rank = H5Sget_simple_extent_ndims(space.id());
    std::vector<hsize_t> d(std::max(rank, 0));
    if (rank > 0) H5Sget_simple_extent_dims(space.id(), d.data(), nullptr);
    const std::vector<uint64_t> shape(d.begin(), d.end());
    uint64_t count = 1;
    for (auto x : d) count *= x;
    const H5T_class_t cls = H5Tget_class(type.id());
    Hasher h = DatasetHasher(TypeTag(type.id()), shape);
    if (cls == H5T_FLOAT || cls == H5T_INTEGER) {
      if (cls == H5T_FLOAT) {
        std::vector<double> v(count);
        if (count) H5Dread(o.id(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
        h.Bytes(v.data(), v.size() * sizeof(double));
      } else {
        std::vector<int64_t> v(count);
        if (count) H5Dread(o.id(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
        h.Bytes(v.data(), v.size() * sizeof(int64_t));
      }
    } else if (cls == H5T_STRING && count == 1) {
      h.Text(ReadText(type.id(), obj, "dataset '" + c + "'", [&](hid_t mem, void* buf) {
        return H5Dread(o.id(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
      }));
    } else {
      continue;  // no checksum lexp could verify
    }
    SetStringAttr(o.id(), kChecksum, ChecksumText(h.h));
  }
}
}  // namespace

void RestampFileSeal(const std::string& path) {
  std::string block;
  if (HasSeal(path, &block)) StampSeal(path);
}

void Reseal(const std::string& path) {
  SilenceThisThread();
  const hid_t f = Cleared(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
  LEXP_INPUT_CHECK(f >= 0, "cannot open '" + path + "' as HDF5 to reseal it");
  std::string block;
  const bool sealed = HasSeal(path, &block);
  {
    Handle file(f, H5Fclose);
    Handle root = Check(H5Gopen2(file.id(), "/", H5P_DEFAULT), H5Gclose, "open root");
    ChecksumDatasets(root.id());
    Seal(root.id());
  }
  if (sealed) StampSeal(path);
}

Reader::Reader(const std::string& path) {
  SilenceThisThread();
  LEXP_INPUT_CHECK(std::filesystem::exists(path), "no such file: '" + path + "'");
  LEXP_INPUT_CHECK(std::filesystem::is_regular_file(path),
                   "'" + path + "' is not a file (an HDF5 file was expected)");
  VerifySeal(path);
  const hid_t f = Cleared(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  LEXP_INPUT_CHECK(f >= 0, "cannot open '" + path + "' as HDF5 (not an HDF5 file, or damaged)");
  file_ = Handle(f, H5Fclose);
  // A root group HDF5 cannot open (its header's checksum fails) is damage in the file.
  const hid_t root = Cleared(H5Gopen2(file_.id(), "/", H5P_DEFAULT));
  LEXP_INPUT_CHECK(root >= 0, "cannot read '" + path + "': its root group is damaged");
  root_ = Group(Handle(root, H5Gclose), true);
}

}  // namespace lexp::h5
