// Child processes, for work that cannot share this process: simulation points of a sweep
// (SystemC allows one kernel per process and is not thread-safe) and the Python report
// generator.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace lpu {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is the program: a path, or a name looked up in PATH
  std::string stdout_path;        // "" inherits ours; otherwise the file is created/truncated
  std::string stderr_path;
  bool die_with_parent = false;  // the child gets SIGKILL when we die (even by SIGKILL)
};

// Starts the child and returns its pid. A program that cannot be executed shows up as exit
// status 127 with the reason written to its stderr.
pid_t spawn_child(const ChildSpec& spec);

struct ChildExit {
  int code = -1;  // exit code, or -1 when killed by a signal
  int signal = 0;
  bool ok() const { return code == 0; }
  std::string describe() const;  // "exit 2", "killed by signal 9 (Killed)"
};
ChildExit decode_wait_status(int status);

// Starts and waits; convenient for short helper commands.
ChildExit run_child(const ChildSpec& spec);

// Waits for children to exit without polling: one pidfd per child (Linux >= 5.3), all waited
// on with one poll(2), so a finished point is reaped at once instead of at the next tick of a
// sleep loop (at 0.1 s a point, a 5 ms tick idles a slot ~2.5 % of the time). Where pidfds
// are unavailable (an old kernel, a seccomp filter) it falls back to a 5 ms sleep.
class ExitWatch {
 public:
  ExitWatch() = default;
  ExitWatch(const ExitWatch&) = delete;
  ExitWatch& operator=(const ExitWatch&) = delete;
  ~ExitWatch();
  void add(pid_t pid);     // call right after spawn_child, before the child is reaped
  void remove(pid_t pid);  // call when the child has been reaped
  // Returns when some watched child may have exited or after timeout_ms.
  void wait(int timeout_ms);

 private:
  std::vector<std::pair<pid_t, int>> fds_;  // pid, pidfd (-1: none could be opened)
};

// Absolute path of the running executable (/proc/self/exe resolved once).
std::string self_exe();

}  // namespace lpu
