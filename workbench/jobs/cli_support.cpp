#include "jobs/cli_support.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/error.h"

namespace fs = std::filesystem;

namespace lpu {

namespace {

// Output paths are checked before any work starts: a bad one is exit 2 naming the flag, not a
// filesystem exception (exit 4) after the run, nor SystemC's VCD writer dying on SIGFPE. The
// checks create nothing (a run refused later must leave no empty file or directory behind):
// the nearest existing ancestor must be a directory we may write into.
// access(2) says yes to root everywhere, and /proc or a read-only mount refuse only when a file
// is made: so make one in `dir` (a probe, removed at once).
void probe_directory(const std::string& flag, const std::string& shown, const fs::path& dir) {
  fs::path probe = dir / strcat(".lpu-write-probe-", getpid());
  int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0)
    throw InputError(strcat(flag, " ", shown, ": cannot write into ", dir.string(), ": ", std::strerror(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_creatable(const std::string& flag, const fs::path& p) {
  std::error_code ec;
  fs::path anc = p.has_parent_path() ? p.parent_path() : fs::path(".");
  while (!anc.empty() && !fs::exists(anc, ec) && anc.has_parent_path() && anc != anc.parent_path())
    anc = anc.parent_path();
  // A relative path none of whose directories exist yet ("out/sweeps/x" in a new checkout)
  // is created below the working directory.
  if (anc.empty() || (anc.is_relative() && !fs::exists(anc, ec))) anc = ".";
  if (!fs::is_directory(anc, ec))
    throw InputError(strcat(flag, " ", p.string(), ": cannot write: ", anc.string(), " is not a directory"));
  probe_directory(flag, p.string(), anc);
}

}  // namespace

void write_file(const std::string& path, const std::string& text) {
  fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  std::ofstream f(path, std::ios::binary);  // --emit bin
  if (ec || !f) throw InputError(strcat(path, ": cannot write", ec ? ": " + ec.message() : ""));
  f << text;
}

void write_json(const std::string& path, const nlohmann::json& j) { write_file(path, j.dump(2) + "\n"); }

void check_output_file(const std::string& flag, const std::string& path) {
  if (path.empty()) return;  // not asked for (an explicitly empty path is caught at parse time)
  // "-" reads as "standard output" to a Unix user, but it would be a file named "-" here, and
  // the text report already goes to standard output.
  if (path == "-")
    throw InputError(strcat(flag,
                            " -: writing to standard output is not supported (the text report goes there); give a ",
                            "file path, or /dev/stdout to mix the two"));
  fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw InputError(strcat(flag, " ", path, ": cannot write: it is a directory"));
  if (fs::exists(p, ec)) {
    if (access(path.c_str(), W_OK) != 0)
      throw InputError(strcat(flag, " ", path, ": cannot write: ", std::strerror(errno)));
    return;
  }
  check_creatable(flag, p);
}

void check_output_dir(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    if (!fs::is_directory(path, ec)) throw InputError(strcat(flag, " ", path, ": exists and is not a directory"));
    probe_directory(flag, path, fs::path(path));
    return;
  }
  check_creatable(flag, fs::path(path));
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

BreakOptions break_options(const std::string& on_unsupported, const std::string& unsupported_ops) {
  if (on_unsupported != "error" && on_unsupported != "break")
    throw InputError("--on-unsupported: expected error or break, got '" + on_unsupported + "'");
  BreakOptions b;
  b.on_unsupported_break = on_unsupported == "break";
  for (const auto& op : split_list(unsupported_ops)) b.unsupported_ops.insert(op);
  return b;
}

}  // namespace lpu
