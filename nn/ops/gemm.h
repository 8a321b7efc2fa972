// Every matrix product of the layers goes through Gemm: C[m,n] = op(A) op(B), or +=, on row-major
// buffers. The backend is chosen per instruction set and shape class from `lexp bench --gemm`
// (single-thread GFLOP/s; AMD EPYC Zen 5, 2026-11-30):
//  * AVX-512 builds: libxsmm's JIT kernels (160-260 GFLOP/s) beat Eigen 3.4 (100-185) and Debian's
//    serial OpenBLAS 0.3.21 (105-128) on every NN and TN shape of the T, S and E models; libxsmm
//    has no kernel for a transposed B, and those (NT) products stay with Eigen.
//  * AVX2 builds: libxsmm wins on products with k <= 256 and n <= 256 (attention blocks, the T
//    model, the head: 98-132 against 84-125) but falls to 43-80 on long reductions (the weight
//    gradients, k up to 1024 rows per group: nn/ops/linear.h), which Eigen keeps (84-127). Serial
//    OpenBLAS, as fast as Eigen there (and about 1.6x Eigen on an AMD Zen 3), is not used: training
//    with it gave other bits on 2 threads than on 1
//    (Training.RunFilesAreBitIdenticalWithOneAndTwoThreads failed under the avx2 preset).
//  * A build without libxsmm (or the `portable` preset) uses Eigen everywhere.
// Both backends run single-threaded inside lexp's fixed TBB chunks and pick their kernel from the
// shape and the CPU only, so a product is bit-identical whatever the thread count.
#pragma once

#include <cstdint>
#include <vector>

namespace lexp {

// Which backends this build has: "libxsmm + eigen" or "eigen".
const char* GemmBackendName();

// The instruction set libxsmm generates its kernels for ("hsw" = AVX2, "skx" and later =
// AVX-512), or "none" in a build without libxsmm. A build for AVX2 keeps libxsmm at "hsw" even on
// an AVX-512 CPU.
const char* GemmJitTarget();

// Sets the backends up (idempotent, thread-safe; Gemm calls it itself).
void InitGemmBackends();

// bf16 products (the `matmul` or `logits` part of the active PrecisionPolicy, nn/precision.h, set to
// bf16): native where the CPU has them, emulated elsewhere. Native: bf16 operands, fp32
// accumulation, on AMX tiles where the CPU has AMX-BF16 (nn/ops/amx_bf16.h; AVX512_BF16's dot
// product runs at the fp32 FMA rate on those Intel CPUs, the tiles at several times it: lexp's S
// step 1.75x / 2.17x its fp32 speed (rope / alibi) on an Emerald Rapids Xeon, against 0.86x with
// AVX512_BF16), else with
// libxsmm's AVX512_BF16 kernels for its `cpx` target and later (the second operand packed in VNNI
// pairs; 393 against 197 GFLOP/s for fp32 on one Zen 5 core, a 64x64x128 product). Emulated: both
// operands rounded to bf16, then the fp32 product: every product of two bf16 is exact in fp32, so
// the kernels differ in the order of the fp32 additions, and in denormals, which the native
// instructions flush to zero. The same shape always takes the same path on one CPU (a shape
// libxsmm has no bf16 kernel for is emulated there).
bool Bf16IsNative();
// "native (AMX tiles)", "native (AVX512_BF16)" or "emulated (fp32 products of bf16-rounded
// operands)".
const char* Bf16BackendName();
// Tests: bf16 products emulated even where the CPU has AVX512_BF16 or AMX (process-wide).
void ForceBf16Emulation(bool on);
// Products the native bf16 kernel computed in this process (tests: the native path ran and did
// not fall back to the emulation).
long NativeBf16Products();

// C[m,n] = op(A) op(B), or += when accumulate. op(A) is [m,k]: A is stored [m,k] (row stride
// lda >= k), or [k,m] when ta (lda >= m); likewise op(B) is [k,n], stored [n,k] when tb.
template <typename S>
void Gemm(bool ta, bool tb, long m, long n, long k, const S* a, long lda, const S* b, long ldb,
          bool accumulate, S* c, long ldc);

// A factor shared by several products, prepared once for the kernel that reads it: a layer's
// weights are the right factor of the products of all its row chunks, and x^T of a row group the
// left factor of all its weight-gradient column chunks (nn/ops/linear.h). Prepare, under
//  * native bf16 products (float only): converts op(X) to bf16 in the kernel's layout (rows for
//    the left factor, VNNI pairs for the right one), once instead of once per product;
//  * otherwise, a transposed right factor: copies its transpose (libxsmm has no kernel for a
//    transposed right factor), so the products are plain ones;
//  * otherwise nothing: the products read X itself.
// The products computed with it are bit-identical to Gemm's on X itself (for a transposed right
// factor, on its plain transpose, which the fp32 and emulated products read). X must stay unchanged
// while the operand is used, and the products must run under the precision it was prepared under.
enum class GemmSide { kLeft, kRight };

template <typename S>
class GemmOperand {
 public:
  // op(X) [rows, cols]: X stored row-major [rows, cols] (row stride ld >= cols), or [cols, rows]
  // when transposed (ld >= rows). The left factor's rows are the product's rows, the right
  // factor's rows its sum.
  void Prepare(GemmSide side, bool transposed, long rows, long cols, const S* x, long ld);
  // True when Prepare converts (float, native bf16 products active): worth a parallel region.
  static bool PrepareConverts();

  long rows() const { return rows_; }
  long cols() const { return cols_; }
  // The fp32 view the products read when not converted: X itself or the copied transpose.
  const S* data() const { return data_; }
  long ld() const { return ld_; }
  bool transposed() const { return transposed_; }
  // The bf16 copy in the native kernel's packing (libxsmm: rows [rows][cols rounded up to even],
  // or pairs [ceil(rows / 2)][cols][2]; AMX tiles: padded to whole tiles, nn/ops/amx_bf16.h), or
  // null.
  const std::uint16_t* bf16() const { return converted_ ? bf16_.data() : nullptr; }
  bool converted() const { return converted_; }
  // The copy is packed for AMX tiles (checked at every product: a packing for one kernel read by
  // the other would read past it or at the wrong strides).
  bool amx_packed() const { return amx_packed_; }

 private:
  long rows_ = 0, cols_ = 0, ld_ = 0;
  bool transposed_ = false, converted_ = false, amx_packed_ = false;
  const S* data_ = nullptr;
  std::vector<S> transpose_;
  std::vector<std::uint16_t> bf16_;
};

// C[m, b.cols()] = op(A) op(B) (or +=), op(A) [m, b.rows()] as in Gemm; b prepared as kRight.
template <typename S>
void Gemm(bool ta, long m, const S* a, long lda, const GemmOperand<S>& b, bool accumulate, S* c,
          long ldc);
// C[a.rows(), n] = op(A) op(B) (or +=), op(B) [a.cols(), n] as in Gemm; a prepared as kLeft.
template <typename S>
void Gemm(const GemmOperand<S>& a, bool tb, long n, const S* b, long ldb, bool accumulate, S* c,
          long ldc);

// The same product with Eigen's own kernels only (the fallback of Gemm; `lexp bench --gemm`
// measures it as a backend of its own).
template <typename S>
void EigenGemm(bool ta, bool tb, long m, long n, long k, const S* a, long lda, const S* b, long ldb,
               bool accumulate, S* c, long ldc);

extern template void EigenGemm<float>(bool, bool, long, long, long, const float*, long,
                                      const float*, long, bool, float*, long);
extern template void EigenGemm<double>(bool, bool, long, long, long, const double*, long,
                                       const double*, long, bool, double*, long);
extern template void Gemm<float>(bool, bool, long, long, long, const float*, long, const float*,
                                 long, bool, float*, long);
extern template void Gemm<double>(bool, bool, long, long, long, const double*, long, const double*,
                                  long, bool, double*, long);

}  // namespace lexp
