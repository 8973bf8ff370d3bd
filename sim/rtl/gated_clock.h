// The clock of a verilated unit inside the device simulation (the SXE's MAC tree,
// sxe_rtl_unit.cpp; the VXE's special-function pipelines, vxe_rtl_unit.cpp).
//
// It is gated: a thread toggles it at the configured period only while a job is in flight, so
// an idle unit costs no events and the rest of the model keeps its one wait per instruction.
// Reset is two edges of a 2 ps clock at time 0 (before any instruction can have been issued for
// real work; a job that arrives meanwhile just waits those few ps), and the units need none
// between jobs: they are empty once their last result has been taken.
//
// The two halves of a cycle add up to the period exactly, though it may not be a whole number
// of time units (0.22 GHz: 4545 ps rounded): edge c of a job lies at start + high + c x period,
// so the last edge never passes start + cycles x period, the end the engine reports, as a clock
// of two rounded halves could (it drifted 1 ps a cycle on lpu-fpga-u55c).
#pragma once
#include <cstdint>
#include <functional>
#include <systemc>
#include <utility>

namespace lpu::sim {

class GatedClock : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(GatedClock);

  // drive(c): set the unit's inputs for cycle c. edge(c): account the rising edge that ends
  // cycle c; true when the job is over (done, or out of cycles).
  using Drive = std::function<void(uint64_t)>;
  using Edge = std::function<bool(uint64_t)>;

  GatedClock(sc_core::sc_module_name name, const sc_core::sc_time& period)
      : sc_core::sc_module(name), high_(period / 2), low_(period - high_) {
    SC_THREAD(clock);
    SC_METHOD(on_edge);
    sensitive << clk.posedge_event();
    dont_initialize();
  }

  // Runs one job from the calling SystemC thread; returns its cycles (the last edge's + 1).
  uint64_t run(Drive drive, Edge edge) {
    drive_ = std::move(drive);
    edge_ = std::move(edge);
    pending_ = true;
    start_.notify(sc_core::SC_ZERO_TIME);
    sc_core::wait(done_);
    return cycle_ + 1;
  }

  sc_core::sc_signal<bool> clk{"clk", false};
  sc_core::sc_signal<bool> rst{"rst", true};

 private:
  void clock() {
    const sc_core::sc_time reset_half(1, sc_core::SC_PS);
    for (int e = 0; e < 2; ++e) {
      clk.write(true);
      wait(reset_half);
      clk.write(false);
      wait(reset_half);
    }
    rst.write(false);
    for (;;) {
      while (!pending_) wait(start_);
      pending_ = false;
      running_ = true;
      cycle_ = 0;
      drive_(0);
      while (running_) {  // edge c at high + c x period after the start ends cycle c
        wait(high_);
        clk.write(true);
        wait(low_);
        clk.write(false);
      }
    }
  }

  void on_edge() {
    if (!running_) return;  // reset edges
    if (edge_(cycle_)) {
      running_ = false;
      done_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    drive_(++cycle_);
  }

  sc_core::sc_time high_, low_;
  Drive drive_;
  Edge edge_;
  sc_core::sc_event start_, done_;
  bool pending_ = false, running_ = false;
  uint64_t cycle_ = 0;
};

}  // namespace lpu::sim
