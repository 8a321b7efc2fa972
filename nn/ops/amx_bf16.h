// bf16 matrix products on Intel AMX tiles (Sapphire Rapids and later: AMX-TILE, AMX-BF16), the
// native bf16 kernel where the CPU has them (nn/ops/gemm.cc chooses it). AVX512_BF16's dot product
// runs at fp32's FMA rate on these CPUs (one per cycle against two FMAs), so bf16 pays there only
// through the tiles: TDPBF16PS multiplies a 16 x 32 bf16 tile by a 32 x 16 one into 16 x 16 fp32
// (Intel SDM vol. 2, TDPBF16PS; inputs and outputs denormal-flushed, as AVX512_BF16 does).
#pragma once

#include <cstdint>

namespace lexp {

// The CPU has AMX-TILE and AMX-BF16 and the kernel granted this process the tile state
// (arch_prctl ARCH_REQ_XCOMP_PERM); asked once. False in builds without AVX-512 or without libxsmm
// (the native bf16 path whose packed operands the tiles read), and while ForceAmxOff is on.
bool AmxBf16Usable();

// The packed operands' padded sizes: op(A) as bf16 rows [AmxRows(m)][AmxDepth(k)], op(B) as VNNI
// pairs [AmxDepth(k) / 2][AmxCols(n)][2], the pad zero.
inline long AmxDepth(long k) { return (k + 31) / 32 * 32; }
inline long AmxRows(long m) { return (m + 15) / 16 * 16; }
inline long AmxCols(long n) { return (n + 15) / 16 * 16; }

// C[m, n] = A B (+= when accumulate), fp32 C with row stride ldc; a and b packed as above (a's
// row stride AmxDepth(k), b's pair rows AmxCols(n) pairs long). Each element of C is one fixed
// sequence of tile dot products in k order, whatever the blocking: the same bits for the same
// operands.
void AmxBf16Gemm(long m, long n, long k, const std::uint16_t* a, const std::uint16_t* b,
                 bool accumulate, float* c, long ldc);

// Products computed on AMX tiles in this process (tests: the AMX path ran).
long AmxBf16Products();
// Tests and `lexp bench --gemm`: AmxBf16Usable() false even where the CPU has AMX (process-wide),
// so that the AVX512_BF16 kernel is timed and tested on such a CPU too. A GemmOperand prepared
// before a switch is refused by the products after it (its packing is for the other kernel).
void ForceAmxOff(bool on);

}  // namespace lexp
