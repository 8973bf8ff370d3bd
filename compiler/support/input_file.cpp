#include "support/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "support/error.h"

namespace lpu {

namespace {

const char* type_name(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a file";
}

std::string not_regular(mode_t mode) {
  if (S_ISDIR(mode)) return "it is a directory";
  return strcat("it is ", type_name(mode), ", not a regular file");
}

[[noreturn]] void refuse(const std::string& what, const std::string& path, const std::string& problem) {
  throw InputError(strcat(what, what.empty() ? "" : " ", path, ": cannot open: ", problem));
}

// stat(2), not open(2), first: opening a FIFO blocks until a writer comes.
std::string stat_problem(const std::string& path, bool directory_ok) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? "no such file" : std::strerror(errno);
  if (S_ISREG(st.st_mode) || (directory_ok && S_ISDIR(st.st_mode))) return "";
  return not_regular(st.st_mode);
}

}  // namespace

std::string file_type_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  return type_name(st.st_mode);
}

std::string not_a_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  return not_regular(st.st_mode);
}

std::string input_path_problem(const std::string& path, bool directory_ok) {
  if (std::string p = stat_problem(path, directory_ok); !p.empty()) return p;
  // access(2) says yes to root for a file of mode 000, as reading it would: the same answer.
  if (::access(path.c_str(), R_OK) != 0) return std::strerror(errno);
  return "";
}

std::string read_input_file(const std::string& path, const std::string& what) {
  if (std::string p = input_path_problem(path); !p.empty()) refuse(what, path, p);
  // O_NONBLOCK and fstat(2) again: a file replaced by a FIFO since the stat must not block.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) refuse(what, path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(what, path, not_regular(st.st_mode));
  }
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      refuse(what, path, std::strerror(err));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return bytes;
}

std::string read_text_input_file(const std::string& path, const std::string& what, const std::string& expected) {
  std::string bytes = read_input_file(path, what);
  if (size_t nul = bytes.find('\0'); nul != std::string::npos) {
    size_t line =
        1 + static_cast<size_t>(std::count(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(nul), '\n'));
    throw InputError(strcat(what.empty() ? "" : what + " ", path, ": binary data (a NUL byte on line ", line,
                            "), expected ", expected));
  }
  return bytes;
}

std::string describe_contents(const std::string& bytes) {
  size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "an empty file";
  size_t head = std::min<size_t>(bytes.size(), 4096);
  for (size_t i = 0; i < head; ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    if (c == 0 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r')) return "binary data";
  }
  if (bytes[first] == '{') return "a JSON object";
  if (bytes[first] == '[') return "a JSON list";
  if (bytes.compare(first, 6, "graph ") == 0) return "a graph in the text format";
  std::string start = bytes.substr(first, std::min<size_t>(bytes.find_first_of("\r\n", first), first + 24) - first);
  for (char& c : start)
    if (static_cast<unsigned char>(c) >= 0x80) c = '?';  // not echoed back as broken UTF-8
  return strcat("text starting '", start, "'");
}

}  // namespace lpu
