#include "sweep/slurm_client.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <thread>

#include "support/error.h"
#include "sweep/sweep_layout.h"

namespace fs = std::filesystem;

namespace lpu {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::string one_line(const std::string& text) {
  std::string out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!trim(line).empty()) out += (out.empty() ? "" : " | ") + trim(line);
  return out;
}

std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream in(path ? path : "");
  for (std::string d; std::getline(in, d, ':');) {
    fs::path p = fs::path(d.empty() ? "." : d) / name;
    if (::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p)) return p.string();
  }
  return "";
}

Captured capture(const std::vector<std::string>& argv, const std::string& scratch, double limit_s) {
  static int seq = 0;
  std::string stem = strcat(scratch, "/.cmd-", ::getpid(), "-", seq++);
  ChildSpec c;
  c.argv = argv;
  c.stdout_path = stem + ".out";
  c.stderr_path = stem + ".err";
  c.die_with_parent = true;
  Captured r;
  pid_t pid = spawn_child(c);
  auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (true) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (!r.timed_out && seconds_since(t0) > limit_s) {
      ::kill(pid, SIGKILL);
      r.timed_out = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.exit = decode_wait_status(status);
  r.out = read_text_file(c.stdout_path);
  r.err = read_text_file(c.stderr_path);
  fs::remove(c.stdout_path);
  fs::remove(c.stderr_path);
  return r;
}

std::string array_list(const std::vector<int>& idx) {
  std::string out;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && idx[j + 1] == idx[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (j > i ? strcat(idx[i], "-", idx[j]) : strcat(idx[i]));
    i = j + 1;
  }
  return out;
}

std::vector<TaskState> task_states(const std::string& job, const std::string& scratch) {
  std::vector<TaskState> out;
  if (!find_program("sacct").empty()) {
    Captured c = capture({"sacct", "-n", "-P", "-X", "-j", job, "-o", "JobID,State,ExitCode"}, scratch);
    if (c.exit.ok()) {
      std::stringstream in(c.out);
      for (std::string line; std::getline(in, line);) {
        std::smatch m;
        static const std::regex re(R"((\d+)_(\d+)\|([A-Z_]+)[^|]*\|(\S+))");
        if (std::regex_match(line, m, re) && m[1] == job) out.push_back({std::stoi(m[2]), m[3], m[4]});
      }
      if (!out.empty()) return out;
    }
  }
  Captured c = capture({"scontrol", "show", "job", "-o", job}, scratch);
  std::stringstream in(c.out);
  static const std::regex task(R"(ArrayTaskId=(\d+))"), state(R"(JobState=([A-Z_]+))"), code(R"(ExitCode=(\S+))");
  for (std::string line; std::getline(in, line);) {
    std::smatch a, s, e;
    if (std::regex_search(line, a, task) && std::regex_search(line, s, state) && std::regex_search(line, e, code))
      out.push_back({std::stoi(a[1]), s[1], e[1]});
  }
  return out;
}

}  // namespace lpu
