// One LPU device: ISU -> engines, HBM (TLM target) and LMU. The top level (simulator.cpp)
// builds `devices` of these; each runs its own program.
// The device keeps a registry of its engines (in the order they were added: the built-in
// ones, then those of extensions), which the ISU routes to by unit and simulate() reads the
// statistics of. An engine beyond the built-in ones registers a factory (EngineRegistration,
// docs/adding-an-engine.md) and every device builds one.
#pragma once
#include <memory>
#include <vector>

#include "model/dma.h"
#include "model/esl.h"
#include "model/hbm.h"
#include "model/host.h"
#include "model/isu.h"
#include "model/lmu.h"
#include "model/sxe.h"
#include "model/vxe.h"
#include "model/wake_order.h"

namespace lpu::sim {

class Device;

// Builds an extension's engine for a device (named by the engine's unit, isa/opcodes.h).
using EngineFactory = std::unique_ptr<Engine> (*)(const char* name, DeviceContext& ctx, Device& device);

// A static object of this type in an engine's module adds the engine to every device.
struct EngineRegistration {
  EngineRegistration(Unit unit, EngineFactory make);
};

class Device : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Device);
  Device(sc_core::sc_module_name name, DeviceContext& ctx);

  DeviceContext& ctx;
  WakeOrder wakes;
  Hbm hbm;
  Lmu lmu;
  Dma dma;
  Vxe vxe;
  Sxe sxe;
  Host host;
  Esl esl;
  Isu isu;

  const std::vector<Engine*>& engines() const { return engines_; }
  bool has_extensions() const { return !extensions_.empty(); }

 private:
  void add_engine(Engine& e);
  void watchdog();       // SC_THREAD (engine.h: processes_are_threads)
  void watchdog_step();  // or SC_METHOD
  void watchdog_expired();
  bool watchdog_armed_ = false;
  std::vector<Engine*> engines_;
  std::vector<std::unique_ptr<Engine>> extensions_;
};

}  // namespace lpu::sim
