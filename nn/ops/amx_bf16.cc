#include "nn/ops/amx_bf16.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "nn/check.h"

// The tiles multiply the operands the native bf16 path packs, which builds with libxsmm have.
#if defined(__x86_64__) && defined(__AVX512F__) && defined(LEXP_HAVE_LIBXSMM)
#define LEXP_AMX 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace lexp {
namespace {

std::atomic<long> amx_products{0};
std::atomic<bool> amx_forced_off{false};

#ifdef LEXP_AMX
// Linux's permission for the tile data state (arch/x86/include/uapi/asm/prctl.h): a process must
// ask for it before its first tile instruction.
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

bool CpuHasAmxBf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  return (d & (1u << 22)) != 0 && (d & (1u << 24)) != 0;  // CPUID.7.0:EDX AMX-BF16, AMX-TILE
}

// Palette 1 with tiles 0-7 of 16 rows x 64 bytes: tiles 0-3 hold C (16 x 16 fp32), 4-5 A (16 rows
// x 32 bf16), 6-7 B (16 pair rows x 16 columns of pairs).
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Nothing else in lexp touches the tiles (libxsmm 1.17 has no AMX kernels), so a thread's
// configuration stays until it ends; code that loads another configuration or releases the tiles
// on lexp's threads (a later libxsmm, oneDNN) would need this configured before every product.
__attribute__((target("amx-tile"))) void ConfigureThisThread() {
  thread_local bool configured = false;
  if (configured) return;
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
  configured = true;
}

// The part of C's 16 x 16 tile at (i, j) that lies inside [m, n), to and from a zero-padded copy.
void EdgeIn(const float* c, long ldc, long m, long n, long i, long j, float* edge) {
  std::memset(edge, 0, 256 * sizeof(float));
  const long rows = std::min(16L, m - i), cols = std::min(16L, n - j);
  for (long r = 0; r < rows; ++r) std::memcpy(edge + r * 16, c + (i + r) * ldc + j, cols * 4);
}

void EdgeOut(const float* edge, long m, long n, long i, long j, float* c, long ldc) {
  const long rows = std::min(16L, m - i), cols = std::min(16L, n - j);
  for (long r = 0; r < rows; ++r) std::memcpy(c + (i + r) * ldc + j, edge + r * 16, cols * 4);
}

// Tile numbers must be literals (they are encoded in the instruction), hence macros.
#define LEXP_AMX_LOAD_C(t, i, j)                                    \
  do {                                                              \
    if (!accumulate) {                                              \
      _tile_zero(t);                                                \
    } else if ((i) + 16 <= m && (j) + 16 <= n) {                    \
      _tile_loadd(t, c + (i) * ldc + (j), ldc * 4);                 \
    } else {                                                        \
      EdgeIn(c, ldc, m, n, i, j, edge);                             \
      _tile_loadd(t, edge, 64);                                     \
    }                                                               \
  } while (0)
#define LEXP_AMX_STORE_C(t, i, j)                                   \
  do {                                                              \
    if ((i) + 16 <= m && (j) + 16 <= n) {                           \
      _tile_stored(t, c + (i) * ldc + (j), ldc * 4);                \
    } else {                                                        \
      _tile_stored(t, edge, 64);                                    \
      EdgeOut(edge, m, n, i, j, c, ldc);                            \
    }                                                               \
  } while (0)

// One block of C, up to 32 x 32 (two tiles down when M2, two across when N2), over the whole depth:
// per 32-deep step, A's and B's tiles are loaded once and every pair multiplied.
template <bool M2, bool N2>
__attribute__((target("amx-tile,amx-bf16"))) void Block(long m, long n, long kp, long ldb,
                                                        const std::uint16_t* a,
                                                        const std::uint16_t* b, bool accumulate,
                                                        float* c, long ldc, long i0, long j0) {
  alignas(64) float edge[256];
  LEXP_AMX_LOAD_C(0, i0, j0);
  if constexpr (N2) LEXP_AMX_LOAD_C(1, i0, j0 + 16);
  if constexpr (M2) LEXP_AMX_LOAD_C(2, i0 + 16, j0);
  if constexpr (M2 && N2) LEXP_AMX_LOAD_C(3, i0 + 16, j0 + 16);
  const std::uint16_t* a0 = a + i0 * kp;
  const std::uint16_t* b0 = b + j0 * 2;
  const long sa = kp * 2, sb = ldb * 4;  // row strides in bytes
  for (long k0 = 0; k0 < kp; k0 += 32) {
    const std::uint16_t* bk = b0 + (k0 / 2) * ldb * 2;
    _tile_loadd(4, a0 + k0, sa);
    _tile_loadd(6, bk, sb);
    if constexpr (N2) _tile_loadd(7, bk + 32, sb);
    if constexpr (M2) _tile_loadd(5, a0 + 16 * kp + k0, sa);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (N2) _tile_dpbf16ps(1, 4, 7);
    if constexpr (M2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (M2 && N2) _tile_dpbf16ps(3, 5, 7);
  }
  LEXP_AMX_STORE_C(0, i0, j0);
  if constexpr (N2) LEXP_AMX_STORE_C(1, i0, j0 + 16);
  if constexpr (M2) LEXP_AMX_STORE_C(2, i0 + 16, j0);
  if constexpr (M2 && N2) LEXP_AMX_STORE_C(3, i0 + 16, j0 + 16);
}
#undef LEXP_AMX_LOAD_C
#undef LEXP_AMX_STORE_C
#endif

}  // namespace

bool AmxBf16Usable() {
#ifdef LEXP_AMX
  static const bool usable =
      CpuHasAmxBf16() && syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  return usable && !amx_forced_off.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void AmxBf16Gemm(long m, long n, long k, const std::uint16_t* a, const std::uint16_t* b,
                 bool accumulate, float* c, long ldc) {
#ifdef LEXP_AMX
  ConfigureThisThread();
  const long kp = AmxDepth(k), ldb = AmxCols(n);
  for (long i0 = 0; i0 < m; i0 += 32) {
    const bool m2 = i0 + 16 < m;
    for (long j0 = 0; j0 < n; j0 += 32) {
      const bool n2 = j0 + 16 < n;
      if (m2 && n2)
        Block<true, true>(m, n, kp, ldb, a, b, accumulate, c, ldc, i0, j0);
      else if (m2)
        Block<true, false>(m, n, kp, ldb, a, b, accumulate, c, ldc, i0, j0);
      else if (n2)
        Block<false, true>(m, n, kp, ldb, a, b, accumulate, c, ldc, i0, j0);
      else
        Block<false, false>(m, n, kp, ldb, a, b, accumulate, c, ldc, i0, j0);
    }
  }
  amx_products.fetch_add(1, std::memory_order_relaxed);
#else
  (void)m, (void)n, (void)k, (void)a, (void)b, (void)accumulate, (void)c, (void)ldc;
  LEXP_CHECK(false, "AMX product in a build without AVX-512");
#endif
}

void ForceAmxOff(bool on) { amx_forced_off.store(on, std::memory_order_relaxed); }

long AmxBf16Products() { return amx_products.load(std::memory_order_relaxed); }

}  // namespace lexp
