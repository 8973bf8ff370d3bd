// Energy of a simulated run (docs/energy.md, docs/sim-model.md "Energy"): the events the
// model counts, each multiplied by its energy from the arch config's `energy` section, plus
// each engine's static power over the run's time. Nothing here is estimated from time except
// the static part.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "config/arch_config.h"

namespace lpu {

// What one device did that costs energy, counted by the model as it runs. Counting never
// changes timing: every counter is added where the timed action already happens.
struct EnergyEvents {
  uint64_t hbm_read_bytes = 0, hbm_write_bytes = 0;  // bytes the HBM channels moved (burst-rounded)
  double sxe_macs = 0;                               // useful MACs of sxe.gemm (M x K x N)
  double sxe_dequantised = 0;                        // packed weights dequantised on the SXE's input path
  std::map<std::string, double> vxe_ops;             // element operations by class (energy_vxe_classes())
  uint64_t lmu_read_bytes = 0, lmu_write_bytes = 0;  // local-memory port traffic, fp32 words
  uint64_t esl_bytes = 0;                            // bytes sent over the ESL

  EnergyEvents& operator+=(const EnergyEvents& o);
};

struct EngineEnergy {
  double dynamic_j = 0, static_j = 0;
  double total_j() const { return dynamic_j + static_j; }
};

struct EnergyStats {
  bool configured = false;  // the config has an energy section; otherwise nothing below is set
  EnergyEvents events;      // summed over every device
  int devices = 1;
  double seconds = 0;                           // the time static power is charged over: the run's latency
  std::map<std::string, EngineEnergy> engines;  // by energy_engines()
  double dynamic_j = 0, static_j = 0;
  double total_j() const { return dynamic_j + static_j; }
};

// Events x energies, and static power x `seconds` x `devices`, split per engine.
EnergyStats compute_energy(const EnergyEvents& events, const ArchConfig& arch, double seconds, int devices);

// {"total_j", "dynamic_j", "static_j", "seconds", "devices", "engines": {name: {dynamic_j,
// static_j, total_j}}, "events": {...}}; null when not configured.
nlohmann::json energy_to_json(const EnergyStats& e);

}  // namespace lpu
