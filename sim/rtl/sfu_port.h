// One verilated VXE special-function pipeline (Model = Vvxe_sfu_<func>_l<LAT>_i<II>, see
// sim/rtl/CMakeLists.txt) with its port signals and the driving logic for one vector
// instruction: `elements` operands in beats of `lanes`, the result sink. Shared by the
// standalone bench (run_sfu_rtl in rtl_vxe.cpp) and the in-device unit (vxe_rtl_unit.cpp), as
// mac_tree_port.h is for the MAC tree.
//
// The owner calls drive() to put the next beat on the ports and edge() from an SC_METHOD on
// the rising clock edge (same delta as the model's edge, so it sees the registers as they were
// at the edge: a registered test bench). Operands come from local memory, which keeps up with
// a beat per cycle, so in_valid is high until every beat was accepted.
#pragma once
#include <algorithm>
#include <cstdint>
#include <systemc>
#include <vector>

namespace lpu::rtl {

struct SfuJob {
  int lanes = 1;  // operands per beat (the VXE's vxe.lanes)
  int64_t elements = 0;
  const std::vector<int16_t>* a = nullptr;  // [elements]; null = zeros (timing only)
  const std::vector<int16_t>* b = nullptr;  // div's divisors; null = zeros
  uint64_t max_cycles = 0;                  // watchdog
};

template <class Model, int kLanes>
struct SfuPipe : sc_core::sc_module {
  using InBus = sc_dt::sc_bv<kLanes * 16>;
  using OutBus = sc_dt::sc_bv<kLanes * 32>;
  template <class T>
  using Input = sc_core::sc_signal<T, sc_core::SC_MANY_WRITERS>;  // set up by a job's thread, then the edge method
  Input<InBus> in_a{"in_a"}, in_b{"in_b"};
  Input<bool> in_valid{"in_valid"};
  sc_core::sc_signal<bool> in_ready{"in_ready"};
  sc_core::sc_signal<OutBus> out_y{"out_y"};
  sc_core::sc_signal<bool> out_valid{"out_valid"};
  Input<bool> out_ready{"out_ready"};
  Model rtl{"rtl"};

  const SfuJob* job = nullptr;
  uint64_t beats = 0, taken = 0, results = 0;
  uint64_t shown = ~0ull;  // the beat on in_a/in_b (avoids rebuilding the buses)

  SfuPipe(sc_core::sc_module_name name, sc_core::sc_signal_in_if<bool>& clk, sc_core::sc_signal_in_if<bool>& rst)
      : sc_core::sc_module(name) {
    rtl.clk(clk);
    rtl.rst(rst);
    rtl.in_a(in_a);
    rtl.in_b(in_b);
    rtl.in_valid(in_valid);
    rtl.in_ready(in_ready);
    rtl.out_y(out_y);
    rtl.out_valid(out_valid);
    rtl.out_ready(out_ready);
    out_ready.write(true);  // the LMU write port takes a beat of results every cycle
  }

  // Starts a job (the pipeline is empty once the last result of the one before was taken).
  void assign(const SfuJob& j) {
    job = &j;
    beats = static_cast<uint64_t>((j.elements + j.lanes - 1) / j.lanes);
    taken = results = 0;
    shown = ~0ull;
  }

  bool done() const { return results == beats; }

  void drive() {
    bool avail = taken < beats;
    if (avail) show_beat(taken);
    in_valid.write(avail);
  }

  // Accounts the handshakes of the cycle this rising edge ends; results go to y [elements].
  void edge(std::vector<uint32_t>* y) {
    if (in_valid.read() && in_ready.read()) ++taken;
    if (!out_valid.read() || !out_ready.read() || results >= beats) return;
    const uint64_t beat = results++;
    if (!y) return;
    const OutBus bus = out_y.read();
    const int64_t first = static_cast<int64_t>(beat) * job->lanes;
    const int64_t n = std::min<int64_t>(job->lanes, job->elements - first);
    for (int64_t i = 0; i < n; ++i) {
      int lo = static_cast<int>(i) * 32;
      (*y)[static_cast<size_t>(first + i)] = static_cast<uint32_t>(bus.range(lo + 31, lo).to_uint());
    }
  }

 private:
  void show_beat(uint64_t j) {
    if (shown == j) return;
    bool first_beat = shown == ~0ull;
    shown = j;
    if (!job->a && !job->b && !first_beat) return;  // all-zero operands: the buses never change
    const int64_t first = static_cast<int64_t>(j) * job->lanes;
    const int64_t n = std::min<int64_t>(job->lanes, job->elements - first);
    InBus a, b;  // zero-initialised
    for (int64_t i = 0; i < n; ++i) {
      int lo = static_cast<int>(i) * 16;
      if (job->a) a.range(lo + 15, lo) = static_cast<uint16_t>((*job->a)[static_cast<size_t>(first + i)]);
      if (job->b) b.range(lo + 15, lo) = static_cast<uint16_t>((*job->b)[static_cast<size_t>(first + i)]);
    }
    in_a.write(a);
    in_b.write(b);
  }
};

}  // namespace lpu::rtl
