// RTL co-simulation of the VXE's special-function pipeline (issue 28): e^x or a / b on the
// Verilator model of vxe_sfu.sv inside a clocked SystemC simulation, the ground truth the VXE's
// closed form (latency + ceil(elements / lanes) * ii) is checked against. `vxe.model: rtl`
// runs the same pipeline driver (sfu_port.h) inside the device simulation (vxe_rtl_unit.cpp).
//
// Arithmetic is the fixed-point stand-in of vxe_sfu.sv and vxe_sfu_ref.h: exp of Q5.10 operands
// to a {exponent, Q1.15 mantissa} pseudo-float, div as int16 / int16 * 2^16 in int32.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "vxe_sfu_ref.h"

namespace lpu::rtl {

struct SfuVariant {
  SfuFunc func;
  int latency, ii;
};

struct RtlSfuResult {
  std::vector<uint32_t> y;  // [elements]: sfu_ref(func, a[i], b[i]) bit for bit
  uint64_t cycles = 0;      // first cycle a beat may enter .. the cycle the last result is taken
  uint64_t beats = 0;       // ceil(elements / lanes)
};

// Runs `a` (and, for div, `b`, the same length) through the pipeline of `func` with `latency`
// fixed stages and `ii` core cycles a beat, `lanes` operands a beat. The consumer takes a
// result only every `take_every` cycles (1 = always ready: > 1 exercises back-pressure). A
// non-empty `vcd_path` writes a VCD. InputError for bad arguments (including a timing with no
// verilated variant, see rtl_sfu_variants()); SimulationStuck if the RTL never delivers.
RtlSfuResult run_sfu_rtl(SfuFunc func, int latency, int ii, int lanes, const std::vector<int16_t>& a,
                         const std::vector<int16_t>& b, int take_every = 1, const std::string& vcd_path = "");

std::vector<SfuVariant> rtl_sfu_variants();  // sim/rtl/CMakeLists.txt, LPU_SFU_VARIANTS
int rtl_sfu_max_lanes();
const char* sfu_func_name(SfuFunc func);  // "exp" | "div"

}  // namespace lpu::rtl
