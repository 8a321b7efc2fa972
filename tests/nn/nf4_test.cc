// NF4 (QLoRA's 4-bit NormalFloat): the code book its definition gives equals the published table,
// and a round trip stores every value as the nearest code times its block's absmax.
#include "nn/optim/nf4.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nn/rng.h"

namespace lexp {
namespace {

TEST(Nf4, CodeBookIsQloraTable) {
  // bitsandbytes / QLoRA's NF4 values (float32).
  const double published[16] = {-1.0,
                                -0.6961928009986877,
                                -0.5250730514526367,
                                -0.39491748809814453,
                                -0.28444138169288635,
                                -0.18477343022823334,
                                -0.09105003625154495,
                                0.0,
                                0.07958029955625534,
                                0.16093020141124725,
                                0.24611230194568634,
                                0.33791524171829224,
                                0.44070982933044434,
                                0.5626170039176941,
                                0.7229568362236023,
                                1.0};
  const auto code = Nf4CodeBook();
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(code[i], published[i], 2e-7) << i;
}

TEST(Nf4, RoundTripStoresTheNearestCodeTimesTheBlockAbsmax) {
  Rng rng(5);
  std::vector<double> x(200), y;
  for (auto& v : x) v = rng.Normal();
  y = x;
  Nf4RoundTrip(y.data(), static_cast<long>(y.size()));
  const auto code = Nf4CodeBook();
  for (long b0 = 0; b0 < 200; b0 += kNf4Block) {
    double absmax = 0;
    for (long i = b0; i < std::min<long>(200, b0 + kNf4Block); ++i)
      absmax = std::max(absmax, std::abs(x[i]));
    for (long i = b0; i < std::min<long>(200, b0 + kNf4Block); ++i) {
      const double v = x[i] / absmax, got = y[i] / absmax;
      double nearest = 2;
      for (double c : code) nearest = std::min(nearest, std::abs(v - c));
      EXPECT_NEAR(std::abs(v - got), nearest, 1e-12) << i;
      EXPECT_LE(std::abs(v - got), 0.5 * (1.0 - 0.7229568362236023) + 1e-12) << "half a gap";
    }
  }
  // Stored values are fixed points, and the block's extreme is kept exactly.
  std::vector<double> z = y;
  Nf4RoundTrip(z.data(), static_cast<long>(z.size()));
  EXPECT_EQ(z, y);
}

}  // namespace
}  // namespace lexp
