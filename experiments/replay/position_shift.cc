#include "experiments/replay/position_shift.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/shift_invariance.h"
#include "experiments/replay/model_replay.h"
#include "nn/check.h"
#include "nn/precision.h"
#include "pe/registry.h"

namespace lexp {

PositionShift MeasurePositionShift(const std::string& run_file) {
  PositionShift out;
  ModelReplay replay(run_file);
  const RecipeConfig& cfg = replay.config();
  out.family = FindEncoding(replay.encoding_name()).family;
  const bool absolute = out.family.rfind("absolute", 0) == 0;
  out.precision = PrecisionPolicyText(cfg.Precision());
  out.layers = cfg.model.n_layers;
  out.heads = cfg.model.n_heads;
  out.shifts = PositionShifts();
  out.lengths = cfg.ProbeLengths();
  const int L = out.layers, H = out.heads;
  const size_t P = out.lengths.size(), S = out.shifts.size(), LH = static_cast<size_t>(L) * H;
  out.not_applicable.assign(S, "");
  // An absolute encoding moves by design at any shift: the first shift shows it, and the far ones
  // would cost encodings that integrate up to the position (Floater) as much as that position.
  if (absolute)
    for (size_t k = 1; k < S; ++k)
      out.not_applicable[k] =
          "an absolute encoding moves by design at any shift; the first shift shows it";
  out.row_l1.assign(S * P * LH, std::numeric_limits<double>::quiet_NaN());
  out.first_key_l1 = out.row_l1_sd = out.row_l1;
  out.first_key_mass.assign(P * LH, 0.0);
  for (size_t p = 0; p < P; ++p) {
    const int n = out.lengths[p];
    const int sequences = replay.ProbeSequences(n);
    out.sequences = sequences;
    out.sequence_lengths.push_back(replay.SequenceLength(n));
    // [S, sequence, L*H] per-sequence mean row distances, and the sums over sequences.
    std::vector<double> per_seq(S * sequences * LH, 0.0);
    std::vector<ShiftDifference> total(S * LH);
    for (int s = 0; s < sequences; ++s) {
      replay.ForwardProbeSequence(s);
      std::vector<MatF> base(L);
      for (int l = 0; l < L; ++l) base[l] = replay.model().Probs(l);  // [H*T, T]
      for (int l = 0; l < L; ++l) {
        const int T = static_cast<int>(base[l].cols());
        for (int h = 0; h < H; ++h) {
          double mass = 0;
          // Query 0 sees key 0 alone (a_00 = 1 under any shift): left out, as it cannot move.
          for (int i = 1; i < T; ++i) mass += base[l](static_cast<long>(h) * T + i, 0);
          out.first_key_mass[p * LH + static_cast<size_t>(l) * H + h] +=
              mass / std::max(1, T - 1) / sequences;
        }
      }
      for (size_t k = 0; k < S; ++k) {
        if (!out.not_applicable[k].empty()) continue;
        try {
          replay.ForwardProbeSequence(s, out.shifts[k]);
        } catch (const InputError& e) {  // the encoding cannot place positions that far
          out.not_applicable[k] = e.what();
          continue;
        }
        for (int l = 0; l < L; ++l) {
          const MatF& moved = replay.model().Probs(l);
          const int T = static_cast<int>(moved.cols());
          for (int h = 0; h < H; ++h) {
            ShiftDifference d;
            const long at = static_cast<long>(h) * T * T;
            AddShiftDifference(base[l].data() + at, moved.data() + at, T, &d);
            ShiftDifference& t = total[k * LH + static_cast<size_t>(l) * H + h];
            t.row_l1 += d.row_l1;
            t.first_key += d.first_key;
            t.rows += d.rows;
            per_seq[(k * sequences + s) * LH + static_cast<size_t>(l) * H + h] =
                d.row_l1 / std::max<int64_t>(1, d.rows);
          }
        }
      }
    }
    for (size_t k = 0; k < S; ++k) {
      if (!out.not_applicable[k].empty()) continue;
      for (size_t lh = 0; lh < LH; ++lh) {
        const ShiftDifference& t = total[k * LH + lh];
        const size_t at = (k * P + p) * LH + lh;
        out.row_l1[at] = t.row_l1 / std::max<int64_t>(1, t.rows);
        out.first_key_l1[at] = t.first_key / std::max<int64_t>(1, t.rows);
        double sum = 0, sq = 0;
        for (int s = 0; s < sequences; ++s) {
          const double x = per_seq[(k * sequences + s) * LH + lh];
          sum += x;
          sq += x * x;
        }
        const double mean = sum / sequences;
        out.row_l1_sd[at] = sequences > 1 ? std::sqrt(std::max(0.0, (sq - sequences * mean * mean) /
                                                                   (sequences - 1)))
                                          : std::numeric_limits<double>::quiet_NaN();
      }
    }
  }
  // A shift that failed at some length is not applicable at any (its entries all NaN).
  for (size_t k = 0; k < S; ++k)
    if (!out.not_applicable[k].empty())
      for (size_t at = k * P * LH; at < (k + 1) * P * LH; ++at)
        out.row_l1[at] = out.first_key_l1[at] = out.row_l1_sd[at] =
            std::numeric_limits<double>::quiet_NaN();
  return out;
}

std::string WritePositionShift(const PositionShift& ps, const h5::Group& analysis) {
  analysis.Remove("position_shift");
  h5::Group g = analysis.CreateGroup("position_shift");
  g.SetAttr("source",
            "replay of the probe with every position id moved by each shift "
            "(experiments/replay/position_shift.h; Wang et al. 2024, arXiv:2411.13476, Eq. 4)");
  g.SetAttr("family", ps.family);
  g.SetAttr("precision", ps.precision);
  g.SetAttr("sequences", static_cast<int64_t>(ps.sequences));
  const uint64_t S = ps.shifts.size(), P = ps.lengths.size(), L = ps.layers, H = ps.heads;
  std::vector<int64_t> lengths(ps.lengths.begin(), ps.lengths.end());
  std::vector<int64_t> tokens(ps.sequence_lengths.begin(), ps.sequence_lengths.end());
  g.WriteDoubles("shift", ps.shifts, {S}, "shift", "position ids added to every position");
  g.WriteInts("length", lengths, {P}, "probe", "tokens (requested task length n)");
  g.WriteInts("sequence_length", tokens, {P}, "probe", "tokens (model sequence T)");
  g.WriteDoubles("row_l1", ps.row_l1, {S, P, L, H}, "shift,probe,layer,head",
                 "sum over keys of |a_ij(pos + shift) - a_ij(pos)|, mean over queries and probe "
                 "sequences (0..2); NaN: the shift could not be replayed");
  g.WriteDoubles("first_key_l1", ps.first_key_l1, {S, P, L, H}, "shift,probe,layer,head",
                 "|a_i0(pos + shift) - a_i0(pos)| (the first key's part of row_l1), mean over "
                 "queries and probe sequences");
  g.WriteDoubles("first_key_mass", ps.first_key_mass, {P, L, H}, "probe,layer,head",
                 "attention on the first key without a shift, mean over queries and probe "
                 "sequences");
  g.WriteDoubles("row_l1_sd", ps.row_l1_sd, {S, P, L, H}, "shift,probe,layer,head",
                 "sample sd over probe sequences of each sequence's mean row_l1");
  std::string report;
  const bool absolute = ps.family.rfind("absolute", 0) == 0;
  for (uint64_t k = 0; k < S; ++k) {
    if (!ps.not_applicable[k].empty()) {
      g.SetAttr(fmt::format("not_applicable_shift_{:g}", ps.shifts[k]), ps.not_applicable[k]);
      report += fmt::format("position shift +{:g}: not applicable: {}\n", ps.shifts[k],
                            ps.not_applicable[k]);
      continue;
    }
    const uint64_t p = static_cast<uint64_t>(  // the longest probe (probe.lengths may be unsorted)
        std::max_element(ps.lengths.begin(), ps.lengths.end()) - ps.lengths.begin());
    double row = 0, first = 0, worst = 0, mass = 0;
    for (uint64_t lh = 0; lh < L * H; ++lh) {
      mass += ps.first_key_mass[p * L * H + lh] / (L * H);
      const double x = ps.row_l1[(k * P + p) * L * H + lh];
      row += x / (L * H);
      first += ps.first_key_l1[(k * P + p) * L * H + lh] / (L * H);
      worst = std::isnan(x) ? x : std::max(worst, x);
    }
    report += fmt::format(
        "position shift +{:g} at n={} ({} tokens, {} sequences, {}): attention rows move by "
        "{:.3g} (L1, mean over layers, heads and queries; largest head {:.3g}), {} on the first "
        "key, which holds {:.1f}% of the attention (a row's move on one key is at most half its "
        "L1){}\n",
        ps.shifts[k], ps.lengths[p], ps.sequence_lengths[p], ps.sequences, ps.precision, row,
        worst, row > 0 ? fmt::format("{:.1f}%", 100 * first / row) : std::string("none"),
        100 * mass,
        absolute ? " (an absolute encoding: a shift changes its input by design)" : "");
  }
  return report;
}

}  // namespace lexp
