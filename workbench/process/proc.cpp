#include "process/proc.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "support/error.h"

namespace lpu {

namespace {

int open_output(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(strcat("cannot write ", path, ": ", std::strerror(errno)));
  return fd;
}

}  // namespace

pid_t spawn_child(const ChildSpec& spec) {
  if (spec.argv.empty()) throw InternalError("spawn_child: empty argv");
  // Everything the child needs is prepared before vfork: the child shares our memory until it
  // execs, so it makes only system calls (prctl, getppid, dup2, execvp, write, _exit) and
  // touches nothing of ours. vfork copies no page tables: fork of this process cost ~1.6 ms
  // of CPU per sweep point (perf: dup_mmap), about 15 % of the sweep parent's time.
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int out = spec.stdout_path.empty() ? -1 : open_output(spec.stdout_path);
  const int err = [&] {  // const: nothing set before vfork may change after it (-Wclobbered)
    try {
      return spec.stderr_path.empty() ? -1 : open_output(spec.stderr_path);
    } catch (...) {
      if (out >= 0) ::close(out);
      throw;
    }
  }();
  pid_t parent = ::getpid();
  pid_t pid = ::vfork();
  if (pid == 0) {
    if (spec.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    }
    if (out >= 0) ::dup2(out, STDOUT_FILENO);
    if (err >= 0) ::dup2(err, STDERR_FILENO);
    ::execvp(argv[0], argv.data());
    const char* msg = "cannot execute ";
    (void)!::write(STDERR_FILENO, msg, std::strlen(msg));
    (void)!::write(STDERR_FILENO, argv[0], std::strlen(argv[0]));
    (void)!::write(STDERR_FILENO, "\n", 1);
    ::_exit(127);
  }
  int fork_errno = errno;
  if (out >= 0) ::close(out);
  if (err >= 0) ::close(err);
  if (pid < 0) throw InputError(strcat("cannot start a process (vfork): ", std::strerror(fork_errno)));
  return pid;
}

ChildExit decode_wait_status(int status) {
  ChildExit e;
  if (WIFEXITED(status)) e.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  return e;
}

std::string ChildExit::describe() const {
  if (signal) return strcat("killed by signal ", signal, " (", ::strsignal(signal), ")");
  return strcat("exit ", code);
}

ChildExit run_child(const ChildSpec& spec) {
  pid_t pid = spawn_child(spec);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw InternalError(strcat("waitpid: ", std::strerror(errno)));
  }
  return decode_wait_status(status);
}

ExitWatch::~ExitWatch() {
  for (auto& [pid, fd] : fds_)
    if (fd >= 0) ::close(fd);
}

void ExitWatch::add(pid_t pid) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  fds_.emplace_back(pid, fd < 0 ? -1 : fd);
}

void ExitWatch::remove(pid_t pid) {
  auto it = std::find_if(fds_.begin(), fds_.end(), [&](const auto& e) { return e.first == pid; });
  if (it == fds_.end()) return;
  if (it->second >= 0) ::close(it->second);
  fds_.erase(it);
}

void ExitWatch::wait(int timeout_ms) {
  bool all = !fds_.empty() && std::all_of(fds_.begin(), fds_.end(), [](const auto& e) { return e.second >= 0; });
  if (!all) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 5)));
    return;
  }
  std::vector<pollfd> p;
  for (const auto& e : fds_) p.push_back({e.second, POLLIN, 0});
  (void)::poll(p.data(), p.size(), timeout_ms);  // EINTR or a timeout: the caller looks again
}

std::string self_exe() {
  static const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  return exe;
}

}  // namespace lpu
