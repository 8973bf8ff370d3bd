// Typed errors. Library code throws; only main() turns an error into an exit code.
//   InputError      -> exit 2 (bad YAML, malformed graph, unsupported op, bad flag)
//   CheckFailed     -> exit 1 (a functional comparison exceeded its tolerance)
//   SimulationStuck -> exit 3 (deadlock / watchdog)
#pragma once
#include <charconv>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

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

namespace strcat_detail {
// The arguments strcat appends itself, with what `std::ostream <<` would write (decimal
// integers, a char as itself, C strings up to their NUL): constructing an ostringstream (its
// locale) cost about 2,000 instructions a call, and strcat builds error texts, kernel names and
// memo keys on compile paths tens of thousands of times a run. bool, the byte-sized character
// types, floating point, enums and every other type go through the stream as before.
template <typename T>
inline constexpr bool kPlainInt = std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> &&
                                  !std::is_same_v<T, signed char> && !std::is_same_v<T, unsigned char> &&
                                  !std::is_same_v<T, wchar_t> && !std::is_same_v<T, char8_t> &&
                                  !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t>;
template <typename T>
inline constexpr bool kCString = std::is_same_v<std::decay_t<T>, const char*> || std::is_same_v<std::decay_t<T>, char*>;
template <typename T>
inline constexpr bool kDirect = std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view> ||
                                std::is_same_v<T, char> || kCString<T> || kPlainInt<T>;

// A null C string sets the stream's badbit (and drops everything after it): the stream decides.
template <typename T>
bool appendable(const T& v) {
  if constexpr (std::is_pointer_v<T>)
    return v != nullptr;
  else
    return true;
}

template <typename T>
void append(std::string& s, const T& v) {
  if constexpr (kPlainInt<T>) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    s.append(buf, r.ptr);
  } else if constexpr (kCString<T>) {
    s.append(static_cast<const char*>(v));
  } else {
    s += v;
  }
}
}  // namespace strcat_detail

// Concatenate any streamable values into a string: strcat("node ", name, " has ", n).
template <typename... Args>
std::string strcat(const Args&... args) {
  if constexpr ((strcat_detail::kDirect<Args> && ...)) {
    if ((strcat_detail::appendable(args) && ...)) {
      std::string s;
      (strcat_detail::append(s, args), ...);
      return s;
    }
  }
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
