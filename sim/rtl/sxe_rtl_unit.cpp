// make_sxe_rtl_unit() with Verilator (compiled into lpu_sim when LPU_WITH_RTL): one
// verilated MAC tree inside the device simulation (see model/sxe_rtl.h), on a gated clock
// (gated_clock.h).
#include <algorithm>
#include <cmath>
#include <string>
#include <systemc>

#include "gated_clock.h"
#include "mac_tree_port.h"
#include "model/sxe_rtl.h"
#include "rtl_variants.h"  // generated: LPU_RTL_MAX_LANES, LPU_RTL_VARIANTS(X), the model headers
#include "support/error.h"

namespace lpu::sim {

namespace {

template <class Model>
class Unit : public sc_core::sc_module, public SxeRtlUnit {
 public:
  Unit(sc_core::sc_module_name name, const DeviceContext& ctx, int lanes, int depth)
      : sc_core::sc_module(name), clock_("clock", ctx.period), lanes_(lanes), depth_(depth) {}

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
    // Edge c ends cycle c: account its handshakes, then drive the next cycle.
    const uint64_t cycles = clock_.run([this](uint64_t c) { tree_.drive(c); },
                                       [this](uint64_t c) {
                                         tree_.edge(y_);
                                         return tree_.done() || c + 1 >= job_.max_cycles;
                                       });
    if (!tree_.done())
      throw InternalError(strcat("sxe.model rtl: [", rows, " x ", K, "] x [", K, " x ", cols, "] at ",
                                 job_.beats_per_cycle, " beats/cycle: the RTL took ", tree_.taken, " of ", tree_.beats,
                                 " beats and delivered ", tree_.results, " of ", tree_.outputs(), " results in ",
                                 cycles, " cycles"));
    return {cycles, tree_.beats, tree_.stalls};
  }

 private:
  GatedClock clock_;
  int lanes_, depth_;
  rtl::MacTree<Model, LPU_RTL_MAX_LANES * 16> tree_{"tree", clock_.clk, clock_.rst};
  rtl::GemvJob job_;
  std::vector<int64_t>* y_ = nullptr;
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
#define LPU_RTL_MAKE(depth)        \
  if (cfg.pipeline_depth == depth) \
    return std::make_unique<Unit<Vsxe_mac_tree_d##depth>>("sxe_rtl", ctx, cfg.lanes, depth);
  LPU_RTL_VARIANTS(LPU_RTL_MAKE)
#undef LPU_RTL_MAKE
  throw InputError(strcat("sxe.model: rtl: no verilated MAC tree with sxe.pipeline_depth = ", cfg.pipeline_depth,
                          "; valid: ", built_depths(), " (LPU_RTL_DEPTHS in sim/rtl/CMakeLists.txt)"));
}

}  // namespace lpu::sim
