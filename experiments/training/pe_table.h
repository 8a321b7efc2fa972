// `lexp pe-table`: the closed-form side of the encodings, without training, into one HDF5 file that
// figure 03 draws: for a head dimension and base, every RoPE scaling rule's per-pair frequency next
// to the original, each parameter-free (or fixed-parameter) bias family's b_h(d) over distance, and
// the learned b_h(d) of trained bias runs (--run).
#pragma once

#include <string>
#include <vector>

namespace lexp {

struct PeTableOptions {
  int head_dim = 128;
  double base = 1e4;
  int train_length = 4096;  // L of the scaling rules
  double factor = 8;        // s of the scaling rules
  int heads = 8;            // for the bias families
  int max_distance = 8192;
  std::string out_file = "data/theory/pe_table.h5";
  // Completed run files of bias encodings (t5, fire, kerple_*, alibi, sandwich): their learned
  // b(d) is tabulated too.
  std::vector<std::string> runs;
};

// Returns the path written.
std::string WritePeTable(const PeTableOptions& o);

}  // namespace lexp
