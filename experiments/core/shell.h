// Running a shell command from lexp (the PyTorch reference of `lexp bench --compare`, sbatch for
// `lexp slurm`), and quoting a word for it.
#pragma once

#include <string>

namespace lexp {

// 'text' for the shell, whatever it holds (single quotes, ' written as '\'').
std::string ShellQuote(const std::string& s);

struct ShellResult {
  bool ran = false;    // false: the shell could not be started or waited for
  int exit_code = -1;  // the command's exit status (128 + signal when a signal ended it)
  std::string output;  // its standard output (add 2>&1 to the command for its errors too)
};
// Runs `command` through /bin/sh and waits for it.
ShellResult RunShell(const std::string& command);

}  // namespace lexp
