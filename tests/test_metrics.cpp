// Metrics that mean what they say (issue 13): utilisation is useful work over peak work,
// busy time is reported apart, and the HBM, DMA and engine figures agree with each other.
#include <gtest/gtest.h>

#include "jobs/jobs.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
ArchConfig arch(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/" + name + ".yaml", sets);
}
const EngineStats& engine(const RunOutcome& o, const std::string& name) {
  for (const auto& e : o.sim.stats.engines)
    if (e.name == name) return e;
  throw std::runtime_error("no engine " + name);
}
WorkloadSpec llama_decode_layer() {
  WorkloadSpec w = resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/llama2-7b-decode.yaml");
  w.layers = 1;
  return w;
}
}  // namespace

// LLaMA-2-7B decode streams weights at the HBM rate, which 32 MAC trees already match: 64
// trees finish no sooner, so they are half as utilised, while the SXE stays as busy.
TEST(Metrics, SxeUtilisationCountsMacsNotBusyTime) {
  RunOutcome t32 = run_job(llama_decode_layer(), arch("lpu-asic"), "greedy", false);
  RunOutcome t64 = run_job(llama_decode_layer(), arch("lpu-asic", {"sxe.mac_trees=64"}), "greedy", false);
  const EngineStats& a = engine(t32, "sxe");
  const EngineStats& b = engine(t64, "sxe");
  EXPECT_EQ(a.work_unit, "MACs");
  EXPECT_DOUBLE_EQ(a.work, b.work);  // the same MACs
  EXPECT_NEAR(b.utilization, a.utilization * t32.sim.stats.cycles / (2.0 * t64.sim.stats.cycles), 1e-9);
  EXPECT_LT(b.utilization, 0.6 * a.utilization);
  EXPECT_GT(a.busy_fraction, a.utilization);  // busy is not the same as used
  EXPECT_GT(b.busy_fraction, 0.5);
}

// Every byte the DMA moves crosses HBM, but the SXE streams weights itself: DMA bytes are a
// part of HBM bytes, so DMA utilisation (bytes / peak) never exceeds HBM utilisation.
TEST(Metrics, DmaAndHbmUtilisationAreBytesOverPeak) {
  RunOutcome o = run_job(llama_decode_layer(), arch("lpu-asic"), "greedy", false);
  const auto& s = o.sim.stats;
  const EngineStats& dma = engine(o, "dma");
  EXPECT_EQ(dma.work_unit, "bytes");
  EXPECT_LE(dma.work, static_cast<double>(s.hbm_read_bytes + s.hbm_write_bytes));
  EXPECT_LE(dma.utilization, s.hbm_bandwidth_utilization);
  double peak = o.arch.hbm_bytes_per_cycle() * static_cast<double>(s.cycles);
  EXPECT_NEAR(s.hbm_bandwidth_utilization, static_cast<double>(s.hbm_read_bytes + s.hbm_write_bytes) / peak, 1e-5);
  for (const auto& e : s.engines) {
    EXPECT_GE(e.utilization, 0.0) << e.name;
    EXPECT_LE(e.utilization, 1.0 + 1e-9) << e.name;
    EXPECT_LE(e.busy_fraction, 1.0 + 1e-9) << e.name;
  }
}

// VXE work is its element operations: the same on any number of lanes.
TEST(Metrics, VxeUtilisationCountsElementOps) {
  WorkloadSpec w = resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/ln_gelu_add.yaml");
  RunOutcome a = run_job(w, arch("lpu-small"), "greedy", false);
  RunOutcome b = run_job(w, arch("lpu-small", {"vxe.lanes=128"}), "greedy", false);
  const EngineStats& va = engine(a, "vxe");
  const EngineStats& vb = engine(b, "vxe");
  EXPECT_EQ(va.work_unit, "element_ops");
  EXPECT_DOUBLE_EQ(va.work, vb.work);
  EXPECT_GT(va.work, 0.0);
  EXPECT_NEAR(va.utilization, va.work / (va.peak_work_per_cycle * static_cast<double>(a.sim.stats.cycles)), 1e-12);
}
