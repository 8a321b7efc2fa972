// The packet kernels (nn/ops/packet_map.h) of GELU and of the softmax's exp: every length (whole
// packets and a padded tail), every start alignment, in place or not, gives the closed form to
// float rounding and the same bits wherever the range starts.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nn/ops/attention_core.h"
#include "nn/ops/gelu.h"

namespace lexp {
namespace {

std::vector<float> Values(long n, unsigned seed) {
  std::vector<float> v(n);
  for (long i = 0; i < n; ++i) v[i] = std::sin(0.37f * (i + 1) * (seed + 1)) * 4.0f;
  return v;
}

TEST(PacketMap, GeluAndItsSlopeMatchTheClosedFormAtEveryLengthAndAlignment) {
  for (long n = 1; n <= 41; ++n) {
    for (long offset = 0; offset < 3; ++offset) {
      SCOPED_TRACE("n " + std::to_string(n) + ", offset " + std::to_string(offset));
      std::vector<float> x(offset), y(n + offset + 4, -7.0f), s(n + offset + 4, -7.0f);
      const std::vector<float> v = Values(n, 1);
      x.insert(x.end(), v.begin(), v.end());
      GeluValues(x.data() + offset, n, y.data() + offset, s.data() + offset);
      for (long i = 0; i < n; ++i) {
        const double xi = v[i];
        const double cdf = 0.5 * (1 + std::erf(xi / std::sqrt(2.0)));
        const double slope = cdf + xi * std::exp(-0.5 * xi * xi) / std::sqrt(2 * M_PI);
        EXPECT_NEAR(y[offset + i], xi * cdf, 1e-5 * (1 + std::abs(xi))) << i;
        EXPECT_NEAR(s[offset + i], slope, 1e-5) << i;
      }
      for (long i = 0; i < offset; ++i) EXPECT_EQ(y[i], -7.0f) << "written before the range";
      for (long i = n + offset; i < n + offset + 4; ++i) {
        EXPECT_EQ(y[i], -7.0f) << "written after the range";
        EXPECT_EQ(s[i], -7.0f) << "written after the range";
      }
      // The same values at offset 0: the same bits (no scalar head or tail).
      std::vector<float> y0(n), s0(n);
      GeluValues(v.data(), n, y0.data(), s0.data());
      for (long i = 0; i < n; ++i) {
        EXPECT_EQ(y0[i], y[offset + i]);
        EXPECT_EQ(s0[i], s[offset + i]);
      }
      // Value only, in place; slope only.
      std::vector<float> in_place = v, slope_only(n);
      GeluValues(in_place.data(), n, in_place.data(), static_cast<float*>(nullptr));
      GeluValues(v.data(), n, static_cast<float*>(nullptr), slope_only.data());
      for (long i = 0; i < n; ++i) {
        EXPECT_EQ(in_place[i], y0[i]);
        EXPECT_EQ(slope_only[i], s0[i]);
      }
    }
  }
}

TEST(PacketMap, ShiftedExpMatchesStdExpAndKeepsItsBitsAtAnyStart) {
  for (long n = 1; n <= 41; ++n) {
    const std::vector<float> v = Values(n, 2);
    std::vector<float> a = v;
    attention_detail::ExpShiftedInPlace(a.data(), n, 1.5f);
    std::vector<float> shifted(n + 9, 0.0f);
    std::copy(v.begin(), v.end(), shifted.begin() + 5);
    attention_detail::ExpShiftedInPlace(shifted.data() + 5, n, 1.5f);
    for (long i = 0; i < n; ++i) {
      const double want = std::exp(double(v[i] - 1.5f));  // the shift rounded to float, as the kernel's
      EXPECT_NEAR(a[i], want, 3e-7 * want);                // within 2.5 float ulps
      EXPECT_EQ(a[i], shifted[5 + i]) << "n " << n << ", i " << i;
    }
    for (int i = 0; i < 5; ++i) EXPECT_EQ(shifted[i], 0.0f) << "written before the range";
    for (long i = n + 5; i < n + 9; ++i) EXPECT_EQ(shifted[i], 0.0f) << "written after the range";
  }
}

}  // namespace
}  // namespace lexp
