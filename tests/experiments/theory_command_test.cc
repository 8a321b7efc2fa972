// `lexp theory`: the file holds the closed-form values of analysis/rope_theory.h for its options
// (LLaMA2 setting: d_extra = 92, T_extra = 4711.72) and the figure is drawn from it.
#include "experiments/training/theory_command.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <utility>
#include <vector>

#include "nn/io/hdf5.h"
#include "notebooks_cpp/figures.h"
#include "pe/rope.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

TEST(TheoryCommand, WritesTheClosedFormTablesAndCurvesAndDrawsThem) {
  const auto dir = testing::FreshTempDir("theory");
  TheoryOptions o;
  o.max_distance = 5000;
  o.scale = "pi:factor=2";
  o.out_file = (dir / "theory.h5").string();
  std::string report;
  WriteTheory(o, &report);
  EXPECT_NE(report.find("d_extra = 92"), std::string::npos) << report;
  h5::Reader r(o.out_file);
  EXPECT_EQ(r.root().OpenGroup("critical").AttrInt("d_extra"), 92);
  const auto t_extra = r.root().OpenGroup("base_law").ReadDoubles("t_extra");
  EXPECT_NEAR(t_extra[0], 4711.72427801674, 1e-8);
  h5::Group ex = r.root().OpenGroup("expectation");
  const auto rope = ex.ReadDoubles("rope"), scaled = ex.ReadDoubles("rope_scaled");
  ASSERT_EQ(rope.size(), 5001u);
  // The all-ones proxy s(n) = 2 sum_k cos(n theta_k), theta_k = 1e4^(-2k/128), k = 0..63
  // (Sun et al. 2022, sections 2-3), written out here; and its published values (Liu et al. 2023).
  std::vector<double> theta(64);
  for (int k = 0; k < 64; ++k) theta[k] = std::pow(1e4, -2.0 * k / 128);
  for (long n = 0; n <= 5000; ++n) {
    double s = 0;
    for (double t : theta) s += 2 * std::cos(n * t);
    EXPECT_NEAR(rope[n], s, 1e-9) << n;
  }
  const std::vector<std::pair<long, double>> published = {{0, 128.0},
                                                          {1, 124.18736761153528},
                                                          {10, 85.6400457969942},
                                                          {100, 61.086909402981284},
                                                          {512, 28.08631968769336},
                                                          {1000, 20.355456264421086},
                                                          {2048, 15.268341464439054},
                                                          {4096, -6.765227848964551}};
  for (const auto& [n, value] : published) EXPECT_NEAR(rope[n], value, 1e-9) << n;
  // PI with factor 2 halves every frequency: s_pi(2n) = s(n).
  for (long n : {1L, 7L, 100L, 2500L}) EXPECT_NEAR(scaled[2 * n], rope[n], 1e-9) << n;
  std::vector<uint64_t> dims;
  r.root().OpenGroup("critical").ReadInts("d_extra_table", &dims);
  EXPECT_EQ(dims, (std::vector<uint64_t>{4, 7}));
  // The Monte-Carlo curves sit within their standard errors of the closed form, which for q = k
  // with N(0, 1) components is the all-ones proxy.
  const h5::Group mc = ex.OpenGroup("monte_carlo");
  const auto mean = mc.ReadDoubles("rope_mean"), se = mc.ReadDoubles("rope_standard_error"),
             closed = mc.ReadDoubles("rope_closed_form");
  ASSERT_EQ(mean.size(), static_cast<size_t>(o.mc_max_distance + 1));
  for (size_t n = 0; n < mean.size(); ++n) {
    EXPECT_NEAR(closed[n], rope[n], 1e-9);
    EXPECT_NEAR(mean[n], closed[n], 5 * se[n]) << n;
  }
  EXPECT_NE(report.find("Monte-Carlo expectation (xpos"), std::string::npos) << report;
  // With --scale pi:factor=2 the rule has its own Monte-Carlo curve: closed form s(n/2).
  const auto sm = mc.ReadDoubles("rope_scaled_mean"),
             ss = mc.ReadDoubles("rope_scaled_standard_error"),
             sc = mc.ReadDoubles("rope_scaled_closed_form");
  for (size_t n = 0; 2 * n < sc.size(); ++n) EXPECT_NEAR(sc[2 * n], closed[n], 1e-9) << n;
  for (size_t n = 0; n < sm.size(); ++n) EXPECT_NEAR(sm[n], sc[n], 5 * ss[n]) << n;
  // Convention B drops the positive i = N term e^{2 s_N} / Z^2 of convention A.
  const auto ra = ex.ReadDoubles("resolution_rope"), rb = ex.ReadDoubles("resolution_rope_b");
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) EXPECT_LT(rb[i], ra[i]);
  EXPECT_TRUE(std::filesystem::exists(DrawTheory(o.out_file)));
  std::filesystem::remove_all(dir);
}

// Deterministic content (sd 0): every Monte-Carlo standard error is 0, so the report cannot divide
// by it (it printed nan or inf); the means equal the closed form up to rounding.
TEST(TheoryCommand, ZeroStandardErrorIsComparedExactlyNotDividedBy) {
  const auto dir = testing::FreshTempDir("theory_sd0");
  TheoryOptions o;
  o.max_distance = 64;
  o.mc_max_distance = 32;
  o.mc_samples = 4;
  o.mc_mean = 0.5;
  o.mc_sd = 0;
  o.out_file = (dir / "theory.h5").string();
  std::string report;
  WriteTheory(o, &report);
  EXPECT_EQ(report.find("nan"), std::string::npos) << report;
  EXPECT_EQ(report.find("inf"), std::string::npos) << report;
  EXPECT_NE(report.find("33 distances with zero standard error, 0 of them differing"),
            std::string::npos)
      << report;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lexp
