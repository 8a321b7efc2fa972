// The x86-64 instruction-set extensions this build's code may use, as the names GCC's
// __builtin_cpu_supports takes ("avx2 fma avx512f ..."), and their check at start-up (cpu_guard.c).
#pragma once

#include <string>

extern "C" {
// Space-separated; empty for a build for the x86-64 baseline (the portable preset).
extern const char lexp_compiled_isa[];
}

namespace lexp {
// The sets as a readable list ("avx2, fma, avx512f"), or "none beyond the x86-64 baseline".
inline std::string CompiledInstructionSets() {
  std::string list;
  for (const char* p = lexp_compiled_isa; *p != '\0'; ++p) {
    if (*p != ' ') {
      list += *p;
    } else if (p[1] != '\0') {
      list += ", ";
    }
  }
  return list.empty() ? std::string("none beyond the x86-64 baseline") : list;
}
}  // namespace lexp
