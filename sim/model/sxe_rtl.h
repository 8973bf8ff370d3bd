// `sxe.model: rtl`: the SXE's timing from the Verilator RTL of a MAC tree (sim/rtl/
// sxe_mac_tree.sv) running inside the device simulation, instead of the closed form
// (sxe_timing.h). The unit is one verilated tree -- the busiest tree's column block: the
// closed form, too, assumes every tree gets an equal share, so the others finish no later --
// clocked at the configured clock, only while an sxe.gemm is in flight.
//
// Built only with LPU_WITH_RTL (sim/rtl/sxe_rtl_unit.cpp); otherwise make_sxe_rtl_unit()
// is sxe_rtl_none.cpp's, which says so with an InputError. This header has no Verilator in
// it, so the rest of the model does not depend on the build option.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/sim_context.h"

namespace lpu::sim {

struct SxeRtlRun {
  uint64_t cycles = 0;        // first cycle a beat may enter .. the cycle the last result is taken
  uint64_t beats = 0;
  uint64_t stall_cycles = 0;  // cycles the tree had beats left but accepted none (stream too slow)
};

class SxeRtlUnit {
 public:
  virtual ~SxeRtlUnit() = default;
  // Runs [rows x K] x [K x cols] through the tree, weight beats arriving at `beats_per_cycle`
  // (0 < r <= 1) and blocks the calling SC_THREAD until the last result is out. The
  // operands are fixed-point (int16); null W [K x cols] / x [rows x K] mean zeros (timing
  // only), a non-null y gets the exact results [rows x cols].
  virtual SxeRtlRun run(int64_t rows, int64_t K, int64_t cols, double beats_per_cycle, const std::vector<int16_t>* W,
                        const std::vector<int16_t>* x, std::vector<int64_t>* y) = 0;
};

// The unit for ctx.arch's sxe.lanes / sxe.pipeline_depth, as a child of the module under
// construction. InputError when the build has no RTL, the depth has no verilated variant or
// the lanes exceed the verilated tree's multipliers.
std::unique_ptr<SxeRtlUnit> make_sxe_rtl_unit(DeviceContext& ctx);

}  // namespace lpu::sim
