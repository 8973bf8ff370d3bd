// HBM: N channels behind an address interleaver, a TLM-2.0 target.
//
// Timing model (loosely timed, whole runs per transaction): a transaction is one contiguous
// run of bytes. It is rounded up to bursts, split across channels by the interleaving
// granule, and each channel serves its share at bandwidth/channels x efficiency, after the
// channel's previous reservation ends (first come, first served). The transaction completes
// when its last channel finishes, plus the access latency. Streams that share channels
// therefore queue behind each other: contention is modelled, not ignored.
#pragma once
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "model/sim_context.h"

namespace lpu::sim {

class Hbm : public sc_core::sc_module {
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

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);

  DeviceContext& ctx_;
  std::vector<double> channel_free_ps_;
  // Scratch of b_transport, kept to spare an allocation per transaction: bytes per channel,
  // and (for the trace) each channel group's busy window.
  std::vector<uint64_t> bytes_;
  std::vector<double> g_start_, g_end_;
  double per_channel_bytes_per_ps_;
  double latency_ps_;
  Counters counters_;
};

}  // namespace lpu::sim
