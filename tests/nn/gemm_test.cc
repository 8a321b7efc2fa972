// Gemm dispatches each product to libxsmm, serial OpenBLAS or Eigen by instruction set and shape
// (nn/ops/gemm.h). Whatever it picks must be the product of the definition, on every layout the
// layers use, and the same bits whether calls run on one thread or many.
#include "nn/ops/gemm.h"

#include <gtest/gtest.h>
#include <tbb/parallel_for.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "nn/parallel.h"
#include "nn/rng.h"

namespace lexp {
namespace {

struct Case {
  long m, n, k;
  bool ta, tb, accumulate;
  long pad;  // extra row stride of every operand (strided sub-blocks, as attention's heads are)
};

template <typename S>
struct Operands {
  std::vector<S> a, b, c;
  long lda, ldb, ldc;
};

template <typename S>
Operands<S> Make(const Case& t, uint64_t seed) {
  Rng rng(seed);
  Operands<S> o;
  const long a_rows = t.ta ? t.k : t.m, a_cols = t.ta ? t.m : t.k;
  const long b_rows = t.tb ? t.n : t.k, b_cols = t.tb ? t.k : t.n;
  o.lda = a_cols + t.pad;
  o.ldb = b_cols + t.pad;
  o.ldc = t.n + t.pad;
  o.a.resize(a_rows * o.lda);
  o.b.resize(b_rows * o.ldb);
  o.c.resize(t.m * o.ldc);
  for (auto& x : o.a) x = static_cast<S>(rng.Normal());
  for (auto& x : o.b) x = static_cast<S>(rng.Normal());
  for (auto& x : o.c) x = static_cast<S>(rng.Normal());
  return o;
}

// The definition: C_ij (+)= sum_p op(A)_ip op(B)_pj, in double.
template <typename S>
std::vector<double> Definition(const Case& t, const Operands<S>& o) {
  std::vector<double> c(o.c.begin(), o.c.end());
  for (long i = 0; i < t.m; ++i)
    for (long j = 0; j < t.n; ++j) {
      double s = 0;
      for (long p = 0; p < t.k; ++p) {
        const double a = t.ta ? o.a[p * o.lda + i] : o.a[i * o.lda + p];
        const double b = t.tb ? o.b[j * o.ldb + p] : o.b[p * o.ldb + j];
        s += a * b;
      }
      c[i * o.ldc + j] = (t.accumulate ? c[i * o.ldc + j] : 0.0) + s;
    }
  return c;
}

const std::vector<Case>& Cases() {
  static const std::vector<Case> k = {
      // the linear layers' chunks (forward NN, d_x NT, d_W TN) and attention blocks
      {512, 192, 64, false, false, false, 0},  {512, 64, 192, false, true, true, 0},
      {64, 128, 1024, true, false, true, 0},   {64, 48, 16, false, true, false, 5},
      {64, 16, 48, false, false, true, 5},     {48, 16, 64, true, false, true, 5},
      {300, 300, 300, false, false, false, 0}, {7, 5, 3, true, true, false, 2},
      {33, 1, 9, false, false, true, 0},       {1, 1, 1, false, false, false, 0},
      {4, 3, 0, false, false, false, 0},  // empty sum: C = 0
      {4, 3, 0, false, false, true, 0},   // empty sum: C unchanged
  };
  return k;
}

template <typename S>
void ExpectDefinition(double tol) {
  for (const Case& t : Cases()) {
    Operands<S> o = Make<S>(t, 1 + t.m * 7 + t.n * 3 + t.k);
    const std::vector<double> want = Definition(t, o);
    Gemm<S>(t.ta, t.tb, t.m, t.n, t.k, o.a.data(), o.lda, o.b.data(), o.ldb, t.accumulate,
            o.c.data(), o.ldc);
    double err = 0;
    for (long i = 0; i < t.m; ++i)
      for (long j = 0; j < t.n; ++j)
        err = std::max(err, std::abs(o.c[i * o.ldc + j] - want[i * o.ldc + j]));
    EXPECT_LT(err, tol * std::sqrt(static_cast<double>(std::max(1L, t.k))))
        << t.m << "x" << t.n << "x" << t.k << (t.ta ? " T" : " N") << (t.tb ? "T" : "N")
        << (t.accumulate ? " +=" : " =") << " backends: " << GemmBackendName();
    // The padding between rows is never written.
    for (long i = 0; i < t.m; ++i)
      for (long j = t.n; j < o.ldc; ++j)
        EXPECT_EQ(o.c[i * o.ldc + j], static_cast<S>(want[i * o.ldc + j]));
  }
}

TEST(Gemm, FloatProductsEqualTheDefinitionOnEveryLayout) { ExpectDefinition<float>(1e-5); }
TEST(Gemm, DoubleProductsEqualTheDefinitionOnEveryLayout) { ExpectDefinition<double>(1e-12); }

// Products that differ from the one before in a single argument (a dimension, one row stride, the
// transposition, accumulation), then more shapes than the kernel memo of nn/ops/gemm.cc has slots
// and the first ones again: each call still gets the product of its own arguments.
template <typename S>
void ExpectEachCallsOwnKernel(double tol) {
  // m = k: transposing A keeps its row stride.
  const Case base{32, 48, 32, false, false, false, 0};
  struct Call {
    Case t;
    long pad_a, pad_b, pad_c;  // extra row stride of each operand
  };
  std::vector<Call> calls = {{base, 0, 0, 0}};
  const auto vary = [&](Call changed) {
    calls.push_back(changed);
    calls.push_back({base, 0, 0, 0});
  };
  vary({{31, 48, 32, false, false, false, 0}, 0, 0, 0});
  vary({{32, 47, 32, false, false, false, 0}, 0, 0, 0});
  vary({{32, 48, 31, false, false, false, 0}, 0, 0, 0});
  vary({base, 3, 0, 0});
  vary({base, 0, 3, 0});
  vary({base, 0, 0, 3});
  vary({{32, 48, 32, true, false, false, 0}, 0, 0, 0});
  vary({{32, 48, 32, false, false, true, 0}, 0, 0, 0});
  for (long m = 1; m <= 80; ++m)
    calls.push_back({{m, 16, 8, false, false, m % 2 == 0, 0}, m % 3, m % 5, m % 2});
  const size_t first = calls.size();
  for (size_t i = 0; i < first; ++i) calls.push_back(calls[i]);
  for (size_t i = 0; i < calls.size(); ++i) {
    const Case& t = calls[i].t;
    Operands<S> o = Make<S>(t, 500 + i);
    // Re-lay the operands with their own strides (Make pads all three alike).
    const auto relay = [](std::vector<S>& x, long rows, long cols, long ld_old, long ld_new) {
      std::vector<S> y(rows * ld_new, S(-3));
      for (long r = 0; r < rows; ++r)
        for (long c = 0; c < cols; ++c) y[r * ld_new + c] = x[r * ld_old + c];
      x.swap(y);
    };
    const long a_rows = t.ta ? t.k : t.m, a_cols = t.ta ? t.m : t.k;
    relay(o.a, a_rows, a_cols, o.lda, a_cols + calls[i].pad_a);
    relay(o.b, t.k, t.n, o.ldb, t.n + calls[i].pad_b);
    relay(o.c, t.m, t.n, o.ldc, t.n + calls[i].pad_c);
    o.lda = a_cols + calls[i].pad_a;
    o.ldb = t.n + calls[i].pad_b;
    o.ldc = t.n + calls[i].pad_c;
    const std::vector<double> want = Definition(t, o);
    Gemm<S>(t.ta, t.tb, t.m, t.n, t.k, o.a.data(), o.lda, o.b.data(), o.ldb, t.accumulate,
            o.c.data(), o.ldc);
    double err = 0;
    for (long r = 0; r < t.m; ++r)
      for (long j = 0; j < o.ldc; ++j)  // the padding too: never written
        err = std::max(err, std::abs(double(o.c[r * o.ldc + j]) - want[r * o.ldc + j]));
    EXPECT_LT(err, tol) << "call " << i << ": " << t.m << "x" << t.n << "x" << t.k
                        << (t.ta ? " T" : " N") << (t.accumulate ? " +=" : " =") << ", lda "
                        << o.lda << ", ldb " << o.ldb << ", ldc " << o.ldc;
  }
}
TEST(Gemm, EachCallGetsTheKernelOfItsOwnShape) {
  ExpectEachCallsOwnKernel<float>(1e-4);
  ExpectEachCallsOwnKernel<double>(1e-11);
}

// The same products, run concurrently on every thread, give the bits of a sequential run.
TEST(Gemm, ConcurrentCallsGiveTheBitsOfSequentialOnes) {
  const auto& cases = Cases();
  std::vector<std::vector<float>> sequential, concurrent;
  auto run = [&](size_t i) {
    const Case& t = cases[i % cases.size()];
    Operands<float> o = Make<float>(t, 100 + i);
    Gemm<float>(t.ta, t.tb, t.m, t.n, t.k, o.a.data(), o.lda, o.b.data(), o.ldb, t.accumulate,
                o.c.data(), o.ldc);
    return o.c;
  };
  const size_t n = 4 * cases.size();
  {
    ThreadLimit one(1);
    for (size_t i = 0; i < n; ++i) sequential.push_back(run(i));
  }
  concurrent.resize(n);
  tbb::parallel_for(size_t{0}, n, [&](size_t i) { concurrent[i] = run(i); });
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(sequential[i], concurrent[i]) << "call " << i;
}

// libxsmm's set-up sets OMP_PROC_BIND=TRUE; the processes lexp starts must not inherit it (it made
// the PyTorch reference of `lexp bench --compare` 1.5x slower).
TEST(Gemm, SettingUpTheBackendsLeavesTheEnvironmentAlone) {
  const char* before = std::getenv("OMP_PROC_BIND");
  const std::string saved = before != nullptr ? before : "<unset>";
  InitGemmBackends();
  float a = 1, b = 2, c = 0;
  Gemm<float>(false, false, 1, 1, 1, &a, 1, &b, 1, false, &c, 1);
  const char* after = std::getenv("OMP_PROC_BIND");
  EXPECT_EQ(after != nullptr ? std::string(after) : "<unset>", saved);
}

// libxsmm_init picks the kernels' instruction set from the CPU; a build for AVX2 must keep it at
// AVX2 on an AVX-512 machine, or the avx2 preset measures AVX-512 kernels (it did: the target was
// set before libxsmm_init, which overrode it).
TEST(Gemm, JitKernelsUseNoInstructionSetBeyondTheBuilds) {
  const std::string target = GemmJitTarget();
#if defined(__AVX512F__)
  SUCCEED() << "AVX-512 build: libxsmm may use any target (" << target << ")";
#else
  for (const char* avx512 : {"knl", "knm", "skx", "clx", "cpx", "spr", "gnr", "avx512"})
    EXPECT_EQ(target.find(avx512), std::string::npos) << "libxsmm target " << target;
#endif
}

}  // namespace
}  // namespace lexp
