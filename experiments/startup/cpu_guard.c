/* Before any code built for instruction sets beyond the x86-64 baseline runs, check that this CPU
 * has every set the build may use (compiled_isa.cc) and otherwise exit 2 naming the missing ones
 * and the preset to build, instead of dying of SIGILL somewhere inside a run.
 *
 * This file is C and compiled for the x86-64 baseline (-march=x86-64, CMakeLists.txt): no inline
 * C++ function of a header can be merged here from a file built for the native CPU. It runs as a
 * constructor of priority 101, before every default-priority constructor of the executable (those
 * of lexp's own files and of the static libraries it links, libxsmm among them); the shared
 * libraries it loads (TBB, HDF5, libstdc++) are Debian's baseline builds.
 *
 * Test hooks: LEXP_TEST_HIDE_ISA=avx512f,avx2 treats the named sets as absent;
 * LEXP_TEST_SKIP_CPU_CHECK=1 skips the check (the negative control: on an emulated older CPU the
 * binary then dies of SIGILL, tests/experiments/cpu_guard_test.cc). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef LEXP_GUARD_FLAVOUR
#define LEXP_GUARD_FLAVOUR "unknown"
#endif

extern const char lexp_compiled_isa[];

struct IsaSupport {
  const char* name;
  int present;
};

/* __builtin_cpu_supports takes only string literals, hence one line per set. */
static int FillSupport(struct IsaSupport* table) {
  int n = 0;
#define LEXP_ISA_(literal) table[n].name = literal; table[n].present = __builtin_cpu_supports(literal) != 0; ++n
  LEXP_ISA_("sse3"); LEXP_ISA_("ssse3"); LEXP_ISA_("sse4.1"); LEXP_ISA_("sse4.2");
  LEXP_ISA_("popcnt"); LEXP_ISA_("aes"); LEXP_ISA_("pclmul"); LEXP_ISA_("avx"); LEXP_ISA_("avx2");
  LEXP_ISA_("fma"); LEXP_ISA_("f16c"); LEXP_ISA_("bmi"); LEXP_ISA_("bmi2"); LEXP_ISA_("lzcnt");
  LEXP_ISA_("movbe"); LEXP_ISA_("adx"); LEXP_ISA_("sha"); LEXP_ISA_("avxvnni"); LEXP_ISA_("gfni");
  LEXP_ISA_("vaes"); LEXP_ISA_("vpclmulqdq"); LEXP_ISA_("avx512f"); LEXP_ISA_("avx512cd");
  LEXP_ISA_("avx512bw"); LEXP_ISA_("avx512dq"); LEXP_ISA_("avx512vl"); LEXP_ISA_("avx512ifma");
  LEXP_ISA_("avx512vbmi"); LEXP_ISA_("avx512vbmi2"); LEXP_ISA_("avx512vnni");
  LEXP_ISA_("avx512bitalg"); LEXP_ISA_("avx512vpopcntdq"); LEXP_ISA_("avx512bf16");
  LEXP_ISA_("avx512fp16"); LEXP_ISA_("amx-tile"); LEXP_ISA_("amx-bf16");
#undef LEXP_ISA_
  return n;
}

/* Whether `name` is a whole item of the comma- or space-separated `list`. */
static int Listed(const char* list, const char* name) {
  const size_t length = strlen(name);
  for (const char* p = list; *p != '\0';) {
    while (*p == ',' || *p == ' ') ++p;
    const char* end = p;
    while (*end != '\0' && *end != ',' && *end != ' ') ++end;
    if ((size_t)(end - p) == length && strncmp(p, name, length) == 0) return 1;
    p = end;
  }
  return 0;
}

/* Whether the CPU has `name`: known to the table and present, and not hidden by the test hook. */
static int Has(const struct IsaSupport* table, int n, const char* hidden, const char* name) {
  if (hidden != NULL && Listed(hidden, name)) return 0;
  for (int i = 0; i < n; ++i) {
    if (strcmp(table[i].name, name) == 0) return table[i].present;
  }
  return 0;
}

__attribute__((constructor(101))) static void LexpCheckCpu(void) {
  const char* skip = getenv("LEXP_TEST_SKIP_CPU_CHECK");
  if (skip != NULL && strcmp(skip, "1") == 0) return;
  __builtin_cpu_init();
  struct IsaSupport table[64];
  const int n = FillSupport(table);
  const char* hidden = getenv("LEXP_TEST_HIDE_ISA");
  char missing[512] = "";
  size_t used = 0;
  for (const char* p = lexp_compiled_isa; *p != '\0';) {
    while (*p == ' ') ++p;
    const char* end = p;
    while (*end != '\0' && *end != ' ') ++end;
    char name[32];
    const size_t length = (size_t)(end - p);
    if (length > 0 && length < sizeof name) {
      memcpy(name, p, length);
      name[length] = '\0';
      if (!Has(table, n, hidden, name) && used + length + 3 < sizeof missing) {
        if (used > 0) { memcpy(missing + used, ", ", 2); used += 2; }
        memcpy(missing + used, name, length);
        used += length;
        missing[used] = '\0';
      }
    }
    p = end;
  }
  if (used == 0) return;
  /* The avx2 preset builds for x86-64-v3. */
  static const char* const kV3[] = {"sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2",
                                    "fma", "f16c", "bmi", "bmi2", "lzcnt", "movbe"};
  int v3 = 1;
  for (size_t i = 0; i < sizeof kV3 / sizeof kV3[0]; ++i) v3 = v3 && Has(table, n, hidden, kV3[i]);
  fprintf(stderr,
          "lexp: this CPU lacks %s, which this lexp binary was built to use (a '%s' build: it "
          "would stop with an illegal instruction). Build lexp for this CPU: ",
          missing, LEXP_GUARD_FLAVOUR);
  if (v3) {
    fputs("the preset 'avx2' (AVX2 CPUs, x86-64-v3): cmake --preset avx2 && cmake --build "
          "--preset avx2, binary build/avx2/lexp; or the preset 'portable' (any x86-64 CPU), "
          "binary build/portable/lexp; or the default 'release' build on this machine.\n",
          stderr);
  } else {
    fputs("the preset 'portable' (any x86-64 CPU; this one has not the AVX2 set the 'avx2' "
          "preset needs): cmake --preset portable && cmake --build --preset portable, binary "
          "build/portable/lexp; or the default 'release' build on this machine.\n",
          stderr);
  }
  fflush(stderr);
  _exit(2);
}
#endif
