// Compares two HDF5 files object by object (every group, dataset value and attribute), skipping
// names that legitimately differ between runs (wall-clock times, throughput, thread count, the
// path of the JS reference, which names the run's own directory, and the checksum over an object's
// attributes, which covers those; every other attribute is compared itself).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "nn/check.h"
#include "nn/io/hdf5.h"

namespace lexp::testing {

inline const std::set<std::string> kTimeDependent = {"start_time",  "end_time",
                                                     "tokens_per_s", "threads",
                                                     "reference",   "attributes_checksum"};

inline void ExpectSameGroup(const h5::Group& a, const h5::Group& b, const std::string& path,
                            int* compared) {
  for (const auto& name : a.AttrNames()) {
    if (kTimeDependent.count(name)) continue;
    ASSERT_TRUE(b.HasAttr(name)) << path << "@" << name;
    EXPECT_EQ(a.AttrAsText(name), b.AttrAsText(name)) << path << "@" << name;
  }
  const auto children = a.Children();
  EXPECT_EQ(children, b.Children()) << path;
  for (const auto& c : children) {
    if (kTimeDependent.count(c)) continue;
    const std::string p = path + "/" + c;
    if (a.IsGroup(c)) {
      ExpectSameGroup(a.OpenGroup(c), b.OpenGroup(c), p, compared);
      continue;
    }
    std::vector<double> va, vb;
    bool numeric = true;
    try {
      va = a.ReadDoubles(c);
      vb = b.ReadDoubles(c);
    } catch (const Error&) {
      numeric = false;
    }
    if (numeric) {
      ASSERT_EQ(va.size(), vb.size()) << p;
      for (size_t i = 0; i < va.size(); ++i) {
        // Bit-identical: compare the representations, so that a NaN equals the same NaN and -0 and
        // +0 differ (values are read as doubles; float and integer datasets convert exactly).
        if (std::memcmp(&va[i], &vb[i], sizeof(double)) != 0) {
          ADD_FAILURE() << p << "[" << i << "]: " << va[i] << " vs " << vb[i];
          break;
        }
      }
    } else {
      EXPECT_EQ(a.ReadString(c), b.ReadString(c)) << p;
    }
    ++*compared;
  }
}

// Returns the number of datasets compared.
inline int ExpectSameRunFiles(const std::string& fa, const std::string& fb) {
  h5::Reader a(fa), b(fb);
  int compared = 0;
  ExpectSameGroup(a.root(), b.root(), "", &compared);
  return compared;
}

}  // namespace lexp::testing
