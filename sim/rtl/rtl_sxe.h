// RTL co-simulation of the SXE (issue 8): a GEMV run through the Verilator model of the MAC
// tree (sxe_mac_tree.sv) inside a clocked SystemC simulation. It is the ground truth the
// closed-form timing (sim/model/sxe_timing.h) is checked against. It runs its own SystemC
// simulation; `sxe.model: rtl` uses the same tree driver (mac_tree_port.h) inside the device
// simulation instead (sxe_rtl_unit.cpp).
//
// Arithmetic is the fixed-point stand-in documented in sxe_mac_tree.sv: int16 weights and
// activations (FP16's width), exact 64-bit accumulation.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lpu::rtl {

struct RtlGemvResult {
  std::vector<int64_t> y;     // [N]: y[n] = sum_k W[k][n] * x[k]
  uint64_t cycles = 0;        // first cycle a beat may enter .. the cycle the last result is taken
  uint64_t beats = 0;         // beats of the busiest tree: its ceil(N / mac_trees) columns x ceil(K / lanes)
  uint64_t stall_cycles = 0;  // cycles the busiest tree had work left but accepted no beat
};

// y = x^T W for W [K x N] (row-major, W[k * N + n]) and x [K], on `mac_trees` MAC trees of
// `lanes` active multipliers and `pipeline_depth` register stages. Trees own contiguous column
// blocks of ceil(N / mac_trees) (one HBM channel each); every tree's weight stream delivers
// `beats_per_cycle` (0 < r <= 1) beats per cycle on average: beat j has fully arrived, and may
// be accepted, from the cycle c with floor((c + 1) * r) > j. A non-empty `vcd_path` writes a
// VCD of every tree (Verilator trace). Throws InputError for bad arguments (including a depth
// with no verilated variant, see rtl_pipeline_depths()) and SimulationStuck if the RTL never
// delivers all results.
RtlGemvResult run_gemv_rtl(int lanes, int pipeline_depth, int mac_trees, double beats_per_cycle, int64_t K,
                           int64_t N, const std::vector<int16_t>& W, const std::vector<int16_t>& x,
                           const std::string& vcd_path = "");

// Pipeline depths with a verilated variant (sim/rtl/CMakeLists.txt, LPU_RTL_DEPTHS).
std::vector<int> rtl_pipeline_depths();
// Multipliers per tree in the verilated RTL; `lanes` may be any value 1 .. this.
int rtl_max_lanes();

}  // namespace lpu::rtl
