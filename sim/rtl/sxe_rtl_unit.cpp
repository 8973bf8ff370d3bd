// make_sxe_rtl_unit() with Verilator (compiled into lpu_sim when LPU_WITH_RTL): one
// verilated MAC tree inside the device simulation (see model/sxe_rtl.h).
//
// The clock is gated: a thread toggles it at the configured period only while a job is in
// flight, so an idle SXE costs no events and the rest of the model keeps its one wait per
// instruction. Reset is two edges of a 2 ps clock at time 0 (before any sxe.gemm can have
// been issued for real work; a job that arrives meanwhile just waits those few ps), and the
// tree needs none between jobs: it is empty once its last result has been taken.
#include <systemc>

#include <algorithm>
#include <cmath>
#include <string>

#include "mac_tree_port.h"
#include "model/sxe_rtl.h"
#include "rtl_variants.h"  // generated: LPU_RTL_MAX_LANES, LPU_RTL_VARIANTS(X), the model headers
#include "support/error.h"

namespace lpu::sim {

namespace {

template <class Model>
class Unit : public sc_core::sc_module, public SxeRtlUnit {
 public:
  SC_HAS_PROCESS(Unit);

  Unit(sc_core::sc_module_name name, const DeviceContext& ctx, int lanes, int depth)
      : sc_core::sc_module(name), half_(ctx.period / 2), lanes_(lanes), depth_(depth) {
    SC_THREAD(clock);
    SC_METHOD(on_edge);
    sensitive << clk_.posedge_event();
    dont_initialize();
  }

  SxeRtlRun run(int64_t rows, int64_t K, int64_t cols, double beats_per_cycle, const std::vector<int16_t>* W,
                const std::vector<int16_t>* x, std::vector<int64_t>* y) override {
    job_ = rtl::GemvJob{};
    job_.lanes = lanes_;
    job_.beats_per_cycle = std::clamp(beats_per_cycle, 1e-6, 1.0);
    job_.rows = rows;
    job_.K = K;
    job_.N = cols;
    job_.W = W;
    job_.x = x;
    double beats = static_cast<double>(rows * cols) * std::ceil(static_cast<double>(K) / lanes_);
    job_.max_cycles = static_cast<uint64_t>(2 * (std::ceil(beats / job_.beats_per_cycle) + depth_) + 100);
    if (y) y->assign(static_cast<size_t>(rows * cols), 0);
    y_ = y;
    tree_.assign(job_, 0, cols);
    pending_ = true;
    start_.notify(sc_core::SC_ZERO_TIME);
    sc_core::wait(done_);
    if (!tree_.done())
      throw InternalError(strcat("sxe.model rtl: [", rows, " x ", K, "] x [", K, " x ", cols, "] at ",
                                 job_.beats_per_cycle, " beats/cycle: the RTL took ", tree_.taken, " of ",
                                 tree_.beats, " beats and delivered ", tree_.results, " of ", tree_.outputs(),
                                 " results in ", cycle_ + 1, " cycles"));
    return {cycle_ + 1, tree_.beats, tree_.stalls};
  }

 private:
  void clock() {
    const sc_core::sc_time reset_half(1, sc_core::SC_PS);
    for (int e = 0; e < 2; ++e) {
      clk_.write(true);
      wait(reset_half);
      clk_.write(false);
      wait(reset_half);
    }
    rst_.write(false);
    for (;;) {
      while (!pending_) wait(start_);
      pending_ = false;
      running_ = true;
      cycle_ = 0;
      tree_.drive(0);
      // Edge c (c = 0, 1, ...) at half + c * period after the start ends cycle c.
      while (running_) {
        wait(half_);
        clk_.write(true);
        wait(half_);
        clk_.write(false);
      }
    }
  }

  // Edge `cycle_` ends cycle `cycle_`: account its handshakes, then drive the next cycle.
  void on_edge() {
    if (!running_) return;  // reset edges
    tree_.edge(y_);
    if (tree_.done() || cycle_ + 1 >= job_.max_cycles) {
      running_ = false;
      done_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    tree_.drive(++cycle_);
  }

  sc_core::sc_time half_;
  int lanes_, depth_;
  sc_core::sc_signal<bool> clk_{"clk", false};
  sc_core::sc_signal<bool> rst_{"rst", true};
  rtl::MacTree<Model, LPU_RTL_MAX_LANES * 16> tree_{"tree", clk_, rst_};
  rtl::GemvJob job_;
  std::vector<int64_t>* y_ = nullptr;
  sc_core::sc_event start_, done_;
  bool pending_ = false, running_ = false;
  uint64_t cycle_ = 0;
};

std::string built_depths() {
  std::string s;
#define LPU_RTL_DEPTH(depth) s += (s.empty() ? "" : ", ") + std::to_string(depth);
  LPU_RTL_VARIANTS(LPU_RTL_DEPTH)
#undef LPU_RTL_DEPTH
  return s;
}

}  // namespace

std::unique_ptr<SxeRtlUnit> make_sxe_rtl_unit(DeviceContext& ctx) {
  const auto& cfg = ctx.arch->sxe;
  if (cfg.lanes > LPU_RTL_MAX_LANES)
    throw InputError(strcat("sxe.model: rtl: sxe.lanes = ", cfg.lanes, " exceeds the verilated MAC tree's ",
                            LPU_RTL_MAX_LANES, " multipliers (LPU_RTL_MAX_LANES in sim/rtl/CMakeLists.txt)"));
#define LPU_RTL_MAKE(depth)                                                                  \
  if (cfg.pipeline_depth == depth)                                                           \
    return std::make_unique<Unit<Vsxe_mac_tree_d##depth>>("sxe_rtl", ctx, cfg.lanes, depth);
  LPU_RTL_VARIANTS(LPU_RTL_MAKE)
#undef LPU_RTL_MAKE
  throw InputError(strcat("sxe.model: rtl: no verilated MAC tree with sxe.pipeline_depth = ", cfg.pipeline_depth,
                          "; valid: ", built_depths(), " (LPU_RTL_DEPTHS in sim/rtl/CMakeLists.txt)"));
}

}  // namespace lpu::sim
