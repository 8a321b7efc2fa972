// bf16 products on AMX tiles (nn/ops/amx_bf16.h): where the CPU has AMX they are the native bf16
// products, agree with AVX512_BF16's kernel to fp32 accumulation, and a block of C has the same
// bits whether it is computed alone or inside a larger product. Skipped on CPUs without AMX (the
// bf16 products there are tested by bf16_test.cc on their own kernel).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "nn/ops/amx_bf16.h"
#include "nn/ops/gemm.h"
#include "nn/precision.h"
#include "nn/rng.h"

namespace lexp {
namespace {

class AmxBf16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!AmxBf16Usable())
      GTEST_SKIP() << "this CPU (or this build: AVX-512 builds only) has no AMX tiles";
  }
  void TearDown() override { ForceAmxOff(false); }
};

std::vector<float> Normal(long n, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.Normal());
  return v;
}

struct Case {
  long m, n, k;
  bool ta, tb, accumulate;
};

// C = op(A) op(B) (+ C0) in bf16; strides wider than the rows; C's rows wider than n.
std::vector<float> Product(const Case& s, const std::vector<float>& a, const std::vector<float>& b,
                           const std::vector<float>& c0) {
  PrecisionPolicy policy;
  policy.matmul = Precision::kBf16;
  const PrecisionScope scope(policy);
  std::vector<float> c = c0;
  const long lda = (s.ta ? s.m : s.k) + 3, ldb = (s.tb ? s.k : s.n) + 2, ldc = s.n + 5;
  Gemm<float>(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, s.accumulate, c.data(), ldc);
  return c;
}

std::vector<Case> Cases() {
  std::vector<Case> out;
  // Whole tiles, every edge (m, n not multiples of 16 or 32; k not a multiple of 32; k = 1), one
  // row (a decoding step), and the model's shapes (512-row chunks, 64-query attention blocks).
  for (const auto& [m, n, k] : std::vector<std::array<long, 3>>{
           {32, 32, 64}, {5, 7, 9}, {33, 48, 100}, {47, 17, 1}, {1, 64, 300}, {64, 16, 64},
           {512, 192, 64}, {64, 64, 16}})
    for (int t = 0; t < 4; ++t)
      for (const bool acc : {false, true}) out.push_back({m, n, k, (t & 1) != 0, (t & 2) != 0, acc});
  return out;
}

TEST_F(AmxBf16, NativeBf16ProductsRunOnTheTiles) {
  EXPECT_STREQ(Bf16BackendName(), "native (AMX tiles)");
  Rng rng(31);
  const Case s{33, 48, 100, false, false, false};
  const auto a = Normal(s.m * (s.k + 3), rng), b = Normal(s.k * (s.n + 2), rng);
  const long before = AmxBf16Products(), native_before = NativeBf16Products();
  Product(s, a, b, std::vector<float>(s.m * (s.n + 5), 0.0f));
  EXPECT_EQ(AmxBf16Products(), before + 1);
  EXPECT_EQ(NativeBf16Products(), native_before + 1);
}

// The same bf16 operands summed in fp32 by two kernels: within fp32 accumulation's bound of each
// other (2 (k + 1) 2^-24 of the mass each), never bit for bit the fp32 product, and nothing
// written beyond a row's n columns.
TEST_F(AmxBf16, TilesAgreeWithAvx512Bf16ToFp32Accumulation) {
  Rng rng(32);
  for (const Case& s : Cases()) {
    const long lda = (s.ta ? s.m : s.k) + 3, ldb = (s.tb ? s.k : s.n) + 2, ldc = s.n + 5;
    const auto a = Normal((s.ta ? s.k : s.m) * lda, rng), b = Normal((s.tb ? s.n : s.k) * ldb, rng);
    const auto c0 = Normal((s.m + 2) * ldc, rng);  // two guard rows below C
    const long amx_before = AmxBf16Products();
    const std::vector<float> tiles = Product(s, a, b, c0);
    EXPECT_EQ(AmxBf16Products(), amx_before + 1);
    ForceAmxOff(true);
    const long native_before = NativeBf16Products();
    const std::vector<float> avx512 = Product(s, a, b, c0);
    const bool other_native = NativeBf16Products() == native_before + 1;
    ForceAmxOff(false);
    const std::string at = "m n k " + std::to_string(s.m) + " " + std::to_string(s.n) + " " +
                           std::to_string(s.k) + (s.ta ? " ta" : "") + (s.tb ? " tb" : "") +
                           (s.accumulate ? " accumulate" : "");
    for (long i = 0; i < s.m; ++i) {
      for (long j = 0; j < s.n; ++j) {
        double mass = s.accumulate ? std::abs(c0[i * ldc + j]) : 0.0;
        for (long q = 0; q < s.k; ++q)
          mass += std::abs(double(s.ta ? a[q * lda + i] : a[i * lda + q]) *
                           (s.tb ? b[j * ldb + q] : b[q * ldb + j]));
        const double bound = (other_native ? 4.0 : 2.0) * (s.k + 1) * std::ldexp(mass, -24);
        ASSERT_LE(std::abs(double(tiles[i * ldc + j]) - avx512[i * ldc + j]), bound)
            << at << " at " << i << ", " << j;
      }
      for (long j = s.n; j < ldc; ++j)
        ASSERT_EQ(tiles[i * ldc + j], c0[i * ldc + j]) << at << ": wrote beyond column n";
    }
    for (long i = s.m * ldc; i < (s.m + 2) * ldc; ++i)
      ASSERT_EQ(tiles[i], c0[i]) << at << ": wrote below row m";
  }
}

// A shared operand prepared for the tiles is refused by libxsmm's kernel (AMX switched off after
// it was prepared) rather than read at the wrong strides.
TEST_F(AmxBf16, AnOperandPackedForTheTilesIsRefusedByTheOtherKernel) {
  ForceAmxOff(true);
  const bool other_native = Bf16IsNative();
  ForceAmxOff(false);
  if (!other_native) GTEST_SKIP() << "libxsmm has no AVX512_BF16 kernels in this build";
  PrecisionPolicy policy;
  policy.matmul = Precision::kBf16;
  const PrecisionScope scope(policy);
  Rng rng(34);
  const long m = 20, n = 24, k = 40;
  const auto a = Normal(m * k, rng), b = Normal(k * n, rng);
  std::vector<float> c(static_cast<size_t>(m * n));
  GemmOperand<float> pb;
  pb.Prepare(GemmSide::kRight, false, k, n, b.data(), n);
  ASSERT_TRUE(pb.amx_packed());
  Gemm<float>(false, m, a.data(), k, pb, false, c.data(), n);  // the tiles read it
  ForceAmxOff(true);
  EXPECT_THROW(Gemm<float>(false, m, a.data(), k, pb, false, c.data(), n), std::exception);
}

// A block of C computed alone (its rows of A, its columns of B) has the bits it has inside the
// whole product: each element is one sequence of tile products in k order, whatever the blocking
// and whichever edge tile it falls in.
TEST_F(AmxBf16, ABlockHasTheBitsItHasInsideTheWholeProduct) {
  Rng rng(33);
  const long m = 70, n = 50, k = 77;
  const auto a = Normal(m * k, rng), b = Normal(k * n, rng);
  const std::vector<float> whole = Product({m, n, k, false, false, false}, [&] {
    std::vector<float> padded(static_cast<size_t>(m * (k + 3)));
    for (long i = 0; i < m; ++i)
      for (long q = 0; q < k; ++q) padded[i * (k + 3) + q] = a[i * k + q];
    return padded;
  }(), [&] {
    std::vector<float> padded(static_cast<size_t>(k * (n + 2)));
    for (long q = 0; q < k; ++q)
      for (long j = 0; j < n; ++j) padded[q * (n + 2) + j] = b[q * n + j];
    return padded;
  }(), std::vector<float>(m * (n + 5), 0.0f));
  PrecisionPolicy policy;
  policy.matmul = Precision::kBf16;
  const PrecisionScope scope(policy);
  for (const auto& [i0, rows, j0, cols] : std::vector<std::array<long, 4>>{
           {0, 16, 0, 16}, {16, 37, 0, 50}, {69, 1, 33, 17}, {5, 11, 7, 3}}) {
    std::vector<float> part(static_cast<size_t>(rows * cols));
    Gemm<float>(false, false, rows, cols, k, a.data() + i0 * k, k, b.data() + j0, n, false,
                part.data(), cols);
    for (long i = 0; i < rows; ++i)
      for (long j = 0; j < cols; ++j)
        ASSERT_EQ(part[i * cols + j], whole[(i0 + i) * (n + 5) + j0 + j])
            << "block at " << i0 << ", " << j0 << ": element " << i << ", " << j;
  }
}

}  // namespace
}  // namespace lexp
