// Compiled with the build's -march flags, so the predefined macros name exactly what the compiler
// may emit everywhere else in lexp. Only a constant: no code of this file runs before the check.
#include "experiments/startup/compiled_isa.h"

#define LEXP_ISA_SPACE_(name) name " "

extern "C" const char lexp_compiled_isa[] = ""
#ifdef __SSE3__
    LEXP_ISA_SPACE_("sse3")
#endif
#ifdef __SSSE3__
    LEXP_ISA_SPACE_("ssse3")
#endif
#ifdef __SSE4_1__
    LEXP_ISA_SPACE_("sse4.1")
#endif
#ifdef __SSE4_2__
    LEXP_ISA_SPACE_("sse4.2")
#endif
#ifdef __POPCNT__
    LEXP_ISA_SPACE_("popcnt")
#endif
#ifdef __AES__
    LEXP_ISA_SPACE_("aes")
#endif
#ifdef __PCLMUL__
    LEXP_ISA_SPACE_("pclmul")
#endif
#ifdef __AVX__
    LEXP_ISA_SPACE_("avx")
#endif
#ifdef __AVX2__
    LEXP_ISA_SPACE_("avx2")
#endif
#ifdef __FMA__
    LEXP_ISA_SPACE_("fma")
#endif
#ifdef __F16C__
    LEXP_ISA_SPACE_("f16c")
#endif
#ifdef __BMI__
    LEXP_ISA_SPACE_("bmi")
#endif
#ifdef __BMI2__
    LEXP_ISA_SPACE_("bmi2")
#endif
#ifdef __LZCNT__
    LEXP_ISA_SPACE_("lzcnt")
#endif
#ifdef __MOVBE__
    LEXP_ISA_SPACE_("movbe")
#endif
#ifdef __ADX__
    LEXP_ISA_SPACE_("adx")
#endif
#ifdef __SHA__
    LEXP_ISA_SPACE_("sha")
#endif
#ifdef __AVXVNNI__
    LEXP_ISA_SPACE_("avxvnni")
#endif
#ifdef __GFNI__
    LEXP_ISA_SPACE_("gfni")
#endif
#ifdef __VAES__
    LEXP_ISA_SPACE_("vaes")
#endif
#ifdef __VPCLMULQDQ__
    LEXP_ISA_SPACE_("vpclmulqdq")
#endif
#ifdef __AVX512F__
    LEXP_ISA_SPACE_("avx512f")
#endif
#ifdef __AVX512CD__
    LEXP_ISA_SPACE_("avx512cd")
#endif
#ifdef __AVX512BW__
    LEXP_ISA_SPACE_("avx512bw")
#endif
#ifdef __AVX512DQ__
    LEXP_ISA_SPACE_("avx512dq")
#endif
#ifdef __AVX512VL__
    LEXP_ISA_SPACE_("avx512vl")
#endif
#ifdef __AVX512IFMA__
    LEXP_ISA_SPACE_("avx512ifma")
#endif
#ifdef __AVX512VBMI__
    LEXP_ISA_SPACE_("avx512vbmi")
#endif
#ifdef __AVX512VBMI2__
    LEXP_ISA_SPACE_("avx512vbmi2")
#endif
#ifdef __AVX512VNNI__
    LEXP_ISA_SPACE_("avx512vnni")
#endif
#ifdef __AVX512BITALG__
    LEXP_ISA_SPACE_("avx512bitalg")
#endif
#ifdef __AVX512VPOPCNTDQ__
    LEXP_ISA_SPACE_("avx512vpopcntdq")
#endif
#ifdef __AVX512BF16__
    LEXP_ISA_SPACE_("avx512bf16")
#endif
#ifdef __AVX512FP16__
    LEXP_ISA_SPACE_("avx512fp16")
#endif
#ifdef __AMX_TILE__
    LEXP_ISA_SPACE_("amx-tile")
#endif
#ifdef __AMX_BF16__
    LEXP_ISA_SPACE_("amx-bf16")
#endif
    "";
