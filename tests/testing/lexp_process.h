// Runs the lexp binary as a user does, capturing its exit code and both streams: the command-line
// tests (the CLI fuzz table, the corruption fuzz) share it. Safe to call from several threads at
// once (each call has its own capture files).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace lexp::testing {

inline const std::string kLexpBinary = std::string(LEXP_BINARY_DIR) + "/lexp";

struct LexpResult {
  int code = -1;
  std::string out, err;
};

inline std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs lexp in `cwd` with `args` (and `env` assignments before it), capturing both streams.
inline LexpResult RunLexp(const std::filesystem::path& cwd, const std::vector<std::string>& args,
                          const std::string& env = "") {
  static std::atomic<long> calls{0};
  const std::string tag = std::to_string(getpid()) + "_" + std::to_string(calls++);
  std::string cmd = "cd " + ShellQuote(cwd.string()) + " && " + env + " " + ShellQuote(kLexpBinary);
  for (const auto& a : args) {
    cmd += ' ';
    cmd += ShellQuote(a);
  }
  const auto tmp = std::filesystem::temp_directory_path();
  const auto out = tmp / ("lexp_cli_out_" + tag), err = tmp / ("lexp_cli_err_" + tag);
  cmd += " > " + ShellQuote(out.string()) + " 2> " + ShellQuote(err.string());
  const int status = std::system(cmd.c_str());
  LexpResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = Slurp(out);
  r.err = Slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

}  // namespace lexp::testing
