// The attention geometry, entropy variants, empirical expectation and rotary contributions read on
// planted one-head models of copy (tests/testing/planted_runs.h), each with a known right reading:
//  * "first": a slow rotary pair whose logit rises with distance, so every query attends to the
//    first token: a sink head, entropy ~0, LM-Infinite's bound equal to its closed form, a
//    positional share of 1, positional parts leaving their trained range exactly at the unseen
//    distances, and a contribution from that pair alone;
//  * "previous": the fast pairs point every query at distance 1: a local head;
//  * "uniform" (the negative control of most readings): no query or key, every logit 0: uniform
//    attention, entropy exactly ln(visible keys) under every remedy, a flat expectation whose
//    resolution is the flat curve's, nothing outside its trained range, neither sink nor local;
//  * "content" (NoPE, random query and key maps): logits of the tokens alone, so the positional
//    share is ~0.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "experiments/replay/empirical_expectation.h"
#include "experiments/replay/entropy_variants.h"
#include "experiments/replay/probe_geometry.h"
#include "experiments/replay/rotary_pairs.h"
#include "nn/rng.h"
#include "tests/testing/planted_runs.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kC = 32;
constexpr double kA = 3000;  // amplitude of the first-token plant's slow pair (pair 4)

RecipeConfig Recipe(const std::string& encoding) {
  return testing::TinyCopyRecipe({"model.encodings=" + encoding, "model.d_model=32",
                                  "model.n_heads=1", "model.n_layers=1", "eval.lengths=5,9",
                                  "probe.lengths=5,9", "probe.samples=4", "probe.replay=0"});
}

class PlantedGeometry : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(testing::FreshTempDir("planted_geometry"));
    const testing::Plant p{kC, 15};
    auto pattern = [&](std::vector<double> amplitude, std::vector<double> phase) {
      return [=](testing::PlantedWeights& w) {
        p.Pattern(w, amplitude, phase);
        p.ReadAttendedToken(w, 10.0, 3.0);
      };
    };
    std::vector<double> zero(16, 0.0), first = zero, first_phase = zero, prev = zero,
                                       prev_phase = zero;
    first[4] = kA;
    first_phase[4] = kPi;
    for (int k = 0; k < 8; ++k) {
      prev[k] = 60;
      prev_phase[k] = testing::RopeTheta(k, kC, 1e4);  // cos((d - 1) theta_k)
    }
    runs_ = new std::map<std::string, std::string>();
    (*runs_)["first"] =
        testing::PlantedRun(Recipe("rope"), "rope", *dir_, "first", pattern(first, first_phase));
    (*runs_)["previous"] =
        testing::PlantedRun(Recipe("rope"), "rope", *dir_, "previous", pattern(prev, prev_phase));
    (*runs_)["uniform"] =
        testing::PlantedRun(Recipe("rope"), "rope", *dir_, "uniform", pattern(zero, zero));
    (*runs_)["content"] =
        testing::PlantedRun(Recipe("nope"), "nope", *dir_, "content", [&](auto& w) {
          Rng rng(5);
          for (int r = 0; r < kC; ++r)
            for (int c = 0; c < 2 * kC; ++c) w.At("layer0.attn.qkv.w", r, c) = rng.Normal();
          p.ReadAttendedToken(w, 10.0, 3.0);
        });
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete runs_;
  }
  // The geometry at probe length 9 (19 tokens; trained on 11).
  static ProbeGeometry At9(const std::string& name) {
    return MeasureGeometry(runs_->at(name), "").lengths.back();
  }
  static std::filesystem::path* dir_;
  static std::map<std::string, std::string>* runs_;
};
std::filesystem::path* PlantedGeometry::dir_ = nullptr;
std::map<std::string, std::string>* PlantedGeometry::runs_ = nullptr;

TEST_F(PlantedGeometry, AHeadOnTheFirstTokenIsASinkWithNoEntropy) {
  const ProbeGeometry g = At9("first");
  ASSERT_EQ(g.sequence_length, 19);
  EXPECT_EQ(g.head_class[0], static_cast<int64_t>(HeadClass::kSink));
  EXPECT_GT(g.head_sink_mass[0], 0.99);
  EXPECT_EQ(g.head_class_agreement[0], 1.0);
  for (int i = 4; i < 19; ++i) EXPECT_LT(g.entropy.mean[i], 0.01) << i;
  // Only pair 4 adds to the logit: -A cos(d theta_4) / sqrt(32), a function of the distance alone.
  EXPECT_GT(g.positional_share[0], 0.999);
  // LM-Infinite's bound along the last query: the running max over distance of that curve.
  const double theta = testing::RopeTheta(4, kC, 1e4);
  double bound = -1e300;
  for (int n = 0; n < 19; ++n) {
    bound = std::max(bound, -kA * std::cos(n * theta) / std::sqrt(32.0));
    EXPECT_NEAR(g.explosion.mean[n], bound, 1e-3 * std::abs(bound)) << n;
  }
}

TEST_F(PlantedGeometry, AHeadOnThePreviousTokenIsLocal) {
  const ProbeGeometry g = At9("previous");
  EXPECT_EQ(g.head_class[0], static_cast<int64_t>(HeadClass::kLocal));
  EXPECT_GT(g.head_local_mass[0], 0.99);
  EXPECT_LT(g.head_sink_mass[0], 0.1);
  for (int i = 1; i < 19; ++i) EXPECT_NEAR(g.attended_argmax.mean[i], 1.0, 1e-12) << i;
}

TEST_F(PlantedGeometry, UniformAttentionIsNeitherSinkNorLocalAndHasTheUniformEntropy) {
  const ProbeGeometry g = At9("uniform");
  EXPECT_NE(g.head_class[0], static_cast<int64_t>(HeadClass::kSink));
  EXPECT_NE(g.head_class[0], static_cast<int64_t>(HeadClass::kLocal));
  for (int i = 0; i < 19; ++i) {
    EXPECT_NEAR(g.entropy.mean[i], std::log(i + 1.0), 1e-5) << i;
    EXPECT_EQ(g.explosion.mean[i], 0.0) << "every logit is 0";
  }
  EXPECT_TRUE(std::isnan(g.positional_share[0])) << "no logit variance to share";
  EXPECT_EQ(g.out_of_range_logit[0], 0.0);
  EXPECT_EQ(g.out_of_range_positional[0], 0.0);
  EXPECT_EQ(g.out_of_range_content[0], 0.0);
  EXPECT_DOUBLE_EQ(g.resolution_window[0], g.resolution_flat_window)
      << "a flat expectation has the flat curve's resolution";
}

TEST_F(PlantedGeometry, LogitsOfTheTokensAloneHaveNoPositionalShare) {
  const ProbeGeometry g = At9("content");
  EXPECT_LT(g.positional_share[0], 0.1);
  EXPECT_EQ(g.head_class[0], static_cast<int64_t>(HeadClass::kContent));
}

TEST_F(PlantedGeometry, PositionalPartsLeaveTheirRangeExactlyAtUnseenDistances) {
  // The first-token plant's logit rises with distance: beyond the 11 trained tokens every pair at
  // distance >= 11 exceeds the trained maximum, and no other does (a seen distance recomputed at
  // other positions differs only in its last bits). Pairs (key at or before the query) of 19
  // tokens: 190, of which sum_{d=11}^{18} (19 - d) = 36 at unseen distances.
  const ProbeGeometry g = At9("first");
  EXPECT_NEAR(g.out_of_range_positional[0], 36.0 / 190.0, 1e-12);
  EXPECT_NEAR(g.out_of_range_logit[0], 36.0 / 190.0, 1e-12);
}

TEST_F(PlantedGeometry, RemediesLeaveUniformAttentionUniformOverWhatTheyShow) {
  const EntropyVariants ev = EntropyUnderVariants(runs_->at("uniform"));
  ASSERT_EQ(ev.sequence_length, 19);
  for (const auto& v : ev.variants) {
    ASSERT_TRUE(v.not_applicable.empty()) << v.name;
    for (int i = 0; i < 19; ++i)
      EXPECT_NEAR(v.entropy[i], std::log(v.visible[i]), 1e-5) << v.name << " query " << i;
  }
  EXPECT_LT(ev.variants[3].visible[18], 19) << "the Lambda mask hides keys";
}

TEST_F(PlantedGeometry, AFlatExpectationHasTheFlatCurvesResolutionAtEveryLength) {
  const EmpiricalExpectation e = MeasureExpectation(runs_->at("uniform"));
  for (size_t x = 0; x < e.lengths.size(); ++x) {
    EXPECT_DOUBLE_EQ(e.resolution[x], e.resolution_flat[x]) << e.lengths[x];
    EXPECT_DOUBLE_EQ(e.resolution_window[x], e.resolution_flat_window[x]) << e.lengths[x];
  }
}

TEST_F(PlantedGeometry, OnlyThePlantedPairContributesAndTheSupremumIsItsAmplitude) {
  const RotaryPairAnalysis a = AnalyzeRotaryPairs(runs_->at("first"));
  ASSERT_EQ(a.pairs, 16);
  for (int k = 0; k < 16; ++k) {
    if (k == 4) {
      EXPECT_GT(a.contributions.near_abs[k], 100.0);
    } else {
      EXPECT_EQ(a.contributions.near_abs[k], 0.0) << k;
    }
  }
  // sum_k |q_k| |k_k| / sqrt(32) over the one pair with a query (1) and a key (A).
  EXPECT_NEAR(a.contributions.supremum[0], kA / std::sqrt(32.0), 1e-3 * kA);
  EXPECT_LE(a.contributions.observed[0], a.contributions.supremum[0] + 1e-3);
}

}  // namespace
}  // namespace lexp
