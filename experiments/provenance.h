// Provenance attributes written at the root of every run file: versions of lexp and of every
// library, the compiler and build, the git commit, and UTC times.
#pragma once

#include <string>

#include "nn/io/hdf5.h"

namespace lexp {

std::string UtcNow();  // ISO 8601, seconds
void WriteProvenance(const h5::Group& root, int threads);

}  // namespace lexp
