// make_sxe_rtl_unit() of a build without Verilator (LPU_WITH_RTL=OFF): `sxe.model: rtl` is
// a valid configuration that this binary cannot run.
#include "model/sxe_rtl.h"
#include "support/error.h"

namespace lpu::sim {

std::unique_ptr<SxeRtlUnit> make_sxe_rtl_unit(DeviceContext&) {
  throw InputError(
      "sxe.model: rtl needs the Verilator RTL co-simulation, and this build has none (configure with "
      "-DLPU_WITH_RTL=ON, which needs Verilator); use sxe.model: approx");
}

}  // namespace lpu::sim
