// The process's resident memory, for tests that bound what a computation adds (Linux /proc).
#pragma once

#include <fstream>
#include <string>

namespace lexp::testing {

// A field of /proc/self/status in KiB ("VmRSS:", "VmHWM:"); -1 when absent.
inline long ProcStatusKiB(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
  return -1;
}

// Resets VmHWM (the peak resident memory) to the current resident memory (Linux >= 4.0); false
// when this kernel or sandbox does not allow it (the caller skips its check).
inline bool ResetPeakResidentMemory() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  if (!clear.good()) return false;
  const long rss = ProcStatusKiB("VmRSS:");
  return rss > 0 && ProcStatusKiB("VmHWM:") <= rss + 1024;
}

}  // namespace lexp::testing
