// `vxe.model: rtl`: the timing of the VXE's exp, div and reciprocal instructions from the
// Verilator RTL of its special-function pipeline (sim/rtl/vxe_sfu.sv) running inside the
// device simulation, instead of the closed form latency + ceil(elements / lanes) * ii. One
// unit per function (exp; div, which reciprocal uses too), each a full vector of vxe.lanes
// lanes clocked at the configured clock, only while an instruction is in flight. Other VXE
// instructions keep the closed form.
//
// Built only with LPU_WITH_RTL (sim/rtl/vxe_rtl_unit.cpp); otherwise make_vxe_rtl_unit() is
// vxe_rtl_none.cpp's, which says so with an InputError. No Verilator in this header.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/sim_context.h"

namespace lpu::sim {

enum class VxeRtlFunc { Exp, Div };

class VxeRtlUnit {
 public:
  virtual ~VxeRtlUnit() = default;
  // Runs `elements` operands through the pipeline, vxe.lanes a beat, and blocks the calling
  // SC_THREAD until the last result is out; returns the cycles (the first in which a beat may
  // enter .. the one in which the last result is taken). Operands are the fixed-point stand-in
  // (sim/rtl/vxe_sfu_ref.h): null a / b mean zeros (timing only); with operands, every result
  // must equal the C++ reference bit for bit, else InternalError naming `what`.
  virtual uint64_t run(int64_t elements, const std::vector<int16_t>* a, const std::vector<int16_t>* b,
                       const std::string& what) = 0;
};

// The unit of `func` with vxe.ops' timing of `op` (exp, div), as a child of the module under
// construction. InputError when the build has no RTL or no verilated pipeline has that timing.
std::unique_ptr<VxeRtlUnit> make_vxe_rtl_unit(DeviceContext& ctx, VxeRtlFunc func, const char* op);

}  // namespace lpu::sim
