// HBM: N channels behind an address interleaver, a TLM-2.0 target.
//
// Timing model (loosely timed, whole runs per transaction): a transaction is one contiguous
// run of bytes. It is rounded up to bursts, split across channels by the interleaving
// granule, and each channel serves its share at bandwidth/channels x efficiency, after the
// channel's previous reservation ends (first come, first served). The transaction completes
// when its last channel finishes, plus the access latency. Streams that share channels
// therefore queue behind each other: contention is modelled, not ignored.
//
// Under memory.model: banks the timing is the bank model's instead (model/dram_banks.h):
// each pseudo-channel is a channel here, and the access latency is hbm.latency_ns less the
// row miss's DRAM time the bank model adds itself (tRCD + tCL): the controller, PHY and
// interconnect part of the path.
#pragma once
#include <tlm_utils/simple_target_socket.h>

#include <memory>
#include <tlm>

#include "model/dram_banks.h"
#include "model/sim_context.h"

namespace lpu::sim {

class Hbm : public sc_core::sc_module {
  friend class LayerMemo;

 public:
  tlm_utils::simple_target_socket<Hbm> socket;      // SMA/DMA path
  tlm_utils::simple_target_socket<Hbm> sxe_socket;  // weight streaming into the MAC trees

  Hbm(sc_core::sc_module_name name, DeviceContext& ctx);

  // Peak bandwidth x efficiency, bytes per picosecond per channel.
  double channel_bytes_per_ps() const { return per_channel_bytes_per_ps_; }
  // What it moved: bytes asked for, and bytes the channels moved (burst-rounded).
  struct Counters {
    uint64_t read_bytes = 0, write_bytes = 0, burst_bytes = 0;
  };
  const Counters& counters() const { return counters_; }
  // The bank model (memory.model: banks), else null.
  const DramBanks* banks() const { return banks_.get(); }

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  // The timing of one transaction of the burst-aligned run [lo, hi): when its last channel
  // finishes, before the access latency.
  double serve_bandwidth(uint64_t lo, uint64_t hi, double start);
  double serve_banks(uint64_t lo, uint64_t hi, bool is_write, double start);
  // Notes channel c's busy window [s, e) in the device's HBM windows and the trace's groups.
  void note_busy(size_t c, double s, double e);
  void note_group_busy(size_t c, double s, double e);  // the trace's part

  DeviceContext& ctx_;
  std::vector<double> channel_free_ps_;
  // Scratch of b_transport, kept to spare an allocation per transaction: bytes per channel
  // (zero between transactions), and (for the trace) each channel group's busy window.
  std::vector<uint64_t> bytes_;
  std::vector<double> g_start_, g_end_;
  size_t trace_groups_ = 0, per_group_ = 1;
  std::unique_ptr<DramBanks> banks_;
  double per_channel_bytes_per_ps_;
  double latency_ps_;
  Counters counters_;
};

}  // namespace lpu::sim
