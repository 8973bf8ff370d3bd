#include "energy.h"

namespace lpu {

EnergyEvents& EnergyEvents::operator+=(const EnergyEvents& o) {
  hbm_read_bytes += o.hbm_read_bytes;
  hbm_write_bytes += o.hbm_write_bytes;
  sxe_macs += o.sxe_macs;
  sxe_dequantised += o.sxe_dequantised;
  for (const auto& [k, v] : o.vxe_ops) vxe_ops[k] += v;
  lmu_read_bytes += o.lmu_read_bytes;
  lmu_write_bytes += o.lmu_write_bytes;
  esl_bytes += o.esl_bytes;
  return *this;
}

EnergyStats compute_energy(const EnergyEvents& ev, const ArchConfig& arch, double seconds, int devices) {
  EnergyStats s;
  const ArchConfig::Energy& e = arch.energy;
  if (!e.configured) return s;
  s.configured = true;
  s.events = ev;
  for (const auto& c : energy_vxe_classes()) s.events.vxe_ops.emplace(c, 0.0);  // every class, zero or not
  s.devices = devices;
  s.seconds = seconds;
  constexpr double pj = 1e-12;
  auto bits = [](uint64_t bytes) { return static_cast<double>(bytes) * 8.0; };
  for (const auto& name : energy_engines()) s.engines[name] = {};
  s.engines["hbm"].dynamic_j =
      (bits(ev.hbm_read_bytes) * e.hbm_read_pj_per_bit + bits(ev.hbm_write_bytes) * e.hbm_write_pj_per_bit) * pj;
  s.engines["sxe"].dynamic_j = (ev.sxe_macs * e.sxe_pj_per_mac + ev.sxe_dequantised * e.sxe_pj_per_dequant) * pj;
  double vxe = 0;
  for (const auto& c : energy_vxe_classes()) vxe += s.events.vxe_ops.at(c) * e.vxe_pj(c);
  s.engines["vxe"].dynamic_j = vxe * pj;
  s.engines["lmu"].dynamic_j = (static_cast<double>(ev.lmu_read_bytes) * e.lmu_read_pj_per_byte +
                                static_cast<double>(ev.lmu_write_bytes) * e.lmu_write_pj_per_byte) *
                               pj;
  s.engines["esl"].dynamic_j = bits(ev.esl_bytes) * e.esl_pj_per_bit * pj;
  // dma and isu: static only (their data movement is charged to HBM and LMU).
  for (const auto& name : energy_engines()) {
    EngineEnergy& g = s.engines[name];
    g.static_j = e.static_w(name) * seconds * devices;
    s.dynamic_j += g.dynamic_j;
    s.static_j += g.static_j;
  }
  return s;
}

nlohmann::json energy_to_json(const EnergyStats& s) {
  if (!s.configured) return nullptr;
  nlohmann::json eng = nlohmann::json::object();
  for (const auto& name : energy_engines()) {
    const EngineEnergy& g = s.engines.at(name);
    eng[name] = {{"dynamic_j", g.dynamic_j}, {"static_j", g.static_j}, {"total_j", g.total_j()}};
  }
  const EnergyEvents& ev = s.events;
  nlohmann::json vx = nlohmann::json::object();
  for (const auto& [k, v] : ev.vxe_ops) vx[k] = v;
  return {{"total_j", s.total_j()},
          {"dynamic_j", s.dynamic_j},
          {"static_j", s.static_j},
          {"seconds", s.seconds},
          {"devices", s.devices},
          {"engines", eng},
          {"events",
           {{"hbm_read_bytes", ev.hbm_read_bytes},
            {"hbm_write_bytes", ev.hbm_write_bytes},
            {"sxe_macs", ev.sxe_macs},
            {"sxe_dequantised", ev.sxe_dequantised},
            {"vxe_ops", vx},
            {"lmu_read_bytes", ev.lmu_read_bytes},
            {"lmu_write_bytes", ev.lmu_write_bytes},
            {"esl_bytes", ev.esl_bytes}}}};
}

}  // namespace lpu
