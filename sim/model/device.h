// One LPU device: ISU -> {DMA, VXE, SXE} engines, HBM (TLM target) and LMU. The top level
// (simulator.cpp) builds `devices` of these; each runs its own program.
#pragma once
#include <memory>

#include "model/dma.h"
#include "model/esl.h"
#include "model/host.h"
#include "model/hbm.h"
#include "model/isu.h"
#include "model/lmu.h"
#include "model/sxe.h"
#include "model/vxe.h"

namespace lpu::sim {

class Device : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Device);
  Device(sc_core::sc_module_name name, DeviceContext& ctx);

  DeviceContext& ctx;
  Hbm hbm;
  Lmu lmu;
  Dma dma;
  Vxe vxe;
  Sxe sxe;
  Host host;
  Esl esl;
  Isu isu;

 private:
  void watchdog();
};

}  // namespace lpu::sim
