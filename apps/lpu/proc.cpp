#include "proc.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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
  // Everything the child needs is prepared before fork: after fork only async-signal-safe
  // calls are allowed (dup2, prctl, execvp, write, _exit).
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int out = spec.stdout_path.empty() ? -1 : open_output(spec.stdout_path);
  int err = -1;
  try {
    err = spec.stderr_path.empty() ? -1 : open_output(spec.stderr_path);
  } catch (...) {
    if (out >= 0) ::close(out);
    throw;
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
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
  if (pid < 0) throw InputError(strcat("cannot start a process (fork): ", std::strerror(fork_errno)));
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

std::string self_exe() {
  static const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  return exe;
}

}  // namespace lpu
