// lexp bench [--compare] [--gemm]: throughput of training steps and evaluation passes, against
// PyTorch with --compare; or the matrix products of the layers, per backend (--gemm).
#include "experiments/bench/bench.h"

#include "experiments/bench/gemm_bench.h"
#include "experiments/commands/command.h"

namespace lexp::cli {
namespace {

class BenchCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* bench = app.add_subcommand(
        "bench", "time training steps and evaluation passes against the PyTorch reference");
    configs_ = bench
                   ->add_option("--config", o_.configs,
                                "configurations: T S E512 E2048 (the default set) and E8192 (S "
                                "evaluated on 8192 tokens: evaluation memory)")
                   ->delimiter(',');
    bench->add_option("--pos", o_.positions, "encodings: rope alibi")->delimiter(',');
    bench->add_option("--steps", o_.steps,
                      "timed steps per measurement (0 = 20 for T, 10 for S, 5 for E*)");
    bench->add_option("--warmup", o_.warmup, "untimed steps before each measurement");
    bench->add_option("--rounds", o_.rounds, "alternations of lexp and the reference (--compare)");
    bench->add_flag("--compare", o_.compare,
                    "also run the PyTorch reference (needs Debian's python3-torch), alternating");
    bench->add_option("--precision", o_.precision,
                      "fp32, or bf16: lexp's model.precision = \"bf16\" timed beside its fp32 "
                      "in every round (the ratio printed), and with --compare PyTorch under bf16 "
                      "autocast")
        ->check(CLI::IsMember({"fp32", "bf16"}));
    bench->add_option("--python", o_.python, "python interpreter for --compare");
    bench->add_option("--out", o_.out_file,
                      "HDF5 results file (default data/bench/bench-<time>.h5)");
    bench->add_flag("--gemm", gemm_,
                    "instead: GFLOP/s, one thread, of every matrix-product shape of the layers of "
                    "--config (default T S E2048) for each GEMM backend installed (Eigen, serial "
                    "OpenBLAS, serial BLIS, libxsmm) and lexp's choice, beside a 2048^3 sgemm");
    return bench;
  }
  int Run(Shared& shared) override {
    if (gemm_) {
      GemmBenchOptions go;
      if (configs_->count() > 0) go.configs = o_.configs;
      go.out_file = o_.out_file;
      go.print = PrintLine;
      RunGemmBench(go);
      return 0;
    }
    o_.threads = shared.threads;
    o_.print = PrintLine;
    RunBench(o_);
    return 0;
  }

 private:
  BenchOptions o_;
  CLI::Option* configs_ = nullptr;
  bool gemm_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeBenchCommand() { return std::make_unique<BenchCommand>(); }

}  // namespace lexp::cli
