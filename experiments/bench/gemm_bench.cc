#include "experiments/bench/gemm_bench.h"

#include <dlfcn.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>

#include "experiments/core/build_info.h"
#include "experiments/core/provenance.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/ops/amx_bf16.h"
#include "nn/ops/gemm.h"
#include "nn/ops/linear.h"
#include "nn/precision.h"
#include "nn/rng.h"
#include "nn/tensor.h"

#ifdef LEXP_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

namespace lexp {
namespace {

struct ModelDims {
  int C, H, F, B, T;
  bool train;
};

ModelDims DimsOf(const std::string& config) {
  if (config == "T") return {64, 4, 256, 64, 64, true};
  if (config == "S") return {256, 8, 1024, 32, 128, true};
  if (config == "E512") return {256, 8, 1024, 16, 512, false};
  if (config == "E2048") return {256, 8, 1024, 4, 2048, false};
  throw InputError("lexp bench --gemm: unknown config '" + config +
                   "'; configs: T, S, E512, E2048");
}

// ---- backends: each computes C[m,n] (+)= op(A) op(B) on row-major buffers ----

struct Operands {
  const float* a;
  const float* b;
  float* c;
  long lda, ldb, ldc;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string Name() const = 0;
  // False when the backend has no kernel for this shape (it is then reported as n/a).
  virtual bool Prepare(const GemmShape&, const Operands&) { return true; }
  virtual void Run(const GemmShape& s, const Operands& o) = 0;
  // bf16 backends are timed beside the fp32 ones, not ranked with them, and checked to bf16's
  // rounding instead of fp32's.
  virtual bool Bf16() const { return false; }
};

class EigenBackend : public Backend {
 public:
  std::string Name() const override { return "eigen"; }
  void Run(const GemmShape& s, const Operands& o) override {
    EigenGemm<float>(s.trans_a, s.trans_b, s.m, s.n, s.k, o.a, o.lda, o.b, o.ldb, s.accumulate, o.c,
                     o.ldc);
  }
};

// The product lexp ships (nn/ops/gemm.h), whatever it dispatches to.
class LexpBackend : public Backend {
 public:
  std::string Name() const override { return "lexp"; }
  void Run(const GemmShape& s, const Operands& o) override {
    Gemm<float>(s.trans_a, s.trans_b, s.m, s.n, s.k, o.a, o.lda, o.b, o.ldb, s.accumulate, o.c,
                o.ldc);
  }
};

// lexp's bf16 product (model.precision = "bf16"), both operands converted at every call as for a
// layer's activations: on AMX tiles, with libxsmm's AVX512_BF16 kernels (AMX switched off), or
// emulated (fp32 products of bf16-rounded operands).
class LexpBf16Backend : public Backend {
 public:
  enum class Kernel { kAmx, kAvx512Bf16, kEmulated };
  explicit LexpBf16Backend(Kernel kernel) : kernel_(kernel) {}
  std::string Name() const override {
    return kernel_ == Kernel::kAmx          ? "bf16 amx"
           : kernel_ == Kernel::kAvx512Bf16 ? "bf16 avx512_bf16"
                                            : "bf16 emulated";
  }
  bool Bf16() const override { return true; }
  // n/a when the kernel named did not compute the product (libxsmm has no kernel for the shape:
  // emulated).
  bool Prepare(const GemmShape& s, const Operands& o) override {
    const long amx_before = AmxBf16Products(), native_before = NativeBf16Products();
    Run(s, o);
    const bool amx = AmxBf16Products() > amx_before, native = NativeBf16Products() > native_before;
    return kernel_ == Kernel::kAmx          ? amx
           : kernel_ == Kernel::kAvx512Bf16 ? native && !amx
                                            : !native;
  }
  void Run(const GemmShape& s, const Operands& o) override {
    ForceAmxOff(kernel_ != Kernel::kAmx);
    ForceBf16Emulation(kernel_ == Kernel::kEmulated);
    PrecisionPolicy policy;
    policy.matmul = Precision::kBf16;
    const PrecisionScope scope(policy);
    Gemm<float>(s.trans_a, s.trans_b, s.m, s.n, s.k, o.a, o.lda, o.b, o.ldb, s.accumulate, o.c,
                o.ldc);
    ForceAmxOff(false);
    ForceBf16Emulation(false);
  }

 private:
  Kernel kernel_;
};

// A shared library opened privately (RTLD_DEEPBIND: its own BLAS symbols, not another's).
class Library {
 public:
  explicit Library(const char* path) : h_(dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)) {}
  ~Library() {
    if (h_ != nullptr) dlclose(h_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* Symbol(const char* name) const { return h_ == nullptr ? nullptr : dlsym(h_, name); }

 private:
  void* h_;
};

// Debian's single-threaded OpenBLAS, through its CBLAS interface.
class OpenBlasBackend : public Backend {
 public:
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
  static std::unique_ptr<Backend> Open() {
    auto b = std::unique_ptr<OpenBlasBackend>(new OpenBlasBackend());
    if (b->sgemm_ == nullptr) return nullptr;
    return b;
  }
  std::string Name() const override { return "openblas-serial"; }
  void Run(const GemmShape& s, const Operands& o) override {
    constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
    sgemm_(kRowMajor, s.trans_a ? kTrans : kNoTrans, s.trans_b ? kTrans : kNoTrans, s.m, s.n, s.k,
           1.0f, o.a, static_cast<int>(o.lda), o.b, static_cast<int>(o.ldb),
           s.accumulate ? 1.0f : 0.0f, o.c, static_cast<int>(o.ldc));
  }

 private:
  OpenBlasBackend()
      : lib_("/usr/lib/x86_64-linux-gnu/openblas-serial/libopenblas.so.0"),
        sgemm_(reinterpret_cast<Sgemm>(lib_.Symbol("cblas_sgemm"))) {}
  Library lib_;
  Sgemm sgemm_;
};

// Debian's single-threaded BLIS, through its typed API with general strides (a transpose is a
// swap of the row and column strides).
class BlisBackend : public Backend {
 public:
  using Sgemm = void (*)(int, int, int64_t, int64_t, int64_t, const float*, const float*, int64_t,
                         int64_t, const float*, int64_t, int64_t, const float*, float*, int64_t,
                         int64_t);
  static std::unique_ptr<Backend> Open() {
    auto b = std::unique_ptr<BlisBackend>(new BlisBackend());
    if (b->sgemm_ == nullptr) return nullptr;
    return b;
  }
  std::string Name() const override { return "blis-serial"; }
  void Run(const GemmShape& s, const Operands& o) override {
    const float one = 1, beta = s.accumulate ? 1.0f : 0.0f;
    const int64_t rsa = s.trans_a ? 1 : o.lda, csa = s.trans_a ? o.lda : 1;
    const int64_t rsb = s.trans_b ? 1 : o.ldb, csb = s.trans_b ? o.ldb : 1;
    sgemm_(0, 0, s.m, s.n, s.k, &one, o.a, rsa, csa, o.b, rsb, csb, &beta, o.c, o.ldc, 1);
  }

 private:
  BlisBackend()
      : lib_("/usr/lib/x86_64-linux-gnu/blis-serial/libblis.so.4"),
        sgemm_(reinterpret_cast<Sgemm>(lib_.Symbol("bli_sgemm"))) {}
  Library lib_;
  Sgemm sgemm_;
};

#ifdef LEXP_HAVE_LIBXSMM
// libxsmm's JIT kernels for small products. libxsmm is column-major: the row-major product
// C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so A and B swap places.
class LibxsmmBackend : public Backend {
 public:
  LibxsmmBackend() { InitGemmBackends(); }  // the target instruction set lexp's own calls use
  std::string Name() const override { return "libxsmm"; }
  bool Prepare(const GemmShape& s, const Operands& o) override {
    const libxsmm_blasint lda = o.ldb, ldb = o.lda, ldc = o.ldc;
    const float alpha = 1, beta = s.accumulate ? 1.0f : 0.0f;
    const int flags = (s.trans_b ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) |
                      (s.trans_a ? LIBXSMM_GEMM_FLAG_TRANS_B : 0) |
                      (s.accumulate ? 0 : LIBXSMM_GEMM_FLAG_BETA_0);
    kernel_ = libxsmm_smmdispatch(s.n, s.m, s.k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
    return kernel_ != nullptr;
  }
  void Run(const GemmShape&, const Operands& o) override { kernel_(o.b, o.a, o.c); }

 private:
  libxsmm_smmfunction kernel_ = nullptr;
};
#endif

std::vector<std::unique_ptr<Backend>> OpenBackends() {
  std::vector<std::unique_ptr<Backend>> v;
  v.push_back(std::make_unique<EigenBackend>());
  if (auto b = OpenBlasBackend::Open()) v.push_back(std::move(b));
  if (auto b = BlisBackend::Open()) v.push_back(std::move(b));
#ifdef LEXP_HAVE_LIBXSMM
  v.push_back(std::make_unique<LibxsmmBackend>());
#endif
  v.push_back(std::make_unique<LexpBackend>());
  // bf16: each kernel this CPU has (AVX512_BF16 is there whenever AMX is), and the emulation.
  if (AmxBf16Usable())
    v.push_back(std::make_unique<LexpBf16Backend>(LexpBf16Backend::Kernel::kAmx));
  ForceAmxOff(true);
  const bool avx512_bf16 = Bf16IsNative();
  ForceAmxOff(false);
  if (avx512_bf16)
    v.push_back(std::make_unique<LexpBf16Backend>(LexpBf16Backend::Kernel::kAvx512Bf16));
  v.push_back(std::make_unique<LexpBf16Backend>(LexpBf16Backend::Kernel::kEmulated));
  return v;
}

struct Buffers {
  MatF a, b, c, c_ref;
  Operands Ops() {
    return {a.data(),
            b.data(),
            c.data(),
            static_cast<long>(a.cols()),
            static_cast<long>(b.cols()),
            static_cast<long>(c.cols())};
  }
};

Buffers MakeBuffers(const GemmShape& s) {
  Rng rng(7);
  Buffers x;
  x.a.resize(s.trans_a ? s.k : s.m, s.trans_a ? s.m : s.k);
  x.b.resize(s.trans_b ? s.n : s.k, s.trans_b ? s.k : s.n);
  x.c.resize(s.m, s.n);
  for (long i = 0; i < x.a.size(); ++i) x.a.data()[i] = static_cast<float>(rng.Normal());
  for (long i = 0; i < x.b.size(); ++i) x.b.data()[i] = static_cast<float>(rng.Normal());
  return x;
}

// Best GFLOP/s over repetitions of about seconds/5 each; checks the result against Eigen's.
double TimeBackend(Backend& be, const GemmShape& s, Buffers& x, double seconds) {
  const Operands o = x.Ops();
  if (!be.Prepare(s, o)) return 0;
  x.c.setZero();
  be.Run(s, o);
  if (!s.accumulate) {
    // N(0, 1) operands: fp32's error grows as 2^-24 k at worst, bf16's as its unit roundoff 2^-8
    // times the sum's typical size sqrt(k), each with ample margin.
    const double err = (x.c - x.c_ref).cwiseAbs().maxCoeff();
    const double tolerance = be.Bf16() ? 0.03 * std::sqrt(static_cast<double>(s.k)) * 4
                                       : 1e-3 * std::sqrt(static_cast<double>(s.k)) * 4;
    LEXP_CHECK(err <= tolerance,
               fmt::format("gemm bench: backend {} is wrong on {}x{}x{} (max error {})", be.Name(),
                           s.m, s.n, s.k, err));
  }
  const double flops = 2.0 * s.m * s.n * s.k;
  using Clock = std::chrono::steady_clock;
  long reps = 1;
  for (;;) {  // calibrate: repetitions of one timed block
    const auto t0 = Clock::now();
    for (long r = 0; r < reps; ++r) be.Run(s, o);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (dt > seconds / 10 || reps > (1L << 24)) break;
    reps *= 2;
  }
  double best = 0;
  for (int block = 0; block < 5; ++block) {
    const auto t0 = Clock::now();
    for (long r = 0; r < reps; ++r) be.Run(s, o);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, flops * reps / dt / 1e9);
  }
  return best;
}

}  // namespace

std::vector<GemmShape> LayerGemmShapes(const std::string& config) {
  const ModelDims d = DimsOf(config);
  const int N = d.B * d.T, D = d.C / d.H, rows = std::min(N, 512);
  std::vector<GemmShape> v;
  auto linear = [&](const std::string& name, int in, int out) {
    v.push_back({config, name + " forward", rows, out, in, false, false, false});
    if (!d.train) return;
    // As LinearBackward runs them: d_x against W^T copied (NN), d_W per row group and column chunk.
    v.push_back({config, name + " d_x", rows, in, out, false, false, false});
    v.push_back({config, name + " d_W", in,
                 static_cast<int>(std::min<long>(out, kWeightGradColGrain)),
                 static_cast<int>(std::min<long>(N, kWeightGradRowGroup)), true, false, true});
  };
  linear("attn.qkv", d.C, 3 * d.C);
  linear("attn.proj", d.C, d.C);
  linear("mlp.fc1", d.C, d.F);
  linear("mlp.fc2", d.F, d.C);
  linear("head", d.C, 32);
  // Attention, one (sequence, head) task, a block of 64 queries against its keys (the longest
  // causal block when training, a streamed block of 256 keys in evaluation).
  const int keys = d.train ? d.T : 256;
  v.push_back({config, "attn logits q.k", 64, keys, D, false, true, false});
  v.push_back({config, "attn p.v", 64, D, keys, false, false, !d.train});
  if (d.train) {
    v.push_back({config, "attn d_p = d_o.v", 64, keys, D, false, true, false});
    v.push_back({config, "attn d_v += p'.d_o", keys, D, 64, true, false, true});
    v.push_back({config, "attn d_q += d_a.k", 64, D, keys, false, false, true});
    v.push_back({config, "attn d_k += d_a'.q", keys, D, 64, true, false, true});
  }
  return v;
}

std::vector<GemmBenchPoint> RunGemmBench(const GemmBenchOptions& opt) {
  auto print = [&](const std::string& s) {
    if (opt.print) opt.print(s);
  };
  print("lexp bench --gemm: one thread; GFLOP/s = 2mnk / time, best of 5 timed blocks");
  print(fmt::format("machine: {}, {}; build: {} ({}); lexp's products: {} (libxsmm kernels: {}); "
                    "bf16: {}",
                    CpuModel(), CpuInstructionSets(), kBuildFlavour, kCompileFlags,
                    GemmBackendName(), GemmJitTarget(), Bf16BackendName()));
  auto backends = OpenBackends();
  std::vector<GemmShape> shapes;
  for (const auto& c : opt.configs) {
    auto s = LayerGemmShapes(c);
    shapes.insert(shapes.end(), s.begin(), s.end());
  }
  const GemmShape peak{"peak", "sgemm 2048^3", 2048, 2048, 2048, false, false, false};
  if (opt.peak) shapes.insert(shapes.begin(), peak);
  std::string header =
      fmt::format("{:<6} {:<22} {:>16} {:>3}", "config", "site", "m x n x k", "op");
  for (const auto& b : backends) header += fmt::format(" {:>16}", b->Name());
  print(header);
  std::vector<GemmBenchPoint> points;
  for (const GemmShape& s : shapes) {
    Buffers x = MakeBuffers(s);
    EigenBackend reference;
    x.c.setZero();
    reference.Run(s, x.Ops());
    x.c_ref = x.c;
    std::string line = fmt::format("{:<6} {:<22} {:>16} {}{}{}", s.config, s.site,
                                   fmt::format("{}x{}x{}", s.m, s.n, s.k), s.trans_a ? 'T' : 'N',
                                   s.trans_b ? 'T' : 'N', s.accumulate ? '+' : ' ');
    double best = 0;
    std::string best_name;
    for (auto& b : backends) {
      const double g = TimeBackend(*b, s, x, opt.seconds_per_point);
      points.push_back({s, b->Name(), g});
      line += g > 0 ? fmt::format(" {:>16.1f}", g) : fmt::format(" {:>16}", "n/a");
      if (g > best && !b->Bf16() && b->Name() != "lexp") {
        best = g;
        best_name = b->Name();
      }
    }
    print(line + "   best: " + best_name);
  }
  const std::string out =
      opt.out_file.empty() ? "data/bench/gemm-" + UtcNow() + ".h5" : opt.out_file;
  h5::Writer w(out);
  WriteProvenance(w.root(), 1);
  std::string labels;
  std::vector<double> gf, mnk;
  for (const auto& p : points) {
    labels +=
        fmt::format("{}/{}/{}{}{}/{}\n", p.shape.config, p.shape.site, p.shape.trans_a ? 'T' : 'N',
                    p.shape.trans_b ? 'T' : 'N', p.shape.accumulate ? "+" : "", p.backend);
    gf.push_back(p.gflops);
    mnk.push_back(p.shape.m);
    mnk.push_back(p.shape.n);
    mnk.push_back(p.shape.k);
  }
  const uint64_t n = points.size();
  w.root().WriteString("measurement", labels);
  w.root().WriteDoubles("gflops", gf, {n}, "measurement", "GFLOP/s, one thread (0 = no kernel)");
  w.root().WriteDoubles("mnk", mnk, {n, 3}, "measurement,dim", "m, n, k of C[m,n] = A[m,k] B[k,n]");
  w.Commit();
  print("results: " + out);
  return points;
}

}  // namespace lexp
