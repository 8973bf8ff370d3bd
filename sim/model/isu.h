// ISU: the instruction scheduling unit. Fetches the program in order and issues each
// instruction to its engine's queue once (a) the queue has room and (b) the dependency
// scoreboard shows no hazard against any instruction still in flight: read-after-write,
// write-after-read and write-after-write on overlapping LMU or HBM byte ranges. Engines
// An engine that executes its queue strictly in order with one worker (the VXE) needs no
// check against its own earlier instructions: order alone makes them safe (chaining).
// Engines therefore run out of order with respect to each other (DMA of the next tile overlaps
// vector work on this one) while every data dependency is respected.
// A program that can never finish (nothing in flight yet the head cannot issue) is
// reported, with what the head waits for, and the simulation stops (exit 3 in the CLI).
// So does a run past its wall-clock limit (sim.max_wall_s): the ISU looks at the clock every
// so many fetches, which catches loops whose bodies take no simulated time as well.
#pragma once
#include <map>

#include "model/engine.h"

namespace lpu::sim {

class Isu : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Isu);
  Isu(sc_core::sc_module_name name, DeviceContext& ctx);
  void attach(Opcode op, Engine* e) { engines_[op] = e; }
  void retire(size_t instr);
  const std::string& stuck_report() const { return stuck_; }
  const int& traced_in_flight() const { return in_flight_count_; }

 private:
  void run();
  void guarded_run();
  void finish();
  void signal(const Instruction& in, size_t i);
  void wait_token(const Instruction& in, size_t i);
  void check_deadlock();
  bool past_wall_deadline();
  sc_core::sc_event token_arrived_;
  std::string blocker(const Footprint& f, const Engine* e) const;
  bool hazard(const Footprint& f, const Engine* e) const;

  DeviceContext& ctx_;
  std::map<Opcode, Engine*> engines_;
  struct InFlight {
    Footprint f;
    const Engine* engine;
  };
  std::map<size_t, InFlight> in_flight_;
  // The footprint of the instruction being issued. A member, not a local of run(): when the
  // watchdog stops a run, run()'s coroutine stack is abandoned mid-wait, and a local's heap
  // buffers would leak with it (LeakSanitizer found it); a member is freed with the module.
  Footprint issuing_;
  sc_core::sc_event retired_;
  std::string stuck_;
  int in_flight_count_ = 0;
  int until_clock_check_ = 1;  // fetches left before past_wall_deadline() reads the clock
};

}  // namespace lpu::sim
