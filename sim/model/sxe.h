// SXE: the matrix engine. `mac_trees` MAC trees of `lanes` lanes; every tree is fed by its
// share of the HBM channels (SMA: weights stream straight from HBM into the trees, never
// through the LMU), while the activation rows are broadcast from the LMU.
// One sxe.gemm [M, K, N]: the weight runs are sent to the HBM model at the start (so they
// contend with DMA traffic on the same channels); the trees finish when both the compute
// (sxe_timing.h, full-rate stream) and the stream itself are done, plus the pipeline drain.
// With sxe.model: rtl the compute part comes from a verilated MAC tree instead (sxe_rtl.h).
// `sxe.streams` gemms may be in flight at once (their weight streams overlap, so the HBM access
// latency of one hides behind the stream of the one before); their MAC work runs in order
// (with sxe.model: rtl, one gemm at a time through the verilated tree).
#pragma once
#include <memory>

#include <tlm_utils/simple_initiator_socket.h>

#include "model/engine.h"
#include "model/lmu.h"
#include "model/sxe_rtl.h"

namespace lpu::sim {

class Sxe : public Engine {
  friend class LayerMemo;

 public:
  tlm_utils::simple_initiator_socket<Sxe> hbm_socket;
  Sxe(sc_core::sc_module_name name, DeviceContext& ctx, Lmu& lmu);

 protected:
  double execute(const IssueTicket& tk, double start_ps) override;
  EngineReport make_report() const override;
  using Engine::add_to;
  void add_to(SimStats& s) const override;       // what the RTL tree did (sxe.model: rtl)
  void add_to(EnergyEvents& ev) const override;  // its MACs

 private:
  void compute(const Instruction& in);
  int64_t row_slab_offset(const Instruction& in, int64_t m) const;
  double rtl_end(const Instruction& in, double start_ps, double hbm_done);
  SxeRtlRun run_rtl_checked(const Instruction& in, int64_t cols, double beats_per_cycle);
  Lmu& lmu_;
  std::unique_ptr<SxeRtlUnit> rtl_;  // sxe.model: rtl only
  // One verilated tree: the workers' gemms take it in issue order (a ticket lock: sc_mutex
  // lets the worker that just released it take it again, starving the others).
  uint64_t rtl_next_ticket_ = 0, rtl_serving_ = 0;
  sc_core::sc_event rtl_turn_;
  std::vector<uint8_t> staging_;
  double trees_free_ps_ = 0;
  // sxe.model: rtl -- what the verilated tree did, summed over the sxe.gemm instructions.
  double dequantised_ = 0;       // packed weights through the dequantiser (energy)
  int widest_packed_lanes_ = 1;  // the most packed weights a lane took per cycle (the report's peak)
  uint64_t rtl_gemms_ = 0, rtl_cycles_ = 0, rtl_stall_cycles_ = 0;  // when the MAC trees take the next gemm's first beat
  // Scratch of execute() (which never waits between filling and using them), kept to spare
  // allocations per instruction: the weight runs and the payload sent for each.
  struct Run {
    int64_t first, elems;
  };
  std::vector<Run> runs_;
  tlm::tlm_generic_payload trans_;
};

}  // namespace lpu::sim
