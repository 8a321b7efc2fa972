// Shift invariance of a trained run's attention (Wang et al. 2024, arXiv:2411.13476, Eq. 4): the
// probe sequences at every probe length forwarded with their position ids as evaluated and moved
// by each shift Δ, and per layer and head the mean over queries of the L1 distance between the two
// attention rows (analysis/shift_invariance.h), with the part on the first key. The paper sums
// |ΔA| over the attention matrix; lexp's row mean does not grow with the number of rows (the sum
// is it times the sequence length). Under the run's own precision (model.precision*); evaluate
// again with --set model.precision_rotary=bf16 to ask the paper's question of fp32 weights.
// What to expect: 0 exactly for NoPE and for biases of exact position differences (ALiBi); float
// rounding for RoPE in fp32; more in bf16; a large value for absolute encodings, which a shift
// changes by design (the report says so).
#pragma once

#include <string>
#include <vector>

#include "nn/io/hdf5.h"

namespace lexp {

// Δ of the analysis: 16 as the paper's Fig. 1 (Δ2 = 16), and two far shifts, where rounding of a
// rotation angle grows with the position.
inline const std::vector<double>& PositionShifts() {
  static const std::vector<double> shifts = {16, 1024, 65536};
  return shifts;
}

struct PositionShift {
  std::string family;     // the encoding's family (pe/registry.h): absolute ones move by design
  std::string precision;  // the replay's precision policy
  int layers = 0, heads = 0, sequences = 0;
  std::vector<int> lengths, sequence_lengths;  // [P] probe lengths (task) and their tokens
  std::vector<double> shifts;                  // [S]
  std::vector<std::string> not_applicable;     // [S] why a shift could not be replayed ("" = ran)
  // [S, P, L, H]: mean over probe sequences and queries of sum_j |a_ij(pos + Δ) - a_ij(pos)|, its
  // part on key 0, and the sample sd over sequences of the per-sequence mean row distance.
  std::vector<double> row_l1, first_key_l1, row_l1_sd;
  // [P, L, H]: the first key's attention a_i0 unshifted, mean over queries and probe sequences
  // (the share of the move a first key holding that much mass would take if nothing singled it out).
  std::vector<double> first_key_mass;
};

PositionShift MeasurePositionShift(const std::string& run_file);

// Writes /analysis/position_shift (replacing an earlier one) and returns report lines.
std::string WritePositionShift(const PositionShift& ps, const h5::Group& analysis);

}  // namespace lexp
