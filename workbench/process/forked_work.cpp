#include "process/forked_work.h"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "process/proc.h"
#include "support/error.h"

namespace lpu {

namespace {

enum Outcome : uint8_t { kOk, kInput, kCheck, kStuck, kOther };

// A frame: id (8 bytes), outcome (1; results only), length (8), bytes.
constexpr size_t kRequestHead = 16, kResultHead = 17;

void put_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); }
uint64_t get_u64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Exactly n bytes; false at the end of the input (or an error).
bool read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

ForkedWorkers::Result serve_one(const ForkedWorkers::Serve& serve, uint64_t id, const std::string& request) {
  ForkedWorkers::Result r;
  r.id = id;
  try {
    r.bytes = serve(request);
  } catch (const InputError& e) {
    r.outcome = kInput, r.bytes = e.what();
  } catch (const CheckFailed& e) {
    r.outcome = kCheck, r.bytes = e.what();
  } catch (const SimulationStuck& e) {
    r.outcome = kStuck, r.bytes = e.what();
  } catch (const std::exception& e) {
    r.outcome = kOther, r.bytes = e.what();
  }
  return r;
}

// A worker's life: requests until the parent closes the pipe; then it exits without running
// the parent's destructors or atexit handlers.
[[noreturn]] void worker_main(int in, int out, const ForkedWorkers::Serve& serve) {
  // Freed memory stays with the worker for the next request: by default glibc maps a block of
  // more than 128 KB (an encoded program, its decoded instructions) afresh for each request and
  // unmaps it after, and every first touch of a fresh page is a fault (microseconds each on a
  // virtual machine): that made a worker's step simulation 4x slower than this process's.
  ::mallopt(M_MMAP_THRESHOLD, 1 << 30);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  std::string request;
  for (;;) {
    char head[kRequestHead];
    if (!read_all(in, head, sizeof head)) break;
    request.resize(get_u64(head + 8));
    if (!read_all(in, request.data(), request.size())) break;
    const ForkedWorkers::Result r = serve_one(serve, get_u64(head), request);
    std::string frame;
    put_u64(frame, r.id);
    frame.push_back(static_cast<char>(r.outcome));
    put_u64(frame, r.bytes.size());
    frame += r.bytes;
    if (!write_all(out, frame.data(), frame.size())) break;
  }
  std::fflush(nullptr);  // the worker's own output (a warning): ours was flushed before the fork
  ::_exit(0);
}

}  // namespace

void ForkedWorkers::Result::rethrow() const {
  switch (outcome) {
    case kInput: throw InputError(bytes);
    case kCheck: throw CheckFailed(bytes);
    case kStuck: throw SimulationStuck(bytes);
    default: throw InternalError(bytes);
  }
}

ForkedWorkers::ForkedWorkers(int jobs, Serve serve, int depth) : serve_(std::move(serve)), depth_(std::max(1, depth)) {
  spawn(std::clamp(jobs, 1, 1024));
}

void ForkedWorkers::spawn(int jobs) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  pipe_ignored_ = ::sigaction(SIGPIPE, &ignore, &old_pipe_) == 0;
  const pid_t parent = ::getpid();
  for (int j = 0; j < jobs; ++j) {
    int req[2], res[2];
    if (::pipe2(req, O_CLOEXEC) != 0) break;
    if (::pipe2(res, O_CLOEXEC) != 0) {
      ::close(req[0]), ::close(req[1]);
      break;
    }
    // A whole decode-step program (~300 KB) fits, so a send does not wait for the worker to read.
    ::fcntl(req[1], F_SETPIPE_SZ, 1 << 20);
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (pipe_ignored_) ::sigaction(SIGPIPE, &old_pipe_, nullptr);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);  // the parent died before prctl took effect
      for (const Worker& w : workers_) ::close(w.to), ::close(w.from);
      ::close(req[1]), ::close(res[0]);
      worker_main(req[0], res[1], serve_);
    }
    ::close(req[0]), ::close(res[1]);
    if (pid < 0) {
      ::close(req[1]), ::close(res[0]);
      break;
    }
    Worker w;
    w.pid = pid;
    w.to = req[1];
    w.from = res[0];
    workers_.push_back(std::move(w));
  }
}

void ForkedWorkers::send(uint64_t id, const void* data, size_t size) { send_to(pick(), id, data, size); }

int ForkedWorkers::pick() {
  if (workers_.empty()) return -1;
  auto least = [&] {
    return std::min_element(workers_.begin(), workers_.end(),
                            [](const Worker& a, const Worker& b) { return a.in_hand < b.in_hand; });
  };
  while (least()->in_hand >= depth_) receive(true);
  return static_cast<int>(least() - workers_.begin());
}

void ForkedWorkers::send_to(int worker, uint64_t id, const void* data, size_t size) {
  if (worker < 0 || workers_.empty()) {
    results_.push_back(serve_one(serve_, id, std::string(static_cast<const char*>(data), size)));
    return;
  }
  Worker& w = workers_.at(static_cast<size_t>(worker));
  std::string head;
  put_u64(head, id);
  put_u64(head, size);
  if (!write_all(w.to, head.data(), head.size()) || !write_all(w.to, static_cast<const char*>(data), size))
    throw InternalError(strcat("forked worker ", w.pid, " stopped taking requests"));
  ++w.in_hand;
  ++outstanding_;
}

bool ForkedWorkers::receive(bool block) {
  std::vector<pollfd> p;
  for (const Worker& w : workers_)
    if (w.in_hand > 0) p.push_back({w.from, POLLIN, 0});
  if (p.empty()) return false;
  if (::poll(p.data(), p.size(), block ? -1 : 0) < 0) {
    if (errno == EINTR) return true;  // next() and send() look again
    throw InternalError(strcat("forked workers: poll failed: ", std::strerror(errno)));
  }
  bool got = false;
  for (const pollfd& q : p) {
    if (!q.revents) continue;
    Worker& w = *std::find_if(workers_.begin(), workers_.end(), [&](const Worker& x) { return x.from == q.fd; });
    char buf[65536];
    const ssize_t r = ::read(w.from, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw InternalError(strcat("forked worker ", w.pid, " ended with ", w.in_hand, " request(s) in hand"));
    w.received.append(buf, static_cast<size_t>(r));
    size_t at = 0;
    while (w.received.size() - at >= kResultHead) {
      const uint64_t len = get_u64(w.received.data() + at + 9);
      if (w.received.size() - at - kResultHead < len) break;
      Result res;
      res.id = get_u64(w.received.data() + at);
      res.outcome = static_cast<uint8_t>(w.received[at + 8]);
      res.bytes = w.received.substr(at + kResultHead, len);
      results_.push_back(std::move(res));
      at += kResultHead + len;
      --w.in_hand;
      --outstanding_;
      got = true;
    }
    w.received.erase(0, at);
  }
  return got;
}

std::optional<ForkedWorkers::Result> ForkedWorkers::next(bool block) {
  while (results_.empty() && outstanding_ > 0 && (receive(block) || block)) {
  }
  if (results_.empty()) return std::nullopt;
  Result r = std::move(results_.front());
  results_.pop_front();
  return r;
}

void ForkedWorkers::finish() {
  while (outstanding_ > 0) receive(true);
  std::string died;
  for (Worker& w : workers_) {
    ::close(w.to);
    ::close(w.from);
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    const ChildExit x = decode_wait_status(status);
    if (!x.ok()) died = strcat("forked worker ", w.pid, ": ", x.describe());
  }
  workers_.clear();
  restore_pipe();
  if (!died.empty()) throw InternalError(died);
}

void ForkedWorkers::restore_pipe() {
  if (pipe_ignored_) ::sigaction(SIGPIPE, &old_pipe_, nullptr);
  pipe_ignored_ = false;
}

ForkedWorkers::~ForkedWorkers() {
  for (const Worker& w : workers_) {
    ::kill(w.pid, SIGKILL);
    ::close(w.to);
    ::close(w.from);
    while (::waitpid(w.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  restore_pipe();
}

}  // namespace lpu
