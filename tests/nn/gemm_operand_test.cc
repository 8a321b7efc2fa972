// GemmOperand (nn/ops/gemm.h): a factor prepared once for several products gives the bits of Gemm
// on the matrix itself (on the plain op(B) for a transposed right factor), on every layout, in fp32, in native bf16 (converted once) and in
// emulated bf16, and refuses a product under another precision than it was prepared under.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/ops/gemm.h"
#include "nn/precision.h"
#include "nn/rng.h"

namespace lexp {
namespace {

enum class Mode { kFp32, kBf16Native, kBf16Emulated };

std::string ModeName(Mode m) {
  return m == Mode::kFp32 ? "Fp32" : m == Mode::kBf16Native ? "Bf16Native" : "Bf16Emulated";
}

class PreparedOperand : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    if (GetParam() == Mode::kBf16Native && !Bf16IsNative())
      GTEST_SKIP() << "this CPU has no AVX512_BF16: its bf16 products are emulated (tested so)";
    ForceBf16Emulation(GetParam() == Mode::kBf16Emulated);
  }
  void TearDown() override { ForceBf16Emulation(false); }
  PrecisionPolicy Policy() const {
    const Precision p = GetParam() == Mode::kFp32 ? Precision::kFp32 : Precision::kBf16;
    return {p, Precision::kFp32, Precision::kFp32};
  }
};

std::vector<float> Normal(long n, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.Normal());
  return v;
}

// Every layout of both factors, an odd and an even sum length, written and accumulated; row
// strides wider than the rows.
TEST_P(PreparedOperand, ProductsHaveTheBitsOfGemmOnTheMatrixItself) {
  const PrecisionScope scope(Policy());
  Rng rng(21);
  const long m = 37, n = 40;  // neither a whole number of 16-wide tiles (AMX)
  const long native_before = NativeBf16Products();
  for (const long k : {33L, 64L})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        for (const bool accumulate : {false, true}) {
          const long lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
          const std::vector<float> a = Normal((ta ? k : m) * lda, rng);
          const std::vector<float> b = Normal((tb ? n : k) * ldb, rng);
          const std::vector<float> c0 = Normal(m * ldc, rng);
          // A transposed right factor is copied plain: the reference is the plain op(B).
          std::vector<float> plain_b(static_cast<size_t>(k * n));
          for (long p = 0; p < k; ++p)
            for (long j = 0; j < n; ++j) plain_b[p * n + j] = tb ? b[j * ldb + p] : b[p * ldb + j];
          std::vector<float> want = c0, want_left = c0, right = c0, left = c0;
          Gemm<float>(ta, false, m, n, k, a.data(), lda, plain_b.data(), n, accumulate, want.data(),
                      ldc);
          Gemm<float>(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, accumulate, want_left.data(),
                      ldc);
          GemmOperand<float> pb, pa;
          pb.Prepare(GemmSide::kRight, tb, k, n, b.data(), ldb);
          pa.Prepare(GemmSide::kLeft, ta, m, k, a.data(), lda);
          EXPECT_EQ(pb.bf16() != nullptr, GetParam() == Mode::kBf16Native);
          Gemm<float>(ta, m, a.data(), lda, pb, accumulate, right.data(), ldc);
          Gemm<float>(pa, tb, n, b.data(), ldb, accumulate, left.data(), ldc);
          const std::string at = "k " + std::to_string(k) + (ta ? " ta" : "") + (tb ? " tb" : "") +
                                 (accumulate ? " accumulate" : "");
          EXPECT_EQ(right, want) << "prepared right factor, " << at;
          EXPECT_EQ(left, want_left) << "prepared left factor, " << at;
        }
  // The native kernel computed the prepared products (none fell back to the emulation).
  if (GetParam() == Mode::kBf16Native) {
    EXPECT_EQ(NativeBf16Products() - native_before, 4 * 16);
  }
}

// Only a converted operand (native bf16) can be misused so.
TEST(PreparedOperandMisuse, RefusesAProductUnderAnotherPrecision) {
  if (!Bf16IsNative()) GTEST_SKIP() << "this CPU has no AVX512_BF16: nothing is converted";
  Rng rng(22);
  const long m = 4, n = 8, k = 6;
  const std::vector<float> a = Normal(m * k, rng), b = Normal(k * n, rng);
  std::vector<float> c(m * n);
  GemmOperand<float> pb;
  {
    const PrecisionScope scope({Precision::kBf16, Precision::kFp32, Precision::kFp32});
    pb.Prepare(GemmSide::kRight, false, k, n, b.data(), n);
  }
  EXPECT_THROW(Gemm<float>(false, m, a.data(), k, pb, false, c.data(), n), Error);
}

INSTANTIATE_TEST_SUITE_P(Modes, PreparedOperand,
                         ::testing::Values(Mode::kFp32, Mode::kBf16Native, Mode::kBf16Emulated),
                         [](const auto& test_info) { return ModeName(test_info.param); });

}  // namespace
}  // namespace lexp
