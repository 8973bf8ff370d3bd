// make_vxe_rtl_unit() of a build without Verilator (LPU_WITH_RTL=OFF): `vxe.model: rtl` is a
// valid configuration that this binary cannot run.
#include "model/vxe_rtl.h"
#include "support/error.h"

namespace lpu::sim {

std::unique_ptr<VxeRtlUnit> make_vxe_rtl_unit(DeviceContext&, VxeRtlFunc, const char*) {
  throw InputError(
      "vxe.model: rtl needs the Verilator RTL co-simulation, and this build has none (configure with "
      "-DLPU_WITH_RTL=ON, which needs Verilator); use vxe.model: approx");
}

}  // namespace lpu::sim
