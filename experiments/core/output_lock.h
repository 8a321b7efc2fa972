// One writer per output directory. lexp run, eval, analyze, collect, figures and reproduce hold an
// exclusive lock on <dir>/.lexp.lock while they write there (flock: the kernel releases it when the
// process ends, killed or not, so a lock is never left stale); the rows of one plan run by
// `lexp run --job` hold it shared, each also holding an exclusive lock on its own row
// (<dir>/.lexp-row<K>.lock), so that array tasks of different rows run side by side and two of one
// row do not. A writer that finds the lock held exits 2 naming the holder's pid and command. On a
// file system without flock (some network mounts) the lock is skipped, and said so.
#pragma once

#include <string>

namespace lexp {

// The command line of this process, as the holder of a lock names it to others (main sets it).
void SetLockHolderCommand(const std::string& command_line);

class OutputLock {
 public:
  enum class Mode { kExclusive, kShared };
  // Creates dir if needed. A lock this process already holds on dir is not taken again (a command
  // that writes its directory through another part of lexp that locks it too).
  OutputLock(const std::string& dir, Mode mode = Mode::kExclusive);
  // The exclusive lock of row `row` of the plan in dir (lexp run --job).
  static OutputLock Row(const std::string& dir, long row);
  OutputLock(OutputLock&& o) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();

 private:
  OutputLock(const std::string& file, const std::string& what, Mode mode);
  int fd_ = -1;
  std::string file_;
};

}  // namespace lexp
