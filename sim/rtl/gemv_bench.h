// The SystemC test bench around the verilated MAC trees: a clock, `mac_trees` instances of
// one verilated variant (Model = Vsxe_mac_tree_d<DEPTH>), a weight stream per tree that
// honours valid/ready at a given beat rate, the activation broadcast, and the result sink.
// One SC_METHOD on the rising edge serves every tree (few process switches: systemc-notes.md).
//
// Sampling: the method runs in the same delta as the verilated models' clock edge, so it
// reads in_ready/out_valid/out_y as the registers saw them at that edge, and its writes
// become visible after the edge, like a registered testbench.
#pragma once
#include <systemc>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lpu::rtl {

// What to compute and how the stream behaves; the data outlive the bench.
struct GemvJob {
  int lanes = 1;
  int mac_trees = 1;
  double beats_per_cycle = 1.0;
  int64_t K = 0, N = 0;
  const std::vector<int16_t>* W = nullptr;  // [K x N] row-major
  const std::vector<int16_t>* x = nullptr;  // [K]
  uint64_t max_cycles = 0;                  // watchdog
};

template <class Model, int kBusBits>
class GemvBench : public sc_core::sc_module {
 public:
  using Bus = sc_dt::sc_bv<kBusBits>;
  static constexpr int kResetEdges = 2;

  // One MAC tree: the verilated model, its port signals and its share of the columns.
  struct Tree : sc_core::sc_module {
    sc_core::sc_signal<uint32_t> cfg_lanes{"cfg_lanes"};
    sc_core::sc_signal<Bus> in_w{"in_w"}, in_x{"in_x"};
    sc_core::sc_signal<bool> in_last{"in_last"}, in_valid{"in_valid"}, in_ready{"in_ready"};
    sc_core::sc_signal<uint64_t> out_y{"out_y"};
    sc_core::sc_signal<bool> out_valid{"out_valid"}, out_ready{"out_ready"};
    Model rtl{"rtl"};

    int64_t col0 = 0, cols = 0;  // output columns [col0, col0 + cols)
    uint64_t beats = 0;          // cols x ceil(K / lanes)
    uint64_t taken = 0;          // beats accepted so far
    uint64_t shown = ~0ull;      // beat currently on in_w/in_x (avoids rebuilding the bus)
    uint64_t stalls = 0;
    int64_t results = 0;

    Tree(sc_core::sc_module_name name, sc_core::sc_signal_in_if<bool>& clk, sc_core::sc_signal_in_if<bool>& rst)
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
    }
  };

  SC_HAS_PROCESS(GemvBench);

  GemvBench(sc_core::sc_module_name name, const GemvJob& job, std::vector<int64_t>& y)
      : sc_core::sc_module(name), job_(job), y_(y), chunks_((job.K + job.lanes - 1) / job.lanes) {
    int64_t per_tree = (job.N + job.mac_trees - 1) / job.mac_trees;
    for (int t = 0; t < job.mac_trees; ++t) {
      auto tree = std::make_unique<Tree>(("tree" + std::to_string(t)).c_str(), clk_, rst_);
      tree->col0 = std::min<int64_t>(job.N, t * per_tree);
      tree->cols = std::min<int64_t>(job.N, tree->col0 + per_tree) - tree->col0;
      tree->beats = static_cast<uint64_t>(tree->cols * chunks_);
      tree->cfg_lanes.write(static_cast<uint32_t>(job.lanes));
      tree->out_ready.write(true);  // the LMU write port takes a result every cycle
      trees_.push_back(std::move(tree));
    }
    SC_METHOD(on_edge);
    sensitive << clk_.posedge_event();
    dont_initialize();
  }

  std::vector<std::unique_ptr<Tree>>& trees() { return trees_; }
  bool finished() const { return finished_; }
  uint64_t cycles() const { return cycles_; }
  // The busiest tree is tree 0: column blocks are ceil(N / mac_trees) from the first tree on.
  const Tree& busiest() const { return *trees_.front(); }

 private:
  // Beat j of a tree: column col0 + j / chunks, activations [c * lanes, c * lanes + lanes)
  // with c = j % chunks; lanes past K (the last, partial chunk) carry zeros.
  void show_beat(Tree& t, uint64_t j) {
    if (t.shown == j) return;
    t.shown = j;
    int64_t col = t.col0 + static_cast<int64_t>(j / static_cast<uint64_t>(chunks_));
    int64_t c = static_cast<int64_t>(j % static_cast<uint64_t>(chunks_));
    int64_t k0 = c * job_.lanes;
    int64_t n = std::min<int64_t>(job_.lanes, job_.K - k0);
    Bus w, x;  // zero-initialised
    for (int64_t i = 0; i < n; ++i) {
      auto wi = static_cast<uint16_t>((*job_.W)[static_cast<size_t>((k0 + i) * job_.N + col)]);
      auto xi = static_cast<uint16_t>((*job_.x)[static_cast<size_t>(k0 + i)]);
      int lo = static_cast<int>(i) * 16;
      w.range(lo + 15, lo) = wi;
      x.range(lo + 15, lo) = xi;
    }
    t.in_w.write(w);
    t.in_x.write(x);
    t.in_last.write(c == chunks_ - 1);
  }

  // Inputs for cycle c: every tree whose stream has delivered more beats than it accepted
  // raises in_valid with its next beat.
  void drive(uint64_t c) {
    double arrived = std::floor(static_cast<double>(c + 1) * job_.beats_per_cycle);
    for (auto& tp : trees_) {
      Tree& t = *tp;
      bool avail = t.taken < t.beats && static_cast<double>(t.taken) < arrived;
      if (avail) show_beat(t, t.taken);
      t.in_valid.write(avail);
    }
  }

  // Edge `cycle_` ends cycle `cycle_`: account the handshakes of that cycle, then drive the next.
  void on_edge() {
    if (reset_edges_ < kResetEdges) {
      if (++reset_edges_ == kResetEdges) {
        rst_.write(false);
        drive(0);
      }
      return;
    }
    bool done = true;
    for (auto& tp : trees_) {
      Tree& t = *tp;
      if (t.in_valid.read() && t.in_ready.read()) ++t.taken;
      else if (t.taken < t.beats) ++t.stalls;
      if (t.out_valid.read() && t.out_ready.read() && t.results < t.cols)
        y_[static_cast<size_t>(t.col0 + t.results++)] = static_cast<int64_t>(t.out_y.read());
      done = done && t.results == t.cols;
    }
    if (done || cycle_ + 1 >= job_.max_cycles) {
      finished_ = done;
      cycles_ = cycle_ + 1;
      sc_core::sc_stop();
      return;
    }
    drive(++cycle_);
  }

  GemvJob job_;
  std::vector<int64_t>& y_;
  int64_t chunks_;
  // 1 ns period (cycles are counted in edges, so the period is arbitrary); the first rising
  // edge is at 1 ns, so sc_start(SC_ZERO_TIME) only elaborates. Reset is high from the start.
  sc_core::sc_clock clk_{"clk", sc_core::sc_time(1, sc_core::SC_NS), 0.5, sc_core::sc_time(1, sc_core::SC_NS), true};
  sc_core::sc_signal<bool> rst_{"rst", true};
  std::vector<std::unique_ptr<Tree>> trees_;
  int reset_edges_ = 0;
  uint64_t cycle_ = 0, cycles_ = 0;
  bool finished_ = false;
};

}  // namespace lpu::rtl
