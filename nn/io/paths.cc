#include "nn/io/paths.h"

#include <initializer_list>
#include <string>
#include <system_error>

#include "nn/check.h"

namespace lexp {
namespace {

// Text pieces joined (appended one by one: GCC 12 warns falsely about "literal" + std::string).
std::string Join(std::initializer_list<std::string> parts) {
  std::string s;
  for (const std::string& p : parts) s.append(p);
  return s;
}

}  // namespace

std::filesystem::path OwnSubdirectory(const std::filesystem::path& base,
                                      const std::filesystem::path& sub) {
  namespace fs = std::filesystem;
  fs::path at = base;
  std::error_code ec;
  if (!base.empty()) {
    fs::create_directories(base, ec);
    LEXP_INPUT_CHECK(!ec,
                     Join({"cannot create the directory '", base.string(), "': ", ec.message()}));
  }
  for (const fs::path& part : sub) {
    if (part.empty() || part == ".") continue;
    LEXP_INPUT_CHECK(part != "..",
                     Join({"'", (base / sub).string(), "' leaves '", base.string(), "'"}));
    at /= part;
    const fs::file_status st = fs::symlink_status(at, ec);
    LEXP_INPUT_CHECK(!fs::is_symlink(st),
                     Join({"'", at.string(),
                           "' is a symbolic link; lexp does not write through links inside its "
                           "output directory (remove the link, or give another --out)"}));
    if (fs::exists(st)) {
      LEXP_INPUT_CHECK(fs::is_directory(st),
                       Join({"'", at.string(), "' exists and is not a directory"}));
      continue;
    }
    fs::create_directory(at, ec);
    LEXP_INPUT_CHECK(!ec,
                     Join({"cannot create the directory '", at.string(), "': ", ec.message()}));
  }
  return at;
}

}  // namespace lexp
