#include "experiments/core/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "nn/check.h"

namespace lexp {
namespace {

std::string& HolderCommand() {
  static std::string command = "lexp";
  return command;
}

// The lock files this process holds, by path: taken once per process.
std::mutex& HeldMutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& Held() {
  static std::set<std::string> held;
  return held;
}

std::string ReadHolder(int fd) {
  char buf[512];
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  buf[n] = '\0';
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

void SetLockHolderCommand(const std::string& command_line) { HolderCommand() = command_line; }

OutputLock::OutputLock(const std::string& dir, Mode mode)
    : OutputLock((std::filesystem::path(dir) / ".lexp.lock").string(), "'" + dir + "'", mode) {}

OutputLock OutputLock::Row(const std::string& dir, long row) {
  return OutputLock(
      (std::filesystem::path(dir) / (".lexp-row" + std::to_string(row) + ".lock")).string(),
      "row " + std::to_string(row) + " of the plan in '" + dir + "'", Mode::kExclusive);
}

OutputLock::OutputLock(const std::string& file, const std::string& what, Mode mode) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A lock beside a bare file name lies in the working directory, which exists.
  if (!fs::path(file).parent_path().empty()) fs::create_directories(fs::path(file).parent_path(), ec);
  LEXP_INPUT_CHECK(!ec, "cannot create the output directory '" +
                            fs::path(file).parent_path().string() + "': " + ec.message());
  const std::string key = fs::absolute(file).lexically_normal().string();
  {
    const std::lock_guard<std::mutex> hold(HeldMutex());
    if (Held().count(key)) return;  // this process holds it already
  }
  // Never through a link: a link at the lock's name is refused like any written through.
  fd_ = open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  LEXP_INPUT_CHECK(fd_ >= 0, "cannot open the lock file '" + file + "': " + std::strerror(errno));
  const int op = mode == Mode::kExclusive ? LOCK_EX : LOCK_SH;
  if (flock(fd_, op | LOCK_NB) != 0) {
    const int err = errno;
    if (err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS) {
      std::fprintf(stderr,
                   "lexp: note: %s cannot be locked on this file system (%s); two writers "
                   "there would not be stopped\n",
                   what.c_str(), std::strerror(err));
      close(fd_);
      fd_ = -1;
      return;
    }
    // Held: exclusively by a writer whose pid and command the file holds, or shared by rows.
    const bool rows = mode == Mode::kExclusive && flock(fd_, LOCK_SH | LOCK_NB) == 0;
    const std::string holder = ReadHolder(fd_);
    close(fd_);
    fd_ = -1;
    FailInput(what + " is being written by another lexp (" +
              (rows             ? std::string("rows of its plan run by lexp run --job")
               : holder.empty() ? std::string("a writer starting")
                                : holder) +
              "); wait for it to finish, or give another --out");
  }
  if (mode == Mode::kExclusive) {
    const std::string text = "pid " + std::to_string(getpid()) + ": " + HolderCommand() + "\n";
    if (ftruncate(fd_, 0) == 0) {
      const ssize_t n = pwrite(fd_, text.data(), text.size(), 0);
      (void)n;
    }
  }
  file_ = key;
  const std::lock_guard<std::mutex> hold(HeldMutex());
  Held().insert(key);
}

OutputLock::OutputLock(OutputLock&& o) noexcept : fd_(o.fd_), file_(std::move(o.file_)) {
  o.fd_ = -1;
  o.file_.clear();
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  {
    const std::lock_guard<std::mutex> hold(HeldMutex());
    Held().erase(file_);
  }
  close(fd_);  // releases the lock
}

}  // namespace lexp
