// Typed errors. Library code throws; only main() turns an error into an exit code.
//   InputError      -> exit 2 (bad YAML, malformed graph, unsupported op, bad flag)
//   CheckFailed     -> exit 1 (a functional comparison exceeded its tolerance)
//   SimulationStuck -> exit 3 (deadlock / watchdog)
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace lpu {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CheckFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SimulationStuck : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Internal invariant violated: a bug in the workbench, not in the user's input.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Concatenate any streamable values into a string: strcat("node ", name, " has ", n).
template <typename... Args>
std::string strcat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

#define LPU_CHECK(cond, ...)                                                  \
  do {                                                                        \
    if (!(cond))                                                              \
      throw ::lpu::InternalError(::lpu::strcat(__FILE__, ":", __LINE__, ": ", \
                                               "check failed: " #cond " ",    \
                                               __VA_ARGS__));                 \
  } while (0)

}  // namespace lpu
