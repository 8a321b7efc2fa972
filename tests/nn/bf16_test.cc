// bfloat16 as a precision of the matrix products (nn/precision.h, nn/ops/gemm.h): the rounding, the
// products of both backends against references to bf16's bound, and the policy reaching every task.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "nn/check.h"
#include "nn/ops/gemm.h"
#include "nn/parallel.h"
#include "nn/precision.h"
#include "nn/rng.h"

namespace lexp {
namespace {

TEST(Bf16, RoundsToTheNearestBf16TiesToEven) {
  EXPECT_EQ(RoundToBf16(1.0f), 1.0f);
  const float ulp = std::ldexp(1.0f, -7);  // bf16's spacing in [1, 2)
  EXPECT_EQ(RoundToBf16(1.0f + ulp / 2), 1.0f) << "a tie goes to the even neighbour (1)";
  EXPECT_EQ(RoundToBf16(1.0f + 3 * ulp / 2), 1.0f + 2 * ulp) << "a tie goes to the even neighbour";
  EXPECT_EQ(RoundToBf16(1.0f + ulp / 2 + ulp / 8), 1.0f + ulp) << "above the tie: up";
  EXPECT_EQ(RoundToBf16(-1.0f - ulp / 4), -1.0f);
  EXPECT_TRUE(std::isinf(RoundToBf16(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(RoundToBf16(std::nanf(""))));
  EXPECT_TRUE(std::isnan(RoundToBf16(std::bit_cast<float>(0x7f800001u))))
      << "a NaN whose payload sits in the low bits must not round to infinity";
  Rng rng(3);
  for (int i = 0; i < 10000; ++i) {
    const float x = static_cast<float>(rng.Normal() * std::exp(4 * rng.Normal()));
    const float r = RoundToBf16(x);
    EXPECT_LE(std::abs(r - x), std::ldexp(std::abs(x), -8)) << x;  // unit roundoff 2^-8
    EXPECT_EQ(RoundToBf16(r), r) << "a bf16 value is kept";
    EXPECT_EQ(std::bit_cast<std::uint32_t>(r) & 0xffffu, 0u);
  }
}

struct Shape {
  bool ta, tb;
  long m, n, k;
  bool accumulate;
};

std::vector<Shape> Shapes() {
  std::vector<Shape> out;
  for (int t = 0; t < 4; ++t)
    for (const auto& [m, n, k] : std::vector<std::array<long, 3>>{
             {5, 7, 9}, {64, 48, 33}, {33, 64, 128}, {1, 17, 300}})
      for (bool acc : {false, true}) out.push_back({(t & 1) != 0, (t & 2) != 0, m, n, k, acc});
  return out;
}

// C = op(A) op(B) (+ C) in the given precision; operands ~ N(0, 1), C0 ~ N(0, 1).
struct Product {
  std::vector<float> a, b, c0, c;
  long lda, ldb, ldc;
};

Product Operands(const Shape& s, Rng& rng) {
  Product p;
  p.lda = s.ta ? s.m + 3 : s.k + 3;  // strides wider than the rows
  p.ldb = s.tb ? s.k + 2 : s.n + 2;
  p.ldc = s.n + 5;  // as the model's products write into wider rows
  p.a.resize(static_cast<size_t>((s.ta ? s.k : s.m) * p.lda));
  p.b.resize(static_cast<size_t>((s.tb ? s.n : s.k) * p.ldb));
  p.c0.resize(static_cast<size_t>(s.m * p.ldc));
  for (auto* v : {&p.a, &p.b, &p.c0})
    for (float& x : *v) x = static_cast<float>(rng.Normal());
  return p;
}

void RunProduct(const Shape& s, Product& p, Precision precision) {
  PrecisionPolicy policy;
  policy.matmul = precision;
  const PrecisionScope scope(policy);
  p.c = p.c0;
  Gemm<float>(s.ta, s.tb, s.m, s.n, s.k, p.a.data(), p.lda, p.b.data(), p.ldb, s.accumulate,
              p.c.data(), p.ldc);
}

float At(const std::vector<float>& x, long ld, bool t, long r, long c) {
  return t ? x[c * ld + r] : x[r * ld + c];
}

// Checks the bf16 product of every shape against double references: of the bf16-rounded operands
// to fp32 accumulation's bound (k 2^-24 sum |a||b|, doubled), and of the operands themselves to
// bf16's (each operand within bf16's unit roundoff 2^-8: 2^-7 (1 + 2^-8) sum |a||b|). Returns the largest deviation from
// the unrounded reference relative to sum |a||b|.
// native: every product must have been computed by the native kernel (none fell back).
double CheckBf16Products(bool native = false) {
  Rng rng(11);
  double largest = 0;
  for (const Shape& s : Shapes()) {
    Product p = Operands(s, rng);
    const long before = NativeBf16Products();
    RunProduct(s, p, Precision::kBf16);
    if (native) {
      EXPECT_EQ(NativeBf16Products(), before + 1)
          << "m n k " << s.m << " " << s.n << " " << s.k << " ta " << s.ta << " tb " << s.tb
          << ": not computed by the native kernel";
    }
    for (long i = 0; i < s.m; ++i)
      for (long j = 0; j < s.n; ++j) {
        double rounded = s.accumulate ? p.c0[i * p.ldc + j] : 0.0, exact = rounded, mass = 0;
        for (long q = 0; q < s.k; ++q) {
          const float x = At(p.a, p.lda, s.ta, i, q), y = At(p.b, p.ldb, s.tb, q, j);
          rounded += double(RoundToBf16(x)) * RoundToBf16(y);
          exact += double(x) * y;
          mass += std::abs(double(x) * y);
        }
        const double got = p.c[i * p.ldc + j];
        const double scale = mass + (s.accumulate ? std::abs(p.c0[i * p.ldc + j]) : 0.0);
        EXPECT_LE(std::abs(got - rounded), 2.0 * (s.k + 1) * std::ldexp(scale, -24))
            << "m n k " << s.m << " " << s.n << " " << s.k << " ta " << s.ta << " tb " << s.tb
            << " acc " << s.accumulate;
        EXPECT_LE(std::abs(got - exact), std::ldexp(mass, -7) * (1 + std::ldexp(1.0, -8)) +
                                             2.0 * (s.k + 1) * std::ldexp(scale, -24));
        largest = std::max(largest, std::abs(got - exact) / mass);
      }
    for (long i = 0; i < s.m; ++i)
      for (long j = s.n; j < p.ldc; ++j)
        EXPECT_EQ(p.c[i * p.ldc + j], p.c0[i * p.ldc + j]) << "wrote beyond the row's n columns";
  }
  return largest;
}

class Bf16Backend : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (!GetParam() && !Bf16IsNative())
      GTEST_SKIP() << "this CPU has no AVX512_BF16: its bf16 products are emulated (tested as such)";
    ForceBf16Emulation(GetParam());
  }
  void TearDown() override { ForceBf16Emulation(false); }
};

TEST_P(Bf16Backend, ProductsHaveBf16OperandsAndFp32Accumulation) {
  const long native_before = NativeBf16Products();
  // The path under test is the one that ran: the native kernel computed every product (none fell
  // back to the emulation unnoticed), or none when emulation is forced.
  const double largest = CheckBf16Products(/*native=*/!GetParam());
  if (GetParam()) {
    EXPECT_EQ(NativeBf16Products(), native_before);
  }
  // Not the fp32 product: bf16 operands move it by about 2^-9 of its mass, fp32 by 2^-24 k.
  EXPECT_GT(largest, 1e-4) << "the products were not computed from bf16 operands";
}

INSTANTIATE_TEST_SUITE_P(NativeAndEmulated, Bf16Backend, ::testing::Values(false, true),
                         [](const auto& test_info) { return test_info.param ? "Emulated" : "Native"; });

TEST(Bf16, Fp32ProductsAreUnchangedOutsideAScope) {
  Rng rng(5);
  const Shape s{false, false, 33, 64, 128, false};
  Product p = Operands(s, rng);
  RunProduct(s, p, Precision::kFp32);
  const std::vector<float> fp32 = p.c;
  std::vector<float> plain = p.c0;
  Gemm<float>(false, false, s.m, s.n, s.k, p.a.data(), p.lda, p.b.data(), p.ldb, false,
              plain.data(), p.ldc);
  EXPECT_EQ(plain, fp32);
  RunProduct(s, p, Precision::kBf16);
  EXPECT_NE(p.c, fp32);
}

TEST(Bf16, DoubleProductsIgnoreThePolicy) {
  Rng rng(6);
  const long m = 9, n = 11, k = 37;
  std::vector<double> a(m * k), b(k * n), c1(m * n), c2(m * n);
  for (double& x : a) x = rng.Normal();
  for (double& x : b) x = rng.Normal();
  Gemm<double>(false, false, m, n, k, a.data(), k, b.data(), n, false, c1.data(), n);
  PrecisionPolicy bf16{Precision::kBf16, Precision::kBf16, Precision::kBf16};
  const PrecisionScope scope(bf16);
  Gemm<double>(false, false, m, n, k, a.data(), k, b.data(), n, false, c2.data(), n);
  EXPECT_EQ(c1, c2);
}

// The policy is per thread: the tasks of a parallel loop run on other threads and must take it.
TEST(Bf16, ThePolicyReachesEveryTaskOfAParallelLoop) {
  const ThreadLimit two(2);
  PrecisionPolicy bf16;
  bf16.rotary = Precision::kBf16;
  std::atomic<int> seen_bf16{0}, tasks{0};
  {
    const PrecisionScope scope(bf16);
    auto body = [&](long, long) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // lets a second thread join
      tasks++;
      if (ActivePrecision().rotary == Precision::kBf16) seen_bf16++;
    };
    ParallelChunks(32, 1, body);
    ParallelFor(32, [&](long) { body(0, 0); });
  }
  EXPECT_EQ(tasks.load(), 64);
  EXPECT_EQ(seen_bf16.load(), 64);
  EXPECT_EQ(ActivePrecision().rotary, Precision::kFp32) << "the scope puts the policy back";
}

TEST(Bf16, ParsesThePrecisionNamesAndRefusesOthers) {
  EXPECT_EQ(ParsePrecision("bf16", "model.precision"), Precision::kBf16);
  EXPECT_EQ(ParsePrecision("fp32", "model.precision"), Precision::kFp32);
  try {
    ParsePrecision("fp16", "model.precision");
    FAIL() << "fp16 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"fp32\" and \"bf16\""), std::string::npos) << e.what();
  }
  EXPECT_EQ(PrecisionPolicyText({Precision::kBf16, Precision::kFp32, Precision::kBf16}),
            "matmul=bf16 rotary=fp32 logits=bf16");
}

}  // namespace
}  // namespace lexp
