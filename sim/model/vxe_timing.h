// The VXE's closed-form compute time of one instruction, in cycles: the pipeline's fill
// (`latency`) plus a group of `lanes` elements every `ii` cycles. The RTL of the
// special-function pipeline (sim/rtl/vxe_sfu.sv) is checked against it (tests/test_rtl_vxe.cpp).
#pragma once
#include <cmath>
#include <cstdint>

namespace lpu::sim {

inline double vxe_compute_cycles(int64_t elements, int lanes, int latency, double ii) {
  const double groups = std::ceil(static_cast<double>(elements) / lanes);
  return latency + groups * ii;
}

}  // namespace lpu::sim
