// The host, as seen by the LPU for graph breaks: `host.call ID` ships the host op's input
// buffers from HBM over the host link, runs the op there (reference semantics) and ships the
// result back into HBM. One op at a time; its time is
//   host.latency_us + (input + output bytes) / host.link_gbps + host.op_us
// The link transfers are not HBM-model traffic (the link, not HBM, is the bottleneck); the
// bytes are reported per break (SimStats::graph_breaks).
#pragma once
#include "model/engine.h"

namespace lpu::sim {

class Host : public Engine {
 public:
  Host(sc_core::sc_module_name name, DeviceContext& ctx);

 protected:
  double execute(const IssueTicket& tk, double start_ps) override;
  Span occupancy() const override { return Span::Sync; }
  using Engine::add_to;
  void add_to(SimStats& s) const override;  // the graph breaks, in execution order

 private:
  // One executed host.call: its host-op index, link bytes and host time.
  struct Call {
    size_t host_op;
    int64_t bytes;
    double host_us;
  };
  std::vector<Call> calls_;
};

// Bytes a host op moves over the link (inputs + output), from the program's buffer table.
int64_t host_op_bytes(const Program& p, const HostOp& h);
// The time model above, in microseconds.
double host_op_us(const ArchConfig& arch, int64_t bytes);

}  // namespace lpu::sim
