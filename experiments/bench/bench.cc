#include "experiments/bench/bench.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiments/core/build_info.h"
#include "experiments/core/provenance.h"
#include "experiments/core/shell.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/model/transformer.h"
#include "nn/ops/cross_entropy.h"
#include "nn/ops/gemm.h"
#include "nn/optim/adamw.h"
#include "nn/parallel.h"
#include "nn/precision.h"
#include "pe/registry.h"

#ifndef LEXP_SOURCE_DIR_FOR_BENCH
#define LEXP_SOURCE_DIR_FOR_BENCH "."
#endif

namespace lexp {
namespace {

struct BenchConfig {
  std::string name;
  int C, H, L, F, B, T;
  bool train;
  int default_steps;
};

const std::vector<BenchConfig>& Configs() {
  static const std::vector<BenchConfig> k = {
      {"T", 64, 4, 2, 256, 64, 64, true, 20},        {"S", 256, 8, 4, 1024, 32, 128, true, 10},
      {"E512", 256, 8, 4, 1024, 16, 512, false, 5},  {"E2048", 256, 8, 4, 1024, 4, 2048, false, 5},
      {"E8192", 256, 8, 4, 1024, 1, 8192, false, 2},  // S at 8192 tokens: evaluation memory
  };
  return k;
}

constexpr int kVocab = 32;

double Flops(const BenchConfig& c) {
  const double n_mm = c.L * (4.0 * c.C * c.C + 2.0 * c.C * c.F) + c.C * kVocab;
  const double fwd =
      2.0 * n_mm * c.B * c.T + 4.0 * c.L * c.B * static_cast<double>(c.T) * c.T * c.C;
  return c.train ? 3 * fwd : fwd;
}

// Resets and reads the peak resident set of this process (Linux: clear_refs 5 resets VmHWM).
void ResetPeakRss() {
  std::ofstream f("/proc/self/clear_refs");
  if (f) f << "5";
}
double PeakRssMib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return -1;
}

BenchResult Summarise(const BenchConfig& c, const std::string& pos, std::vector<double> t) {
  std::sort(t.begin(), t.end());
  BenchResult r;
  r.config = c.name;
  r.pos = pos;
  r.impl = "lexp";
  r.B = c.B;
  r.T = c.T;
  r.steps = static_cast<int>(t.size());
  r.median_s = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  r.min_s = t.front();
  r.max_s = t.back();
  r.tokens_per_s = c.B * c.T / r.median_s;
  r.gflops = Flops(c) / r.median_s / 1e9;
  return r;
}

BenchResult TimeLexp(const BenchConfig& c, const std::string& pos, int steps, int warmup,
                     Precision precision) {
  ResetPeakRss();
  ModelConfig mc;
  mc.precision = {precision, precision, precision};
  mc.vocab = kVocab;
  mc.d_model = c.C;
  mc.n_heads = c.H;
  mc.n_layers = c.L;
  mc.d_ff = c.F;
  EncodingShape es{c.C, c.H, c.L, true, c.T};
  auto enc = CreateEncoding<float>(pos, {}, es);
  Transformer<float> model(mc, enc.get());
  Rng rng(0);
  model.Init(rng);
  auto params = model.Parameters();
  AdamWConfig ac;
  ac.lr = 1e-3;
  ac.weight_decay = 0.01;
  ac.clip_norm = 0;
  ac.warmup_steps = 0;
  AdamW<float> adam(ac);
  if (c.train) adam.Attach(params);  // evaluation holds no optimizer state
  Rng data(1);
  std::vector<int> tokens(static_cast<size_t>(c.B) * c.T), targets(tokens.size());
  std::vector<uint8_t> mask(tokens.size(), 1);
  std::vector<double> positions(c.T);
  for (int t = 0; t < c.T; ++t) positions[t] = t;
  MatF logits, d_logits;
  std::vector<double> times;
  for (int s = 0; s < warmup + steps; ++s) {
    for (size_t i = 0; i < tokens.size(); ++i) {  // fresh random batch, outside the timed region
      tokens[i] = static_cast<int>(data.UniformInt(0, kVocab - 1));
      targets[i] = static_cast<int>(data.UniformInt(0, kVocab - 1));
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (c.train) {
      model.ZeroGrad();
      model.Forward(tokens, c.B, c.T, positions, true, false, logits);
      CrossEntropyForwardBackward(logits, targets, mask, &d_logits, nullptr, nullptr);
      model.Backward(tokens, d_logits);
      adam.Step(params, 1e-3);
    } else {
      model.Forward(tokens, c.B, c.T, positions, false, false, logits);
    }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s >= warmup) times.push_back(dt);
  }
  BenchResult r = Summarise(c, pos, times);
  r.precision = PrecisionName(precision);
  r.peak_rss_mib = PeakRssMib();
  return r;
}

// A build without AVX-512 run on an AVX-512 machine stands for an AVX2 machine (the `avx2`
// preset); the reference is then held to AVX2 as well: oneDNN's and ATen's kernels by their
// instruction-set caps, OpenBLAS by its Haswell kernels. Empty otherwise.
std::string TorchInstructionSetLimit() {
#if defined(__x86_64__) && !defined(__AVX512F__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return "ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 "
           "OPENBLAS_CORETYPE=Haswell ";
#endif
  return "";
}

// OPENBLAS_CORETYPE as this process's environment sets it ("" when unset).
std::string InheritedOpenBlasCore() {
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  return core == nullptr ? std::string() : std::string(core);
}

double JsonNumber(const std::string& line, const std::string& key) {
  const auto p = line.find("\"" + key + "\":");
  LEXP_CHECK(p != std::string::npos, "reference output has no '" + key + "': " + line);
  return std::stod(line.substr(p + key.size() + 3));
}

// A string field of the reference's JSON line ("" when absent: an older script).
std::string JsonString(const std::string& line, const std::string& key) {
  const std::string head = "\"" + key + "\": \"";
  const auto p = line.find(head);
  if (p == std::string::npos) return "";
  const auto end = line.find('"', p + head.size());
  return end == std::string::npos ? "" : line.substr(p + head.size(), end - p - head.size());
}

BenchResult TimeTorch(const BenchOptions& opt, const BenchConfig& c, const std::string& pos,
                      int steps, int threads, const std::string& precision) {
  const std::string script =
      opt.reference_script.empty()
          ? std::string(LEXP_SOURCE_DIR_FOR_BENCH) + "/experiments/bench/reference_torch.py"
          : opt.reference_script;
  LEXP_INPUT_CHECK(std::filesystem::exists(script), "reference script not found: " + script);
  const std::string tcmalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";
  const std::string preload =
      std::filesystem::exists(tcmalloc) ? "LD_PRELOAD=" + tcmalloc + " " : std::string();
  // Without the avx2 preset's cap, an OPENBLAS_CORETYPE inherited from the environment is not
  // passed on (it may hold OpenBLAS below the CPU: a machine that sets Haswell on a Zen 5 made
  // the reference 1.2-1.55x slower); the reference then picks its best core itself.
  const std::string limit = TorchInstructionSetLimit();
  const std::string cmd = fmt::format(
      "{}OMP_WAIT_POLICY=PASSIVE {}{}{} {} --config {} --pos {} --threads {} --steps {} "
      "--warmup {} --precision {} --json - 2>&1",
      limit.empty() ? "env -u OPENBLAS_CORETYPE " : "", limit, preload, opt.python, script, c.name,
      pos, threads, steps, opt.warmup, precision);
  const ShellResult run = RunShell(cmd);
  LEXP_CHECK(run.ran, "cannot run " + cmd);
  const std::string& out = run.output;
  LEXP_INPUT_CHECK(run.exit_code == 0,
                   "PyTorch reference failed (is python3-torch installed? apt-get install "
                   "python3-torch libtcmalloc-minimal4 libopenblas0-pthread):\n" +
                       out);
  std::string line;
  std::istringstream ss(out);
  std::string last;
  while (std::getline(ss, line))
    if (line.rfind("{", 0) == 0) last = line;
  BenchResult r;
  r.config = c.name;
  r.pos = pos;
  r.impl = "torch";
  r.precision = precision;
  r.B = c.B;
  r.T = c.T;
  r.steps = steps;
  r.median_s = JsonNumber(last, "median_s");
  r.min_s = JsonNumber(last, "min_s");
  r.max_s = JsonNumber(last, "max_s");
  r.tokens_per_s = JsonNumber(last, "tokens_per_s");
  r.gflops = JsonNumber(last, "gflops");
  r.peak_rss_mib = JsonNumber(last, "peak_rss_mib");
  r.blas_core = JsonString(last, "blas_core");
  return r;
}

std::string Row(const BenchResult& r) {
  return fmt::format(
      "{:<6} {:<6} {:<6} {:<5} {:>3}x{:<5} {:>9.1f} ms  [{:>8.1f} .. {:>8.1f}]  {:>9.0f} tok/s  "
      "{:>6.1f} GFLOP/s  {:>7.0f} MiB",
      r.config, r.pos, r.impl, r.precision, r.B, r.T, r.median_s * 1e3, r.min_s * 1e3,
      r.max_s * 1e3, r.tokens_per_s, r.gflops, r.peak_rss_mib);
}

// The measurement of v with the shortest median step.
BenchResult BestMedian(const std::vector<BenchResult>& v) {
  return *std::min_element(v.begin(), v.end(),
                           [](const auto& a, const auto& b) { return a.median_s < b.median_s; });
}

}  // namespace

SpeedRatio CompareRounds(const std::vector<BenchResult>& a, const std::vector<BenchResult>& b) {
  LEXP_CHECK(!a.empty() && a.size() == b.size(),
             "bench: a ratio needs the same rounds on both sides");
  SpeedRatio r;
  r.best = BestMedian(a).tokens_per_s / BestMedian(b).tokens_per_s;
  for (size_t i = 0; i < a.size(); ++i)
    r.per_round.push_back(a[i].tokens_per_s / b[i].tokens_per_s);
  return r;
}

std::string FormatRatio(const SpeedRatio& ratio) {
  std::string s = fmt::format("{:.2f}x", ratio.best);
  if (ratio.per_round.size() < 2) return s;
  s += " (rounds";
  for (double r : ratio.per_round) s += fmt::format(" {:.2f}x", r);
  return s + ")";
}

std::vector<BenchResult> RunBench(const BenchOptions& opt) {
  LEXP_INPUT_CHECK(opt.steps >= 0, "lexp bench: --steps " + std::to_string(opt.steps) +
                                       ": allowed: 0 (each config's default) or more");
  LEXP_INPUT_CHECK(opt.warmup >= 0,
                   "lexp bench: --warmup " + std::to_string(opt.warmup) + ": allowed: 0 or more");
  LEXP_INPUT_CHECK(opt.precision == "fp32" || opt.precision == "bf16",
                   "lexp bench: --precision " + opt.precision + ": allowed: fp32, bf16");
  const bool bf16 = opt.precision == "bf16";
  LEXP_INPUT_CHECK(opt.rounds >= 1,
                   "lexp bench: --rounds " + std::to_string(opt.rounds) + ": allowed: 1 or more");
  const int threads = ThreadLimit::Active();
  auto print = [&](const std::string& s) {
    if (opt.print) opt.print(s);
  };
  print(
      fmt::format("lexp bench: {} threads; FLOPs = matmuls only: train 6*N_mm*B*T + 12*L*B*T^2*C, "
                  "eval a third",
                  threads));
  print(
      fmt::format("machine: {}, {}; build: {} ({}; compiled SIMD: {}; products: {}, libxsmm "
                  "kernels: {})",
                  CpuModel(), CpuInstructionSets(), kBuildFlavour, kCompileFlags, CompiledSimd(),
                  GemmBackendName(), GemmJitTarget()));
  if (bf16)
    print(
        fmt::format("bf16 products: {}; each round times lexp in fp32, then in bf16 "
                    "(model.precision = \"bf16\": every part){}",
                    Bf16BackendName(), opt.compare ? ", then PyTorch under bf16 autocast" : ""));
  print(fmt::format("{:<6} {:<6} {:<6} {:<5} {:>9} {:>12}  {:>22}  {:>15}  {:>14}  {:>11}",
                    "config", "pos", "impl", "prec", "BxT", "median", "[min .. max]", "tokens/s",
                    "achieved", "peak RSS"));
  if (opt.compare && !TorchInstructionSetLimit().empty())
    print(
        "this build has no AVX-512 on an AVX-512 machine: the PyTorch reference is held to AVX2 "
        "too (" +
        TorchInstructionSetLimit() + ")");
  if (opt.compare) {
    // Debian's torch takes its BLAS from the libblas.so.3 alternative; the reference netlib BLAS
    // there makes PyTorch about 12x slower, which would flatter lexp.
    std::error_code ec;
    const auto blas =
        std::filesystem::canonical("/etc/alternatives/libblas.so.3-x86_64-linux-gnu", ec);
    if (!ec && blas.string().find("openblas") == std::string::npos)
      print("warning: libblas.so.3 is " + blas.string() +
            ", not OpenBLAS; PyTorch will be far slower than at its best "
            "(apt-get install libopenblas0-pthread)");
  }
  std::vector<BenchResult> all;
  std::vector<std::string> ratios;
  for (const std::string& name : opt.configs) {
    auto it = std::find_if(Configs().begin(), Configs().end(),
                           [&](const BenchConfig& c) { return c.name == name; });
    LEXP_INPUT_CHECK(it != Configs().end(), "lexp bench: unknown config '" + name +
                                                "'; configs: T, S, E512, E2048, E8192");
    for (const std::string& pos : opt.positions) {
      LEXP_INPUT_CHECK(pos == "rope" || pos == "alibi",
                       "lexp bench: --pos takes rope or alibi, got " + pos);
      const int steps = opt.steps > 0 ? opt.steps : it->default_steps;
      std::vector<BenchResult> mine, mine_fp32, theirs;
      const int rounds = opt.compare || bf16 ? std::max(1, opt.rounds) : 1;
      for (int round = 0; round < rounds; ++round) {
        if (bf16) {
          mine_fp32.push_back(TimeLexp(*it, pos, steps, opt.warmup, Precision::kFp32));
          print(Row(mine_fp32.back()));
        }
        mine.push_back(
            TimeLexp(*it, pos, steps, opt.warmup, bf16 ? Precision::kBf16 : Precision::kFp32));
        print(Row(mine.back()));
        if (opt.compare) {
          theirs.push_back(TimeTorch(opt, *it, pos, steps, threads, opt.precision));
          if (all.empty() && theirs.size() == 1)
            print("the reference's products: OpenBLAS core " +
                  (theirs.back().blas_core.empty() ? std::string("unknown (not OpenBLAS?)")
                                                   : theirs.back().blas_core) +
                  (InheritedOpenBlasCore().empty() || !TorchInstructionSetLimit().empty()
                       ? std::string()
                       : " (this environment's OPENBLAS_CORETYPE=" + InheritedOpenBlasCore() +
                             " not passed on: the reference picks its best core)"));
          print(Row(theirs.back()));
        }
      }
      all.insert(all.end(), mine_fp32.begin(), mine_fp32.end());
      all.insert(all.end(), mine.begin(), mine.end());
      all.insert(all.end(), theirs.begin(), theirs.end());
      if (opt.compare || bf16) {
        const BenchResult a = BestMedian(mine);
        std::string line =
            fmt::format("{:<6} {:<6} lexp {:>9.0f} tok/s", it->name, pos, a.tokens_per_s);
        if (bf16) {
          const BenchResult f = BestMedian(mine_fp32);
          line += fmt::format("  lexp fp32 {:>9.0f} tok/s  bf16 / fp32 {}", f.tokens_per_s,
                              FormatRatio(CompareRounds(mine, mine_fp32)));
        }
        if (opt.compare) {
          const BenchResult b = BestMedian(theirs);
          line += fmt::format("  torch {:>9.0f} tok/s  ratio {}", b.tokens_per_s,
                              FormatRatio(CompareRounds(mine, theirs)));
        }
        ratios.push_back(line);
      }
    }
  }
  if (!ratios.empty()) {
    print(
        fmt::format("speed ratios{} (tokens/s, best median of each over the alternating rounds{}):",
                    bf16 ? fmt::format(" in {} (lexp bf16 / lexp fp32{})", opt.precision,
                                       opt.compare ? ", lexp / PyTorch autocast" : "")
                         : " lexp / PyTorch",
                    opt.rounds >= 2 ? "; in parentheses each round's own ratio" : ""));
    for (const auto& r : ratios) print("  " + r);
  }
  const std::string out =
      opt.out_file.empty() ? "data/bench/bench-" + UtcNow() + ".h5" : opt.out_file;
  h5::Writer w(out);
  WriteProvenance(w.root(), threads);
  const uint64_t n = all.size();
  std::vector<double> med, mn, mx, tps, gf, rss;
  std::string labels;
  for (const auto& r : all) {
    med.push_back(r.median_s);
    mn.push_back(r.min_s);
    mx.push_back(r.max_s);
    tps.push_back(r.tokens_per_s);
    gf.push_back(r.gflops);
    rss.push_back(r.peak_rss_mib);
    labels += r.config + "/" + r.pos + "/" + r.impl + "/" + r.precision + "\n";
  }
  w.root().WriteString("measurement", labels);
  if (opt.compare) {
    std::string cores;
    for (const auto& r : all)
      if (r.impl == "torch") cores += r.blas_core + "\n";
    w.root().WriteString("reference_blas_core", cores);
  }
  w.root().WriteDoubles("median_s", med, {n}, "measurement", "s per step");
  w.root().WriteDoubles("min_s", mn, {n}, "measurement", "s per step");
  w.root().WriteDoubles("max_s", mx, {n}, "measurement", "s per step");
  w.root().WriteDoubles("tokens_per_s", tps, {n}, "measurement", "tokens/s");
  w.root().WriteDoubles("gflops", gf, {n}, "measurement", "GFLOP/s (matmuls only)");
  w.root().WriteDoubles("peak_rss_mib", rss, {n}, "measurement", "MiB");
  w.Commit();
  print("results: " + out);
  return all;
}

}  // namespace lexp
