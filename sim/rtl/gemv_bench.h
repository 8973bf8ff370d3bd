// The standalone SystemC test bench around the verilated MAC trees (run_gemv_rtl): a
// free-running clock, `mac_trees` instances of one verilated variant (MacTree, with the
// stream/broadcast/sink logic of mac_tree_port.h), each owning a contiguous column block.
// One SC_METHOD on the rising edge serves every tree (few process switches: systemc-notes.md).
#pragma once
#include <systemc>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mac_tree_port.h"

namespace lpu::rtl {

template <class Model, int kBusBits>
class GemvBench : public sc_core::sc_module {
 public:
  using Tree = MacTree<Model, kBusBits>;
  static constexpr int kResetEdges = 2;

  SC_HAS_PROCESS(GemvBench);

  GemvBench(sc_core::sc_module_name name, const GemvJob& job, std::vector<int64_t>& y)
      : sc_core::sc_module(name), job_(job), y_(y) {
    int64_t per_tree = (job.N + job.mac_trees - 1) / job.mac_trees;
    for (int t = 0; t < job.mac_trees; ++t) {
      auto tree = std::make_unique<Tree>(("tree" + std::to_string(t)).c_str(), clk_, rst_);
      int64_t col0 = std::min<int64_t>(job.N, t * per_tree);
      tree->assign(job_, col0, std::min<int64_t>(job.N, col0 + per_tree) - col0);
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
  void drive(uint64_t c) {
    for (auto& t : trees_) t->drive(c);
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
    for (auto& t : trees_) {
      t->edge(&y_);
      done = done && t->done();
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
