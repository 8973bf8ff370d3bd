// Typed errors. Library code throws; only main() turns an error into an exit code.
//   InputError      -> exit 2 (bad YAML, malformed graph, unsupported op, bad flag)
//   CheckFailed     -> exit 1 (a functional comparison exceeded its tolerance)
//   SimulationStuck -> exit 3 (deadlock / watchdog)
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace lpu {

// `text` with its control bytes escaped (\x00) but newlines and tabs: an error quoting an
// input's bytes must print whole (a raw NUL cut the message short where it was printed as a C
// string) and must not drive the terminal.
inline std::string escape_control_bytes(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if ((u >= 0x20 && u != 0x7f) || c == '\n' || c == '\t') {
      out += c;
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(escape_control_bytes(what)) {}
  explicit InputError(const char* what) : InputError(std::string(what)) {}
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
