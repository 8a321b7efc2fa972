// The code that GCC 12.2 miscompiled at -O2/-O3 -march=x86-64-v4, kept in a translation unit of
// its own (tests/nn/toolchain_test.cc calls it): the fault depends on what else the unit holds.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

struct ToolchainProbeRow {
  std::string label;
  int seed = 1;
  std::string state = "completed";
  std::vector<int64_t> length;
  std::vector<double> value;
  int samples = 100;
  int train_max_length = 16;
  std::vector<int> history = {};
  std::vector<double> step_flops = {};
  std::vector<double> js = {};
  std::string weights_from = "", init_from = "";
  std::map<std::string, std::vector<double>> shares = {};
};

std::vector<ToolchainProbeRow> toolchain_probe_kept;

__attribute__((noinline)) void ToolchainProbeKeep(const ToolchainProbeRow& r) {
  toolchain_probe_kept.push_back(r);
}

// Rows of planted values: {2, 1, 1, 10} for labels with "loss", {1, 1, 1, 0} for the others.
__attribute__((noinline)) void ToolchainProbeFill(int n, const std::map<std::string, double>& limit) {
  int index = 0;
  for (const auto& [label, at_limit] : limit) {
    ++index;
    const bool loss = label.find("loss") != std::string::npos;
    for (int seed = 1; seed <= 3; ++seed) {
      ToolchainProbeRow r;
      r.label = label;
      r.seed = seed;
      r.train_max_length = n;
      const auto at = static_cast<int64_t>(at_limit) + (seed - 2) * std::min(index, 3);
      r.length = {1, n, at, at + 1};
      if (loss) r.value = {2.0, 1.0, 1.0, 10.0}; else r.value = {1.0, 1.0, 1.0, 0.0};
      ToolchainProbeKeep(r);
    }
  }
}

// The planted fourth value of every row filled, in order.
std::vector<double> ToolchainProbeLastValues(int n, const std::map<std::string, double>& limit) {
  toolchain_probe_kept.clear();
  ToolchainProbeFill(n, limit);
  std::vector<double> out;
  for (const auto& r : toolchain_probe_kept) out.push_back(r.value.at(3));
  return out;
}
