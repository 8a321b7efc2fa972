// Position probes (analysis/position_probes.h) on planted hidden states whose right reading is
// known, in the copy layout (input 0..n-1, separator n, answer n+1..2n+1): a stream that holds the
// index linearly gives index error ~0 and separator error near chance; one that holds the distance
// to the separator the reverse; noise gives chance for both. A fit set of one length cannot tell
// the two targets apart and says so (the defect of a probe fitted at one length). A stream that
// holds only the segment gives no within-segment signal of an unseen position (0.5), where a
// classifier pooled over segments scores its segment baseline (0.79 on the default run's copy
// models); states drawn alike in fit and test are out of distribution at the held-out rate 0.01
// whatever their role, and shifted ones at ~1.
#include "analysis/position_probes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "nn/rng.h"

namespace lexp {
namespace {

constexpr int kWidth = 6;

// Sequences of the copy layout at the given lengths (`per` each); row features from f(t, sep, seg,
// rng), which fills the first columns and leaves the rest to unit noise.
using Feature = std::function<void(int t, int sep, int seg, Rng& rng, Eigen::RowVectorXd& x)>;
ProbeRows CopyRows(const std::vector<int>& lengths, int per, Rng& rng, const Feature& f) {
  ProbeRows out;
  std::vector<Eigen::RowVectorXd> rows;
  int seq = 0;
  for (int n : lengths)
    for (int k = 0; k < per; ++k, ++seq)
      for (int t = 0; t < 2 * n + 2; ++t) {
        const int seg = t < n ? 0 : t == n ? 1 : 2;
        Eigen::RowVectorXd x(kWidth);
        for (int c = 0; c < kWidth; ++c) x[c] = rng.Normal();
        f(t, n, seg, rng, x);
        rows.push_back(x);
        out.position.push_back(t);
        out.separator.push_back(n);
        out.segment.push_back(seg);
        out.sequence.push_back(seq);
      }
  out.x.resize(static_cast<Eigen::Index>(rows.size()), kWidth);
  for (size_t r = 0; r < rows.size(); ++r) out.x.row(static_cast<Eigen::Index>(r)) = rows[r];
  return out;
}

const std::vector<int> kFitLengths = {1, 2, 3, 4, 5, 6, 7, 8};

PositionProbeReading Read(const Feature& f, const std::vector<int>& fit_lengths = kFitLengths) {
  Rng rng(11);
  const ProbeRows fit = CopyRows(fit_lengths, 24, rng, f);
  const ProbeRows test = CopyRows({32}, 16, rng, f);
  return ReadPositionProbes(fit, test);
}

TEST(PositionProbes, AStreamHoldingTheIndexGivesTheIndexAndNotTheSeparator) {
  const auto p = Read([](int t, int, int, Rng&, Eigen::RowVectorXd& x) { x[0] = t; });
  ASSERT_TRUE(p.separator_applicable) << p.separator_note;
  EXPECT_LT(p.index_rmse_in_range, 0.05);
  EXPECT_LT(p.index_rmse_beyond, 0.5) << "a linear read-out of t extrapolates";
  EXPECT_GT(p.index_chance_in_range, 3.0);
  EXPECT_GT(p.separator_rmse_in_range, 0.5 * p.separator_chance_in_range)
      << "the index alone does not say where the separator is";
}

TEST(PositionProbes, AStreamHoldingTheSeparatorDistanceGivesItAndNotTheIndex) {
  const auto p = Read([](int t, int sep, int, Rng&, Eigen::RowVectorXd& x) { x[0] = t - sep; });
  ASSERT_TRUE(p.separator_applicable);
  EXPECT_LT(p.separator_rmse_in_range, 0.05);
  EXPECT_GT(p.index_rmse_in_range, 0.5 * p.index_chance_in_range);
}

// Held out in distribution (odd fit sequences, the probe fitted on the even ones): a stream
// holding the index reads it; noise reads chance; a stream holding only each row's role (input,
// separator, answer) reads a little better than chance, what the role says of the index.
TEST(PositionProbes, TheHeldOutReadingIsInDistributionWithItsControls) {
  const auto index = Read([](int t, int, int, Rng&, Eigen::RowVectorXd& x) { x[0] = t; });
  EXPECT_LT(index.index_rmse_held_out, 0.05);
  EXPECT_GT(index.index_chance_held_out, 3.0);
  const auto noise = Read([](int, int, int, Rng&, Eigen::RowVectorXd&) {});
  EXPECT_NEAR(noise.index_rmse_held_out / noise.index_chance_held_out, 1.0, 0.1);
  const auto segment = Read([](int, int, int seg, Rng&, Eigen::RowVectorXd& x) { x[0] = seg; });
  EXPECT_GT(segment.index_rmse_held_out, 0.6 * segment.index_chance_held_out)
      << "the role alone says little of the index";
  EXPECT_LT(segment.index_rmse_held_out, segment.index_chance_held_out);
}

TEST(PositionProbes, NoiseGivesChanceForBothProbes) {
  const auto p = Read([](int, int, int, Rng&, Eigen::RowVectorXd&) {});
  EXPECT_NEAR(p.index_rmse_in_range / p.index_chance_in_range, 1.0, 0.15);
  EXPECT_NEAR(p.separator_rmse_in_range / p.separator_chance_in_range, 1.0, 0.15);
  EXPECT_NEAR(p.beyond_accuracy, 0.5, 0.1);
}

TEST(PositionProbes, AFitSetOfOneLengthCannotSeparateTheTwoTargets) {
  const auto p = Read([](int t, int, int, Rng&, Eigen::RowVectorXd& x) { x[0] = t; }, {8});
  EXPECT_FALSE(p.separator_applicable);
  EXPECT_NE(p.separator_note.find("index minus a constant"), std::string::npos);
  EXPECT_TRUE(std::isnan(p.separator_rmse_in_range));
}

TEST(PositionProbes, TheSegmentAloneGivesNoWithinSegmentSignalAndItsPooledBaseline) {
  // States that say only which segment a row is in, plus noise.
  const auto p = Read([](int, int, int seg, Rng&, Eigen::RowVectorXd& x) { x[0] = 3.0 * seg; });
  EXPECT_NEAR(p.beyond_accuracy, 0.5, 0.08) << "within the input segment, nothing to read";
  EXPECT_GT(p.beyond_segment_baseline, 0.7) << "across segments, the answer is all unseen";
  EXPECT_NEAR(p.beyond_accuracy_pooled, p.beyond_segment_baseline, 0.08);
  EXPECT_EQ(p.segments_classified, "input") << "the only segment with seen and unseen rows";
}

TEST(PositionProbes, AStreamHoldingTheIndexTellsUnseenPositionsWithinASegment) {
  const auto p = Read([](int t, int, int, Rng&, Eigen::RowVectorXd& x) { x[0] = t; });
  EXPECT_GT(p.beyond_accuracy, 0.95);
}

TEST(PositionProbes, StatesDrawnAlikePerRoleAreInDistributionAndShiftedOnesAreNot) {
  // Each segment its own distribution, the same in fit and test: whatever the position, a row is
  // like the fit rows of its role (a pooled reference would call input rows at positions the fit
  // set knew as answer positions out of distribution).
  const auto alike =
      Read([](int, int, int seg, Rng&, Eigen::RowVectorXd& x) { x[1] += 5.0 * seg; });
  EXPECT_LT(alike.ood_seen, 0.04);
  EXPECT_LT(alike.ood_unseen, 0.04);
  EXPECT_EQ(alike.segments_ood, "input,separator,answer");
  // Shifted exactly where the row's segment and position never occur in the fit set (lengths
  // 1..8: input positions 0..7, separators 1..8, answer positions 2..17).
  const auto shifted = Read([](int t, int, int seg, Rng&, Eigen::RowVectorXd& x) {
    if ((seg == 0 && t > 7) || (seg == 1 && t > 8) || (seg == 2 && t > 17)) x[2] += 8.0;
  });
  EXPECT_LT(shifted.ood_seen, 0.04);
  EXPECT_GT(shifted.ood_unseen, 0.9);
}

}  // namespace
}  // namespace lexp
