#include "nn/ops/gemm.h"

#include <cstdlib>
#include <string>
#include <type_traits>

#include "nn/tensor.h"

#ifdef LEXP_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

namespace lexp {

template <typename S>
void EigenGemm(bool ta, bool tb, long m, long n, long k, const S* a, long lda, const S* b, long ldb,
               bool accumulate, S* c, long ldc) {
  using CMap = Eigen::Map<const Mat<S>, 0, Eigen::OuterStride<>>;
  Eigen::Map<Mat<S>, 0, Eigen::OuterStride<>> C(c, m, n, Eigen::OuterStride<>(ldc));
  const CMap A(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  const CMap B(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  auto run = [&](const auto& x, const auto& y) {
    if (accumulate)
      C.noalias() += x * y;
    else
      C.noalias() = x * y;
  };
  if (!ta && !tb) run(A, B);
  if (!ta && tb) run(A, B.transpose());
  if (ta && !tb) run(A.transpose(), B);
  if (ta && tb) run(A.transpose(), B.transpose());
}

namespace {

#ifdef LEXP_HAVE_LIBXSMM
// libxsmm is column-major: the row-major C = op(A) op(B) is the column-major C' = op(B)' op(A)',
// with A and B swapping places. Its JIT has no kernel for a transposed first operand (a
// transposed row-major B); returns false when there is no kernel.
template <typename S>
bool LibxsmmGemm(bool ta, bool tb, long m, long n, long k, const S* a, long lda, const S* b,
                 long ldb, bool accumulate, S* c, long ldc) {
  if (tb) return false;
  InitGemmBackends();
  const libxsmm_blasint xlda = ldb, xldb = lda, xldc = ldc;
  const int flags =
      (ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0) | (accumulate ? 0 : LIBXSMM_GEMM_FLAG_BETA_0);
  const S alpha = 1, beta = accumulate ? S(1) : S(0);
  if constexpr (std::is_same_v<S, float>) {
    const libxsmm_smmfunction f =
        libxsmm_smmdispatch(n, m, k, &xlda, &xldb, &xldc, &alpha, &beta, &flags, nullptr);
    if (f == nullptr) return false;
    f(b, a, c);
  } else {
    const libxsmm_dmmfunction f =
        libxsmm_dmmdispatch(n, m, k, &xlda, &xldb, &xldc, &alpha, &beta, &flags, nullptr);
    if (f == nullptr) return false;
    f(b, a, c);
  }
  return true;
}

// The shape class libxsmm takes: everything on AVX-512, short products on AVX2 (Eigen the rest).
bool LibxsmmShape(long n, long k) {
#if defined(__AVX512F__)
  (void)n;
  (void)k;
  return true;
#else
  return k <= 256 && n <= 256;
#endif
}
#endif

}  // namespace

void InitGemmBackends() {
#ifdef LEXP_HAVE_LIBXSMM
  // libxsmm generates code for the CPU it runs on; a build for a lower instruction set (AVX2 on an
  // AVX-512 machine, say) restricts it to that set, so the whole binary behaves as on such a CPU.
  static const bool ready = [] {
    // libxsmm_init sets OMP_PROC_BIND=TRUE for OpenMP codes. lexp has no OpenMP, but the
    // processes it starts inherit the variable (the PyTorch reference of `lexp bench --compare`
    // ran 1.5x slower with it), so the environment is put back as it was.
    const char* bind = std::getenv("OMP_PROC_BIND");
    const std::string saved = bind != nullptr ? bind : "";
    libxsmm_init();
    if (bind == nullptr)
      unsetenv("OMP_PROC_BIND");
    else
      setenv("OMP_PROC_BIND", saved.c_str(), 1);
#if !defined(__AVX512F__) && defined(__AVX2__)
    // After libxsmm_init, which would otherwise set the target from the CPU it finds.
    libxsmm_set_target_arch("hsw");
#endif
    return true;
  }();
  (void)ready;
#endif
}

const char* GemmBackendName() {
#if defined(LEXP_HAVE_LIBXSMM)
  return "libxsmm + eigen";
#else
  return "eigen";
#endif
}

const char* GemmJitTarget() {
#if defined(LEXP_HAVE_LIBXSMM)
  InitGemmBackends();
  return libxsmm_get_target_arch();
#else
  return "none";
#endif
}

template <typename S>
void Gemm(bool ta, bool tb, long m, long n, long k, const S* a, long lda, const S* b, long ldb,
          bool accumulate, S* c, long ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // an empty sum
    if (!accumulate)
      for (long i = 0; i < m; ++i)
        for (long j = 0; j < n; ++j) c[i * ldc + j] = S(0);
    return;
  }
#ifdef LEXP_HAVE_LIBXSMM
  if (LibxsmmShape(n, k) && LibxsmmGemm(ta, tb, m, n, k, a, lda, b, ldb, accumulate, c, ldc))
    return;
#endif
  EigenGemm(ta, tb, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
}

template void EigenGemm<float>(bool, bool, long, long, long, const float*, long, const float*, long,
                               bool, float*, long);
template void EigenGemm<double>(bool, bool, long, long, long, const double*, long, const double*,
                                long, bool, double*, long);
template void Gemm<float>(bool, bool, long, long, long, const float*, long, const float*, long,
                          bool, float*, long);
template void Gemm<double>(bool, bool, long, long, long, const double*, long, const double*, long,
                           bool, double*, long);

}  // namespace lexp
