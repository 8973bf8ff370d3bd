// ISU: the instruction scheduling unit. Fetches the program in order into an issue window of
// `isu.lookahead` instructions and issues an instruction to its engine's queue once (a) the
// queue has room, (b) no earlier instruction of the window is still unissued that goes to
// the same engine or conflicts with it, and (c) the dependency scoreboard shows no hazard
// against any instruction still in flight: read-after-write, write-after-read and
// write-after-write on overlapping LMU or HBM byte ranges. An engine that executes its queue
// strictly in order with one worker (the VXE) needs no check against its own earlier
// instructions: order alone makes them safe. So engines run out of order with respect to
// each other (a DMA or a weight stream goes past a VXE op that waits for its input; with a
// window of 1 the ISU issues in program order) while every data dependency is respected.
// Routing: the opcode table (isa/program.h: opcode_unit) names each opcode's unit.
// Interface with the engines: Engine::push(IssueTicket) one way; started() (when an
// instruction will finish) and retire() the other.
// A program that can never finish (nothing in flight yet the head cannot issue) is
// reported, with what the head waits for, and the simulation stops (exit 3 in the CLI).
// So does a run past its wall-clock limit (sim.max_wall_s): the ISU looks at the clock every
// so many fetches, which catches loops whose bodies take no simulated time as well.
#pragma once
#include <array>
#include <vector>

#include "model/engine.h"

namespace lpu::sim {

// What the ISU did, reported at the end of the simulation (SimStats::isu).
struct IsuCounters {
  uint64_t issued = 0;
  uint64_t issued_out_of_order = 0;  // issued while an older instruction of the window waited
  // Time the ISU issued nothing, by why its oldest unissued instruction waited: a hazard (or
  // an older instruction it must not pass) or a full engine queue.
  double hazard_stall_ps = 0, queue_stall_ps = 0;
  double sync_wait_ps = 0;  // blocked at sync.wait
};

class Isu : public sc_core::sc_module {
  friend class LayerMemo;  // reads and moves its state at block boundaries (layer_memo.h)

 public:
  SC_HAS_PROCESS(Isu);
  Isu(sc_core::sc_module_name name, DeviceContext& ctx);
  void attach(Engine* e) { engines_[static_cast<size_t>(e->unit())] = e; }
  // The engine side of the interface: instruction `instr` started and will finish at end_ps.
  void started(size_t instr, double end_ps);
  void retire(size_t instr);
  const int& traced_in_flight() const { return in_flight_count_; }
  const IsuCounters& counters() const { return counters_; }

 private:
  enum class Verdict { Issue, Order, Hazard, Queue };
  // Footprints stay in place in a pool from fetch to retirement; window and in-flight
  // entries name theirs by index (a footprint is a few hundred bytes: moving it with its
  // entry through the window, then into the in-flight list, cost more than using it).
  static constexpr uint32_t kNoFootprint = UINT32_MAX;  // a barrier's
  uint32_t new_footprint();
  const Footprint& fp(uint32_t i) const { return footprints_[i]; }
  std::vector<Footprint> footprints_;
  std::vector<uint32_t> free_footprints_;
  struct Pending {  // fetched, not yet issued
    size_t id = 0;
    Engine* engine = nullptr;  // null for a barrier (halt, sync.*): handled by the ISU itself
    bool barrier = false;
    uint32_t f = kNoFootprint;
    double fetched_ps = 0, hazard_clear_ps = -1, inputs_ready_ps = 0;
    bool prefetching = false;
    // What kept it back at its last check for as long as that stays (the verdict depends on
    // no changing state): an earlier window entry (Verdict::Order) or an in-flight instruction
    // (Verdict::Hazard), by id; kNobody if none. While it stays, check() gives that verdict
    // again without comparing footprints: most entries wait on one instruction over many checks.
    size_t blocker = kNobody;
    Verdict blocked = Verdict::Issue;
  };
  static constexpr size_t kNobody = SIZE_MAX;
  bool still_blocked(size_t k) const;
  struct InFlight {
    size_t id;
    uint32_t f;
    const Engine* engine;
    double end_ps;     // -1 until its engine started it
    bool prefetching;  // an sxe.gemm issued before its activation was ready
    // Its footprint's hulls, here: most pairs the scoreboard compares are told apart by them
    // (conflicts() tests them first), without reaching into the footprint pool.
    Range lm_hull, hbm_hull;
  };
  // The ISU's loop as steps between waits: step() runs until the ISU must wait and says for
  // what; the thread driver waits for it, the method driver sets it as its next trigger
  // (engine.h: processes_are_threads). `phase_` is where the next activation resumes.
  struct Wake {
    const sc_core::sc_event* event = nullptr;  // else `delay`
    sc_core::sc_time delay;
    bool done = false;  // the ISU has halted (or stopped): nothing more to wait for
  };
  enum class Phase {
    Start,        // the first activation
    Run,          // the top of the loop: fill the window, take a barrier or issue
    Blocked,      // woke from waiting for a retirement with nothing to issue
    Drain,        // halt (or the end of the code): until everything retired, then finish
    SignalDrain,  // sync.signal: until everything retired, then send the token
    TokenWait,    // sync.wait: until its token arrives (or a deadlock is found)
    Done
  };
  Wake step();
  Wake guarded_step();
  void thread_run();
  void method_run();
  bool run_once(Wake& w);  // one pass of Phase::Run; true: wait for `w`
  void end_barrier();      // a sync barrier's span, once it passed
  Phase phase_ = Phase::Start;
  sc_core::sc_time issue_time_;
  size_t window_size_ = 0;
  double blocked_since_ = 0, barrier_since_ = 0;
  Verdict blocked_head_ = Verdict::Issue;
  size_t barrier_ = 0;  // the sync barrier being passed (an issue id)
  void finish();
  bool fetch();
  Verdict check(size_t k);
  void issue(size_t k);
  Engine* engine_for(Opcode op) const;
  void signal(const Instruction& in);               // once everything before it retired
  bool token_due(const Instruction& in, size_t i);  // a token to take (it is taken); false: wait
  void check_deadlock();
  bool past_wall_deadline();
  sc_core::sc_event token_arrived_;
  sc_core::sc_event wake_;  // the method driver's timed wait ends (wake_order.h)

  DeviceContext& ctx_;
  std::array<Engine*, kUnits> engines_;
  // Issued, not retired: a few dozen at most (queue slots and workers), in no order (the
  // scoreboard's verdict does not depend on it).
  std::vector<InFlight> in_flight_;
  InFlight* find_in_flight(size_t id);
  // The window. A member, not a local of run(): when the watchdog stops a run, run()'s
  // coroutine stack is abandoned mid-wait, and a local's heap buffers would leak with it
  // (LeakSanitizer found it); a member is freed with the module. A vector: entries are
  // small and at most isu.lookahead, so erasing one is cheaper than a deque's indexing.
  std::vector<Pending> window_;
  struct LoopFrame {
    size_t begin;
    int64_t count, iter;
  };
  std::vector<LoopFrame> loops_;
  size_t pc_ = 0, next_instance_ = 0;
  // The engines with an entry in the window: one bit each (Engine::engine_index), and how
  // many entries each has. Once every one of them has a waiting entry, the rest of the window
  // cannot issue and is not looked at.
  uint32_t window_engines_ = 0;
  std::array<uint16_t, 32> window_entries_{};
  void count_in_window(const Engine* e, int delta);
  int prefetching_ = 0;  // in-flight sxe.gemms issued before their activation was ready
  sc_core::sc_event retired_;
  IsuCounters counters_;
  int in_flight_count_ = 0;
  bool wall_clock_exceeded_ = false;  // fetch() found the wall-clock limit passed
  int until_clock_check_ = 1;         // fetches left before past_wall_deadline() reads the clock
};

}  // namespace lpu::sim
