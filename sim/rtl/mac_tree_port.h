// One verilated MAC tree (Model = Vsxe_mac_tree_d<DEPTH>) with its port signals and the
// driving logic for a GEMV: the weight stream honouring valid/ready at a given beat rate,
// the activation broadcast and the result sink. Shared by the standalone harness
// (gemv_bench.h, many trees on a free-running clock) and the in-device unit
// (sxe_rtl_unit.cpp, one tree on a clock that only runs while an sxe.gemm is in flight).
//
// The owner calls drive(c) to put cycle c's inputs on the ports and edge() from an
// SC_METHOD on the rising clock edge. That method runs in the same delta as the verilated
// model's clock edge, so it reads in_ready/out_valid/out_y as the registers saw them at that
// edge, and its writes become visible after the edge, like a registered testbench.
#pragma once
#include <systemc>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace lpu::rtl {

// What to compute and how the stream behaves; the data outlive the run.
struct GemvJob {
  int lanes = 1;
  int mac_trees = 1;
  double beats_per_cycle = 1.0;
  int64_t rows = 1;                         // activation rows (GEMM M): each weight beat is used once per row
  int64_t K = 0, N = 0;
  const std::vector<int16_t>* W = nullptr;  // [K x N] row-major; null = zeros (timing only)
  const std::vector<int16_t>* x = nullptr;  // [rows x K]; null = zeros
  uint64_t max_cycles = 0;                  // watchdog
};

template <class Model, int kBusBits>
struct MacTree : sc_core::sc_module {
  using Bus = sc_dt::sc_bv<kBusBits>;
  // Inputs have many writers: in the device, a job is set up by the SXE's thread and its
  // first cycle driven by the clock thread, the rest by the edge method.
  template <class T>
  using Input = sc_core::sc_signal<T, sc_core::SC_MANY_WRITERS>;
  Input<uint32_t> cfg_lanes{"cfg_lanes"};
  Input<Bus> in_w{"in_w"}, in_x{"in_x"};
  Input<bool> in_last{"in_last"}, in_valid{"in_valid"};
  sc_core::sc_signal<bool> in_ready{"in_ready"};
  sc_core::sc_signal<uint64_t> out_y{"out_y"};
  sc_core::sc_signal<bool> out_valid{"out_valid"}, out_ready{"out_ready"};
  Model rtl{"rtl"};

  const GemvJob* job = nullptr;
  int64_t chunks = 0;          // ceil(K / lanes): beats per dot product
  int64_t col0 = 0, cols = 0;  // output columns [col0, col0 + cols), for every row
  uint64_t beats = 0;          // rows x cols x chunks
  uint64_t taken = 0;          // beats accepted so far
  uint64_t shown = ~0ull;      // beat currently on in_w/in_x (avoids rebuilding the bus)
  uint64_t stalls = 0;
  int64_t results = 0;

  MacTree(sc_core::sc_module_name name, sc_core::sc_signal_in_if<bool>& clk, sc_core::sc_signal_in_if<bool>& rst)
      : sc_core::sc_module(name) {
    rtl.clk(clk);
    rtl.rst(rst);
    rtl.cfg_lanes(cfg_lanes);
    rtl.in_w(in_w);
    rtl.in_x(in_x);
    rtl.in_last(in_last);
    rtl.in_valid(in_valid);
    rtl.in_ready(in_ready);
    rtl.out_y(out_y);
    rtl.out_valid(out_valid);
    rtl.out_ready(out_ready);
    out_ready.write(true);  // the LMU write port takes a result every cycle
  }

  // Starts a job on this tree: its column block, counters cleared (the tree itself needs no
  // reset between jobs: it is empty once the last result has been taken).
  void assign(const GemvJob& j, int64_t first_col, int64_t ncols) {
    job = &j;
    chunks = (j.K + j.lanes - 1) / j.lanes;
    col0 = first_col;
    cols = ncols;
    beats = static_cast<uint64_t>(j.rows * cols * chunks);
    taken = stalls = 0;
    results = 0;
    shown = ~0ull;
    cfg_lanes.write(static_cast<uint32_t>(j.lanes));
  }

  int64_t outputs() const { return job->rows * cols; }
  bool done() const { return results == outputs(); }

  // Inputs for cycle c: if the stream has delivered more beats than the tree accepted, raise
  // in_valid with the next one. Beat j has fully arrived from the cycle c with
  // floor((c + 1) * rate) > j.
  void drive(uint64_t c) {
    double arrived = std::floor(static_cast<double>(c + 1) * job->beats_per_cycle);
    bool avail = taken < beats && static_cast<double>(taken) < arrived;
    if (avail) show_beat(taken);
    in_valid.write(avail);
  }

  // Accounts the handshakes of the cycle this rising edge ends; results go to y [rows x N].
  void edge(std::vector<int64_t>* y) {
    if (in_valid.read() && in_ready.read()) ++taken;
    else if (taken < beats) ++stalls;
    if (out_valid.read() && out_ready.read() && results < outputs()) {
      int64_t r = results++;
      if (y) (*y)[static_cast<size_t>((r / cols) * job->N + col0 + r % cols)] = static_cast<int64_t>(out_y.read());
    }
  }

 private:
  // Beat j: output o = j / chunks (row o / cols, column col0 + o % cols), activations
  // [c * lanes, c * lanes + lanes) with c = j % chunks; lanes past K carry zeros.
  void show_beat(uint64_t j) {
    if (shown == j) return;
    bool first = shown == ~0ull;
    shown = j;
    auto ch = static_cast<uint64_t>(chunks);
    int64_t o = static_cast<int64_t>(j / ch);
    int64_t c = static_cast<int64_t>(j % ch);
    in_last.write(c == chunks - 1);
    if (!job->W && !job->x && !first) return;  // all-zero operands: the bus never changes
    int64_t row = o / cols, col = col0 + o % cols;
    int64_t k0 = c * job->lanes;
    int64_t n = std::min<int64_t>(job->lanes, job->K - k0);
    Bus w, x;  // zero-initialised
    for (int64_t i = 0; i < n; ++i) {
      int lo = static_cast<int>(i) * 16;
      if (job->W) w.range(lo + 15, lo) = static_cast<uint16_t>((*job->W)[static_cast<size_t>((k0 + i) * job->N + col)]);
      if (job->x) x.range(lo + 15, lo) = static_cast<uint16_t>((*job->x)[static_cast<size_t>(row * job->K + k0 + i)]);
    }
    in_w.write(w);
    in_x.write(x);
  }
};

}  // namespace lpu::rtl
