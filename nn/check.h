// Always-on checks and the one exception type of lexp. Library code throws lexp::Error; only `main`
// catches, records the status and prints. LEXP_DCHECK guards hot-loop invariants in debug builds only.
#pragma once

#include <stdexcept>
#include <string>

namespace lexp {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad user input (recipe, options, files): the message names the key, the file and what is allowed,
// and carries no source location because it is addressed to the user, not to a developer.
class InputError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] inline void FailInput(const std::string& msg) { throw InputError(msg); }

[[noreturn]] inline void Fail(const char* file, int line, const std::string& msg) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + msg);
}

}  // namespace lexp

#define LEXP_CHECK(cond, msg)                                        \
  do {                                                               \
    if (!(cond)) ::lexp::Fail(__FILE__, __LINE__, std::string(msg)); \
  } while (0)

#define LEXP_INPUT_CHECK(cond, msg)                       \
  do {                                                    \
    if (!(cond)) ::lexp::FailInput(std::string(msg));     \
  } while (0)

#ifdef LEXP_DEBUG_CHECKS
#define LEXP_DCHECK(cond, msg) LEXP_CHECK(cond, msg)
#else
#define LEXP_DCHECK(cond, msg) \
  do {                         \
  } while (0)
#endif
