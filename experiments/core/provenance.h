// Provenance attributes written at the root of every run file: versions of lexp and of every
// library, the compiler, build type, compile flags and build flavour (native: results depend on the
// CPU; portable: they do not), the SIMD instruction sets compiled in, the CPU model and the
// instruction sets it offers, the git commit, and UTC times.
#pragma once

#include <string>

#include "nn/io/hdf5.h"

namespace lexp {

std::string UtcNow();  // ISO 8601, seconds
void WriteProvenance(const h5::Group& root, int threads);
std::string CpuModel();            // /proc/cpuinfo "model name"
std::string CpuInstructionSets();  // "x86-64-v4 (sse4.2 avx avx2 fma avx512f)"
// The SIMD instruction sets this build was compiled for, from the compiler's own macros
// ("AVX512F, AVX2, FMA, AVX, SSE4.2, ..."; Eigen 3.4's own string says "AVX" for AVX2 builds).
std::string CompiledSimd();

}  // namespace lexp
