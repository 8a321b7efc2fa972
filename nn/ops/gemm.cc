#include "nn/ops/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "nn/check.h"
#include "nn/ops/amx_bf16.h"
#include "nn/precision.h"
#include "nn/tensor.h"

#ifdef LEXP_HAVE_LIBXSMM
#include <immintrin.h>
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
template <typename S>
using LibxsmmKernel =
    std::conditional_t<std::is_same_v<S, float>, libxsmm_smmfunction, libxsmm_dmmfunction>;

// Each thread's memo of the kernels it asked libxsmm for, by shape: libxsmm's own dispatch (a
// descriptor, a hash, a registry probe) on every call was 4% of a T attention layer's time, whose
// products are small ([32, 64, 16]) and many. Direct-mapped; a slot holds the last shape that
// hashed to it (kernels live as long as the process). The kernel for a shape is libxsmm's either
// way: no value changes.
template <typename S>
class LibxsmmKernelMemo {
 public:
  static LibxsmmKernel<S> Get(long m, long n, long k, long lda, long ldb, long ldc, bool ta,
                              bool accumulate) {
    thread_local LibxsmmKernelMemo memo;
    const Key key{m, n, k, lda, ldb, ldc, (ta ? 1L : 0L) | (accumulate ? 2L : 0L)};
    std::uint64_t h = 0;
    for (long v : key.v) h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ULL;
    Slot& slot = memo.slots_[(h ^ (h >> 29)) % kSlots];
    if (!slot.used || !(slot.key == key)) slot = Slot{key, Dispatch(key), true};
    return slot.kernel;
  }

 private:
  static constexpr std::size_t kSlots = 64;
  struct Key {
    long v[7];
    bool operator==(const Key& o) const { return std::equal(v, v + 7, o.v); }
  };
  struct Slot {
    Key key{};
    LibxsmmKernel<S> kernel = nullptr;
    bool used = false;
  };
  // libxsmm is column-major: the row-major C = op(A) op(B) is the column-major C' = op(B)'
  // op(A)', with A and B swapping places.
  static LibxsmmKernel<S> Dispatch(const Key& key) {
    const auto [m, n, k, lda, ldb, ldc, kind] = key.v;
    const libxsmm_blasint xlda = ldb, xldb = lda, xldc = ldc;
    const int flags = ((kind & 1) != 0 ? LIBXSMM_GEMM_FLAG_TRANS_B : 0) |
                      ((kind & 2) != 0 ? 0 : LIBXSMM_GEMM_FLAG_BETA_0);
    const S alpha = 1, beta = (kind & 2) != 0 ? S(1) : S(0);
    if constexpr (std::is_same_v<S, float>)
      return libxsmm_smmdispatch(n, m, k, &xlda, &xldb, &xldc, &alpha, &beta, &flags, nullptr);
    else
      return libxsmm_dmmdispatch(n, m, k, &xlda, &xldb, &xldc, &alpha, &beta, &flags, nullptr);
  }
  Slot slots_[kSlots];
};

// libxsmm's JIT has no kernel for a transposed first operand (a transposed row-major B): returns
// false when there is no kernel.
template <typename S>
bool LibxsmmGemm(bool ta, bool tb, long m, long n, long k, const S* a, long lda, const S* b,
                 long ldb, bool accumulate, S* c, long ldc) {
  if (tb) return false;
  InitGemmBackends();
  const LibxsmmKernel<S> f = LibxsmmKernelMemo<S>::Get(m, n, k, lda, ldb, ldc, ta, accumulate);
  if (f == nullptr) return false;
  f(b, a, c);
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

// The product in S itself (k > 0): libxsmm for its shape class, Eigen for the rest.
template <typename S>
void FullPrecisionGemm(bool ta, bool tb, long m, long n, long k, const S* a, long lda, const S* b,
                       long ldb, bool accumulate, S* c, long ldc) {
#ifdef LEXP_HAVE_LIBXSMM
  if (LibxsmmShape(n, k) && LibxsmmGemm(ta, tb, m, n, k, a, lda, b, ldb, accumulate, c, ldc))
    return;
#endif
  EigenGemm(ta, tb, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
}

std::atomic<bool> force_bf16_emulation{false};
std::atomic<long> native_bf16_products{0};

// op(X)[r, c] of a row-major X stored [rows, cols] (or [cols, rows] when transposed).
inline float OpAt(const float* x, long ld, bool t, long r, long c) {
  return t ? x[c * ld + r] : x[r * ld + c];
}

// The emulated bf16 product: both operands rounded to bf16 into packed fp32 copies, then the fp32
// product (exact products, fp32 sums).
void EmulatedBf16Gemm(bool ta, bool tb, long m, long n, long k, const float* a, long lda,
                      const float* b, long ldb, bool accumulate, float* c, long ldc) {
  thread_local std::vector<float> ar, br;
  ar.resize(static_cast<size_t>(m * k));
  br.resize(static_cast<size_t>(k * n));
  for (long i = 0; i < m; ++i)
    for (long p = 0; p < k; ++p) ar[i * k + p] = RoundToBf16(OpAt(a, lda, ta, i, p));
  for (long p = 0; p < k; ++p)
    for (long j = 0; j < n; ++j) br[p * n + j] = RoundToBf16(OpAt(b, ldb, tb, p, j));
  FullPrecisionGemm<float>(false, false, m, n, k, ar.data(), k, br.data(), n, accumulate, c, ldc);
}

#ifdef LEXP_HAVE_LIBXSMM
// x[0..n) as bf16 (round to nearest even) into out, with the instruction AVX512_BF16 has for it.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void PackBf16Row(const float* x,
                                                                                long n,
                                                                                std::uint16_t* out) {
  for (long j = 0; j < n; j += 16) {
    const __mmask16 mask = n - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1);
    const __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, x + j));
    _mm256_mask_storeu_epi16(out + j, mask, reinterpret_cast<const __m256i&>(v));
  }
}

// Rows x0 and x1 ([n] each; x1 null: zeros) as VNNI pairs out[2j] = x0[j], out[2j + 1] = x1[j].
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void PackBf16Pairs(
    const float* x0, const float* x1, long n, std::uint16_t* out) {
  alignas(64) static constexpr std::uint16_t kInterleave[32] = {
      0, 16, 1, 17, 2, 18, 3, 19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i order = _mm512_load_si512(kInterleave);
  for (long j = 0; j < n; j += 16) {
    const long left = n - j;
    const __mmask16 mask = left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
    const __m512 v0 = _mm512_maskz_loadu_ps(mask, x0 + j);
    const __m512 v1 = x1 != nullptr ? _mm512_maskz_loadu_ps(mask, x1 + j) : _mm512_setzero_ps();
    const __m512bh both = _mm512_cvtne2ps_pbh(v1, v0);  // v0 in the low half, v1 in the high
    const __m512i pairs =
        _mm512_permutexvar_epi16(order, reinterpret_cast<const __m512i&>(both));
    const __mmask32 out_mask =
        left >= 16 ? __mmask32(0xffffffffu) : __mmask32((1ull << (2 * left)) - 1);
    _mm512_mask_storeu_epi16(out + 2 * j, out_mask, pairs);
  }
}

// The transposed operands, in tiles of 16 x 16: a full tile is loaded as 16 rows of 16 words,
// transposed in registers and stored as 16 rows; the edges go element by element.
constexpr long kTile = 16;

// r[i][j] = r[j][i] for 16 x 16 32-bit words (unpack, then 128-bit lane shuffles).
__attribute__((target("avx512f"))) inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
}

// out[i * ld_out + p] = bf16(x[p * ldx + i]) for p < k, i < m.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void PackTransposedBf16(
    const float* x, long ldx, long k, long m, long ld_out, std::uint16_t* out) {
  for (long p0 = 0; p0 < k; p0 += kTile)
    for (long i0 = 0; i0 < m; i0 += kTile) {
      const long pe = std::min(kTile, k - p0), ie = std::min(kTile, m - i0);
      if (pe == kTile && ie == kTile) {
        __m512 r[kTile];
        for (long p = 0; p < kTile; ++p) r[p] = _mm512_loadu_ps(x + (p0 + p) * ldx + i0);
        Transpose16x16(r);
        for (long i = 0; i < kTile; ++i) {
          const __m256bh v = _mm512_cvtneps_pbh(r[i]);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (i0 + i) * ld_out + p0),
                              reinterpret_cast<const __m256i&>(v));
        }
        continue;
      }
      for (long p = 0; p < pe; ++p)
        for (long i = 0; i < ie; ++i)
          out[(i0 + i) * ld_out + p0 + p] = FloatToBf16Bits(x[(p0 + p) * ldx + i0 + i]);
    }
}

// VNNI pairs of op(B) = x^T, x stored [n, k] (row stride ldx): out[(p / 2) 2 ld + 2j + p % 2] =
// bf16(x[j * ldx + p]) (ld >= n pairs per pair row), the last pair's second half 0 when k is odd.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void PackTransposedBf16Pairs(
    const float* x, long ldx, long k, long n, long ld, std::uint16_t* out) {
  const long pairs = (k + 1) / 2, full_pairs = k / 2;
  for (long q0 = 0; q0 < pairs; q0 += kTile)
    for (long j0 = 0; j0 < n; j0 += kTile) {
      const long qe = std::min(kTile, pairs - q0), je = std::min(kTile, n - j0);
      if (q0 + kTile <= full_pairs && je == kTile) {
        // Row j's 32 values from p = 2 q0 are 16 pairs: 16 words, one per pair.
        __m512 r[kTile];
        for (long j = 0; j < kTile; ++j) {
          const float* src = x + (j0 + j) * ldx + 2 * q0;
          const __m512bh both = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 16), _mm512_loadu_ps(src));
          r[j] = reinterpret_cast<const __m512&>(both);
        }
        Transpose16x16(r);
        for (long q = 0; q < kTile; ++q)
          _mm512_storeu_ps(reinterpret_cast<float*>(out + (q0 + q) * 2 * ld + 2 * j0), r[q]);
        continue;
      }
      for (long q = 0; q < qe; ++q)
        for (long j = 0; j < je; ++j) {
          const long p = 2 * (q0 + q);
          const float* src = x + (j0 + j) * ldx;
          out[(q0 + q) * 2 * ld + 2 * (j0 + j)] = FloatToBf16Bits(src[p]);
          out[(q0 + q) * 2 * ld + 2 * (j0 + j) + 1] = p + 1 < k ? FloatToBf16Bits(src[p + 1]) : 0;
        }
    }
}

// Where the native kernel reads its packed operands: op(A) [m, k] as bf16 rows [rows][kp], op(B)
// [k, n] as VNNI pairs [kp / 2][cols][2], the pad 0. libxsmm: kp = k rounded up to even, nothing
// else padded; AMX: whole tiles (nn/ops/amx_bf16.h). Each side's sizes depend on its own
// dimensions only, so an operand prepared once fits every product it enters.
struct Bf16Packing {
  long kp = 0, rows = 0, cols = 0;
};

Bf16Packing NativeBf16Packing(long m, long n, long k, bool amx) {
  if (amx) return {AmxDepth(k), AmxRows(m), AmxCols(n)};
  return {k + (k & 1), m, n};
}

// op(A) [m, k] as bf16 rows (the kernel's left operand; libxsmm's second).
void PackLeftBf16(bool ta, long m, long k, const float* a, long lda, const Bf16Packing& to,
                  std::uint16_t* av) {
  for (long i = 0; i < m; ++i) {
    std::uint16_t* row = av + i * to.kp;
    if (!ta) PackBf16Row(a + i * lda, k, row);
    std::fill(row + k, row + to.kp, std::uint16_t(0));
  }
  if (ta) PackTransposedBf16(a, lda, k, m, to.kp, av);
  std::fill(av + m * to.kp, av + to.rows * to.kp, std::uint16_t(0));
}

// op(B) [k, n] as VNNI pairs (the kernel's right operand; libxsmm's first).
void PackRightBf16(bool tb, long k, long n, const float* b, long ldb, const Bf16Packing& to,
                   std::uint16_t* bv) {
  const long pairs = (k + 1) / 2, ld = 2 * to.cols;
  for (long p2 = 0; !tb && p2 < pairs; ++p2) {
    const long p = 2 * p2;
    PackBf16Pairs(b + p * ldb, p + 1 < k ? b + (p + 1) * ldb : nullptr, n, bv + p2 * ld);
  }
  if (tb) PackTransposedBf16Pairs(b, ldb, k, n, to.cols, bv);
  if (to.cols > n)
    for (long p2 = 0; p2 < pairs; ++p2)
      std::fill(bv + p2 * ld + 2 * n, bv + (p2 + 1) * ld, std::uint16_t(0));
  std::fill(bv + pairs * ld, bv + (to.kp / 2) * ld, std::uint16_t(0));
}

// libxsmm's bf16 kernel: libxsmm (column-major) computes C' = op(B)' op(A)', its first operand
// op(B)' [n, k] in VNNI pairs, its second op(A)' [k, m] plain; k is padded to even with a zero
// pair. Null when libxsmm has no kernel for the shape.
libxsmm_bsmmfunction LibxsmmBf16Kernel(long m, long n, long k, bool accumulate, long ldc) {
  const long kp = k + (k & 1);
  const libxsmm_blasint xlda = n, xldb = kp, xldc = ldc;
  const int flags = LIBXSMM_GEMM_FLAG_VNNI_A | (accumulate ? 0 : LIBXSMM_GEMM_FLAG_BETA_0);
  const float alpha = 1, beta = accumulate ? 1.0f : 0.0f;
  return libxsmm_bsmmdispatch(n, m, kp, &xlda, &xldb, &xldc, &alpha, &beta, &flags, nullptr);
}

// The native bf16 kernel of a shape: AMX tiles where the CPU has them (AVX512_BF16's dot product
// runs at the fp32 FMA rate there), else libxsmm's; false when neither has one (emulated).
struct NativeBf16 {
  long m = 0, n = 0, k = 0;
  bool accumulate = false, amx = false;
  long ldc = 0;
  libxsmm_bsmmfunction xsmm = nullptr;
  Bf16Packing packing;
  explicit operator bool() const { return amx || xsmm != nullptr; }
};

NativeBf16 NativeBf16For(long m, long n, long k, bool accumulate, long ldc) {
  const bool amx = AmxBf16Usable();  // read once: the kernel and its packing agree
  NativeBf16 f{m, n, k, accumulate, amx, ldc, nullptr, NativeBf16Packing(m, n, k, amx)};
  if (!f.amx) f.xsmm = LibxsmmBf16Kernel(m, n, k, accumulate, ldc);
  return f;
}

// The native bf16 product of packed operands (av: PackLeftBf16, bv: PackRightBf16).
void RunNativeBf16(const NativeBf16& f, const std::uint16_t* av, const std::uint16_t* bv,
                   float* c) {
  if (f.amx) {
    AmxBf16Gemm(f.m, f.n, f.k, av, bv, f.accumulate, c, f.ldc);
  } else {
    f.xsmm(reinterpret_cast<const libxsmm_bfloat16*>(bv),
           reinterpret_cast<const libxsmm_bfloat16*>(av), c);
  }
  native_bf16_products.fetch_add(1, std::memory_order_relaxed);
}

// The native bf16 product; false when there is no native kernel for the shape.
bool NativeBf16Gemm(bool ta, bool tb, long m, long n, long k, const float* a, long lda,
                    const float* b, long ldb, bool accumulate, float* c, long ldc) {
  const NativeBf16 f = NativeBf16For(m, n, k, accumulate, ldc);
  if (!f) return false;
  const Bf16Packing& to = f.packing;
  thread_local std::vector<std::uint16_t> av, bv;
  av.resize(static_cast<size_t>(to.rows * to.kp));
  bv.resize(static_cast<size_t>(to.kp * to.cols));
  PackLeftBf16(ta, m, k, a, lda, to, av.data());
  PackRightBf16(tb, k, n, b, ldb, to, bv.data());
  RunNativeBf16(f, av.data(), bv.data(), c);
  return true;
}
#endif

void Bf16Gemm(bool ta, bool tb, long m, long n, long k, const float* a, long lda, const float* b,
              long ldb, bool accumulate, float* c, long ldc) {
#ifdef LEXP_HAVE_LIBXSMM
  if (Bf16IsNative() && NativeBf16Gemm(ta, tb, m, n, k, a, lda, b, ldb, accumulate, c, ldc)) return;
#endif
  EmulatedBf16Gemm(ta, tb, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
}

}  // namespace

bool Bf16IsNative() {
  if (force_bf16_emulation.load(std::memory_order_relaxed)) return false;
#ifdef LEXP_HAVE_LIBXSMM
  InitGemmBackends();
  static const bool libxsmm_native = libxsmm_get_target_archid() >= LIBXSMM_X86_AVX512_CPX;
  return libxsmm_native || AmxBf16Usable();
#else
  return false;
#endif
}

const char* Bf16BackendName() {
  if (!Bf16IsNative()) return "emulated (fp32 products of bf16-rounded operands)";
  return AmxBf16Usable() ? "native (AMX tiles)" : "native (AVX512_BF16)";
}

void ForceBf16Emulation(bool on) { force_bf16_emulation.store(on, std::memory_order_relaxed); }

long NativeBf16Products() { return native_bf16_products.load(std::memory_order_relaxed); }

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
  if constexpr (std::is_same_v<S, float>) {
    if (ActivePrecision().matmul == Precision::kBf16) {
      Bf16Gemm(ta, tb, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
      return;
    }
  }
  FullPrecisionGemm(ta, tb, m, n, k, a, lda, b, ldb, accumulate, c, ldc);
}

template <typename S>
bool GemmOperand<S>::PrepareConverts() {
#ifdef LEXP_HAVE_LIBXSMM
  if constexpr (std::is_same_v<S, float>)
    return ActivePrecision().matmul == Precision::kBf16 && Bf16IsNative();
#endif
  return false;
}

template <typename S>
void GemmOperand<S>::Prepare(GemmSide side, bool transposed, long rows, long cols, const S* x,
                             long ld) {
  rows_ = rows;
  cols_ = cols;
  data_ = x;  // also what a converted operand falls back to for a shape without a bf16 kernel
  ld_ = ld;
  transposed_ = transposed;
  converted_ = PrepareConverts();
  amx_packed_ = false;
  if (converted_) {
#ifdef LEXP_HAVE_LIBXSMM
    if constexpr (std::is_same_v<S, float>) {
      // The packing of this side's dimensions (rows x cols is op(A) [m, k] or op(B) [k, n]).
      amx_packed_ = AmxBf16Usable();
      const Bf16Packing to = side == GemmSide::kLeft
                                 ? NativeBf16Packing(rows, 0, cols, amx_packed_)
                                 : NativeBf16Packing(0, cols, rows, amx_packed_);
      // resize keeps the capacity; the packing writes every element, pad included.
      bf16_.resize(static_cast<size_t>(side == GemmSide::kLeft ? to.rows * to.kp
                                                               : to.kp * to.cols));
      if (side == GemmSide::kLeft)
        PackLeftBf16(transposed, rows, cols, x, ld, to, bf16_.data());
      else
        PackRightBf16(transposed, rows, cols, x, ld, to, bf16_.data());
    }
#endif
    return;
  }
  if (side == GemmSide::kRight && transposed) {
    transpose_.resize(static_cast<size_t>(rows * cols));
    MatMap<S>(transpose_.data(), rows, cols) =
        Eigen::Map<const Mat<S>, 0, Eigen::OuterStride<>>(x, cols, rows, Eigen::OuterStride<>(ld))
            .transpose();
    data_ = transpose_.data();
    ld_ = cols;
    transposed_ = false;
  }
}

namespace {
// A converted operand used under another precision than it was prepared under is a bug of the
// caller: its products would silently be bf16 (or fp32).
template <typename S>
void CheckPreparedPrecision(const GemmOperand<S>& x) {
  LEXP_CHECK(x.converted() == GemmOperand<S>::PrepareConverts(),
             "GemmOperand used under another matmul precision than it was prepared under");
}
}  // namespace

template <typename S>
void Gemm(bool ta, long m, const S* a, long lda, const GemmOperand<S>& b, bool accumulate, S* c,
          long ldc) {
  CheckPreparedPrecision(b);
  const long n = b.cols(), k = b.rows();
#ifdef LEXP_HAVE_LIBXSMM
  if constexpr (std::is_same_v<S, float>) {
    if (b.converted() && m > 0 && n > 0 && k > 0) {
      if (const NativeBf16 f = NativeBf16For(m, n, k, accumulate, ldc)) {
        LEXP_CHECK(f.amx == b.amx_packed(), "GemmOperand packed for another bf16 kernel");
        thread_local std::vector<std::uint16_t> av;
        av.resize(static_cast<size_t>(f.packing.rows * f.packing.kp));
        PackLeftBf16(ta, m, k, a, lda, f.packing, av.data());
        RunNativeBf16(f, av.data(), b.bf16(), c);
        return;
      }
    }
  }
#endif
  Gemm<S>(ta, b.transposed(), m, n, k, a, lda, b.data(), b.ld(), accumulate, c, ldc);
}

template <typename S>
void Gemm(const GemmOperand<S>& a, bool tb, long n, const S* b, long ldb, bool accumulate, S* c,
          long ldc) {
  CheckPreparedPrecision(a);
  const long m = a.rows(), k = a.cols();
#ifdef LEXP_HAVE_LIBXSMM
  if constexpr (std::is_same_v<S, float>) {
    if (a.converted() && m > 0 && n > 0 && k > 0) {
      if (const NativeBf16 f = NativeBf16For(m, n, k, accumulate, ldc)) {
        LEXP_CHECK(f.amx == a.amx_packed(), "GemmOperand packed for another bf16 kernel");
        thread_local std::vector<std::uint16_t> bv;
        bv.resize(static_cast<size_t>(f.packing.kp * f.packing.cols));
        PackRightBf16(tb, k, n, b, ldb, f.packing, bv.data());
        RunNativeBf16(f, a.bf16(), bv.data(), c);
        return;
      }
    }
  }
#endif
  Gemm<S>(a.transposed(), tb, m, n, k, a.data(), a.ld(), b, ldb, accumulate, c, ldc);
}

template class GemmOperand<float>;
template class GemmOperand<double>;
template void Gemm<float>(bool, long, const float*, long, const GemmOperand<float>&, bool, float*,
                          long);
template void Gemm<double>(bool, long, const double*, long, const GemmOperand<double>&, bool,
                           double*, long);
template void Gemm<float>(const GemmOperand<float>&, bool, long, const float*, long, bool, float*,
                          long);
template void Gemm<double>(const GemmOperand<double>&, bool, long, const double*, long, bool,
                           double*, long);
template void EigenGemm<float>(bool, bool, long, long, long, const float*, long, const float*, long,
                               bool, float*, long);
template void EigenGemm<double>(bool, bool, long, long, long, const double*, long, const double*,
                                long, bool, double*, long);
template void Gemm<float>(bool, bool, long, long, long, const float*, long, const float*, long,
                          bool, float*, long);
template void Gemm<double>(bool, bool, long, long, long, const double*, long, const double*, long,
                           bool, double*, long);

}  // namespace lexp
