// Worker processes forked from this one, for work that cannot run on this process's threads:
// a generation's step simulations (SystemC keeps one kernel per process and is not
// thread-safe, sc_kernel.h). The workers are forked once, early, while this process is small:
// every fork write-protects all of the parent's pages, and a page fault costs microseconds,
// so forking per batch of steps made a generation slower, not faster (3.5 s -> 9.8 s for 600
// steps, 250,000 page faults). Requests and results are bytes through pipes.
//
//   ForkedWorkers w(jobs, [&](const std::string& request) { return result_of(request); });
//   w.send(id, data, size);                   // to the least busy worker; ids are the caller's
//   while (auto r = w.next(block)) use(r->id, r->bytes);
//   w.finish();                               // every result received, the workers reaped
//
// A request that throws in a worker comes back as an error result; ForkedWorkers::Result::
// rethrow() raises it with the same type (InputError, CheckFailed, SimulationStuck; anything
// else as InternalError) and message. Where no worker could be forked (a process limit),
// send() serves the request here and next() returns its result.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace lpu {

class ForkedWorkers {
 public:
  using Serve = std::function<std::string(const std::string& request)>;
  struct Result {
    uint64_t id = 0;
    uint8_t outcome = 0;  // 0: ok; else how serve() threw
    std::string bytes;    // the result, or the error's message
    bool ok() const { return outcome == 0; }
    [[noreturn]] void rethrow() const;
  };
  // Forks `jobs` workers (jobs < 1 counts as 1), each holding at most `depth` requests at once.
  // Flushes the standard streams first, so a worker's exit does not write our output twice.
  ForkedWorkers(int jobs, Serve serve, int depth = 2);
  ForkedWorkers(const ForkedWorkers&) = delete;
  ForkedWorkers& operator=(const ForkedWorkers&) = delete;
  ~ForkedWorkers();  // kills and reaps workers that finish() did not

  // Queues the request on the worker with the fewest in hand; while every worker has `depth`,
  // first waits for results (kept for next()).
  void send(uint64_t id, const void* data, size_t size);
  // The same in two steps, for requests that depend on what a worker holds from earlier ones:
  // pick() is the worker send() would choose (waiting as it would), -1 when none could be
  // forked (requests are then served here); send_to() queues on that worker.
  int pick();
  void send_to(int worker, uint64_t id, const void* data, size_t size);
  // A result received (in the order they arrive), waiting for one when `block` and any request
  // is outstanding; nullopt when none is there.
  std::optional<Result> next(bool block);
  size_t outstanding() const { return outstanding_; }
  int workers() const { return static_cast<int>(workers_.size()); }
  // Closes the request pipes and reaps the workers; InternalError when one died.
  void finish();

 private:
  struct Worker {
    pid_t pid = -1;
    int to = -1, from = -1;  // request pipe (write end), result pipe (read end)
    int in_hand = 0;
    std::string received;  // result bytes not yet parsed
  };
  void spawn(int jobs);
  bool receive(bool block);  // reads what the workers sent; false when nothing could come
  void restore_pipe();
  Serve serve_;
  int depth_;
  std::vector<Worker> workers_;
  std::deque<Result> results_;
  size_t outstanding_ = 0;
  // SIGPIPE is ignored while workers exist, so writing to one that died is an error to report
  // (EPIPE), not the death of this process; the previous disposition comes back at the end.
  struct sigaction old_pipe_ {};
  bool pipe_ignored_ = false;
};

}  // namespace lpu
