#include "experiments/core/memory_estimate.h"

#include <fmt/core.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"

namespace lexp {
namespace {

constexpr double kFloat = 4;        // bytes per stored value (every buffer of the model is float)
constexpr double kMargin = 1.15;    // allocator slack, per-thread scratch, small tables
constexpr double kBaseline = 64e6;  // libraries, code, HDF5 buffers

// A "key: value kB" line of a /proc file, in bytes (NaN when absent).
double ProcKilobytes(const std::string& file, const std::string& key) {
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream s(line.substr(key.size() + 1));
      double kb = 0;
      s >> kb;
      return kb * 1024;
    }
  return std::numeric_limits<double>::quiet_NaN();
}

double FileNumber(const std::string& file) {
  std::ifstream f(file);
  std::string word;
  if (!(f >> word) || word == "max") return std::numeric_limits<double>::infinity();
  try {
    return std::stod(word);
  } catch (const std::exception&) {
    return std::numeric_limits<double>::infinity();
  }
}

// A "key value" line of a cgroup stat file, in bytes (NaN when absent).
double StatBytes(const std::string& file, const std::string& key) {
  std::ifstream f(file);
  std::string k;
  double v = 0;
  while (f >> k >> v)
    if (k == key) return v;
  return std::numeric_limits<double>::quiet_NaN();
}

std::string GiB(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024)); }

}  // namespace

double AvailableMemoryBytes() {
  double avail = std::numeric_limits<double>::infinity();
  const double meminfo = ProcKilobytes("/proc/meminfo", "MemAvailable");
  if (meminfo == meminfo) avail = std::min(avail, meminfo);
  rlimit lim{};
  if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    const double used = ProcKilobytes("/proc/self/status", "VmSize");
    avail = std::min(avail, static_cast<double>(lim.rlim_cur) - (used == used ? used : 0));
  }
  const double cg_max = FileNumber("/sys/fs/cgroup/memory.max");
  if (cg_max < std::numeric_limits<double>::infinity()) {
    // memory.current counts page cache too; its inactive part is given back on demand.
    double current = FileNumber("/sys/fs/cgroup/memory.current");
    if (!(current < std::numeric_limits<double>::infinity())) current = 0;
    const double inactive = StatBytes("/sys/fs/cgroup/memory.stat", "inactive_file");
    avail =
        std::min(avail, cg_max - std::max(0.0, current - (inactive == inactive ? inactive : 0)));
  }
  return avail;
}

MemoryNeed EstimatePeakMemory(const RecipeConfig& c) {
  const auto task = CreateTask(c.task, c.TaskOpts());
  const SequenceLayout layout(*task, c.layout == "encoder" ? Layout::kEncoder : Layout::kDecoder);
  // A side network's blocks (model.longmem_layers) are blocks too.
  const double C = c.model.d_model, H = c.model.n_heads, L = c.model.n_layers + c.model.side.layers,
               V = layout.Vocab();
  const double F = c.model.d_ff > 0 ? c.model.d_ff : 4 * C;
  // Values kept per token row in a forward pass: per layer its cache (LayerNorm inputs and outputs,
  // q|k|v before and after site 3, attention output, residual, MLP in, GELU output and slope,
  // scratch), the residual streams, the final norm and the logits.
  // A memory layer (model.knn_layer) keeps per row and head its retrieved rows and weights, and
  // its output and local branch [C] twice.
  const bool memory = c.model.knn.Active() || c.model.side.memory_layer >= 0;
  const double knn = memory ? 2 * H * c.model.knn.top_k + 4 * C + 3 * C : 0;  // + a side's bank
  const double per_row = L * (13 * C + 2 * F) + (L + 1) * C + 2 * C + V + knn;
  // Landmark attention adds a row after every landmark_block tokens.
  const int landmark = c.model.landmark_block;
  auto tokens = [&](int n) {
    const double t = layout.SequenceLengthFor(n);
    return landmark > 0 ? t + std::floor(t / landmark) : t;
  };

  std::vector<MemoryNeed> phases;
  // Kept from training to the end of the run: parameters and gradients (float), AdamW's moments
  // (double), the attention probabilities of the last training batch and the backward buffers.
  const double params = V * C + L * (4 * C * C + 2 * C * F + 9 * C + F) + C * V + 3 * C + V;
  double kept = params * (2 + 4);  // in floats: value, gradient, two double moments
  {
    const double T = tokens(c.train_max_length), B = c.batch_size, N = B * T;
    // The fused backward keeps each linear layer's weight-gradient partials (one per 1024-row
    // group after the first) and d_x_mid at once.
    const double partials = std::max(0.0, std::ceil(N / 1024) - 1) * (4 * C * C + 2 * C * F);
    const double step_buffers = L * B * H * T * T + N * (12 * C + 2 * F + V) + partials;
    kept += step_buffers;
    phases.push_back({(kept + N * per_row) * kFloat,
                      fmt::format("a training step (train.batch_size = {} sequences of {} tokens)",
                                  c.batch_size, static_cast<long>(T))});
  }
  int longest = c.train_max_length;
  const bool greedy = c.DecodingFor(*task) == Decoding::kGreedy;
  for (int n : c.EvalLengths()) {
    longest = std::max(longest, n);
    const double T = tokens(n), B = std::min(c.eval_batch_size, c.eval_samples);
    // Greedy decoding keeps every layer's keys and values of its longest sequences, and queries,
    // transformed keys and outputs in that layout.
    const double decode =
        greedy ? (2 * L + 3) * B * static_cast<double>(layout.GreedyCapacityFor(n)) * C : 0;
    phases.push_back({(kept + B * T * per_row + decode) * kFloat,
                      fmt::format("evaluation at length {} (eval.batch_size = {} sequences of {} "
                                  "tokens)",
                                  n, static_cast<long>(B), static_cast<long>(T))});
  }
  double stored = 0;  // the probe keeps every length's stored maps until the run file is written
  for (int n : c.ProbeLengths()) {
    longest = std::max(longest, n);
    const double T = tokens(n), B = c.probe_samples;
    const double keep = 2 * std::min<double>(c.probe_stored_samples, B) * L * H * T * T;
    stored += keep;
    const double floats = kept + B * T * per_row + 2 * L * B * H * T * T + stored;
    phases.push_back(
        {floats * kFloat,
         fmt::format("the attention probe at length {} (probe.samples = {} sequences of {} tokens, "
                     "{} layers x {} heads of {} x {} logits and probabilities)",
                     n, c.probe_samples, static_cast<long>(T), c.model.n_layers, c.model.n_heads,
                     static_cast<long>(T), static_cast<long>(T))});
  }
  if (c.Analyses().AnyReplay()) {
    const double T = tokens(longest);
    // The four entropy variants replay in parallel, one per thread (experiments/replay/
    // entropy_variants.cc): counted as four, the most any thread count runs at once.
    phases.push_back({(kept + 4 * (T * per_row + 2 * L * H * T * T)) * kFloat,
                      fmt::format("the end-of-training analyses, which replay one sequence at a "
                                  "time with its attention kept (the four entropy variants in "
                                  "parallel, counted as four at once), up to "
                                  "length {} ({} tokens; "
                                  "probe.replay = 0 or probe.analyses = [\"geometry\"] leaves them to lexp analyze)",
                                  longest, static_cast<long>(T))});
  }
  MemoryNeed peak = *std::max_element(
      phases.begin(), phases.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  peak.bytes = peak.bytes * kMargin + kBaseline;
  return peak;
}

MemoryNeed LargestModelNeed(const RecipeConfig& c) {
  MemoryNeed largest;
  for (const auto& variant : c.Variants())
    for (const auto& t : c.Tasks()) {
      RecipeConfig one = c.For(t, c.Seeds()[0]);
      if (!variant.sets.empty()) ApplyOverrides(one, variant.sets);
      MemoryNeed need = EstimatePeakMemory(one);
      if (need.bytes > largest.bytes) largest = std::move(need);
    }
  return largest;
}

namespace {

// Tests of the allocation-failure path itself switch the estimate off.
bool MemoryCheckOff() {
  const char* off = std::getenv("LEXP_MEMORY_CHECK");
  return off && std::string(off) == "off";
}

}  // namespace

int ModelsThatFitAtOnce(const RecipeConfig& c) {
  if (MemoryCheckOff()) return std::numeric_limits<int>::max();
  const double avail = AvailableMemoryBytes();
  const double n = std::floor(avail / std::max(LargestModelNeed(c).bytes, 1.0));
  if (!(n < static_cast<double>(std::numeric_limits<int>::max())))
    return std::numeric_limits<int>::max();
  return std::max(1, static_cast<int>(n));
}

void CheckMemoryFits(const RecipeConfig& c) {
  if (MemoryCheckOff()) return;
  const double avail = AvailableMemoryBytes();
  const MemoryNeed need = LargestModelNeed(c);
  // run.jobs models may be at that peak at once.
  const double bytes = need.bytes * std::max(1, c.jobs);
  LEXP_INPUT_CHECK(bytes <= avail,
                   fmt::format("recipe '{}' needs about {} for {}{}, but about {} are "
                               "available (the least of free memory, ulimit -v and the cgroup "
                               "limit); ask for shorter lengths or fewer sequences{}",
                               c.source_name, GiB(bytes), need.phase,
                               c.jobs > 1 ? fmt::format(", {} models at once", c.jobs) : "",
                               GiB(avail), c.jobs > 1 ? ", or lower run.jobs" : ""));
}

}  // namespace lexp
