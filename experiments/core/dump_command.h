// `lexp dump FILE [PATH]`: what an HDF5 file of lexp holds at PATH, for a reader without h5py or
// h5dump at hand. A group: its attributes, then each child (group, or dataset with its shape, axes
// and units). A dataset: its shape, axes and units, then its values, one line per index of the
// axes before the last (at most `max_values` values; 0 prints all).
#pragma once

#include <string>

namespace lexp {

std::string DumpHdf5(const std::string& file, const std::string& path, long max_values = 200);

}  // namespace lexp
