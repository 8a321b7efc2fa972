// Directories lexp creates inside a directory it writes (figures/, plan/, slurm/, a task's or a
// claim's folder): never through a symbolic link, which would write outside the output directory
// the user chose (a link at a file's name is already replaced, not followed, by h5::Writer).
#pragma once

#include <filesystem>

namespace lexp {

// Creates base/sub component by component below base (base itself is the user's, and may be a
// link) and returns it. A component that is a symbolic link, or exists and is not a directory, is
// an input error naming it.
std::filesystem::path OwnSubdirectory(const std::filesystem::path& base,
                                      const std::filesystem::path& sub);

}  // namespace lexp
