// What a graph break costs, priced as the simulator's host (model/host.h) prices `host.call`:
//   host.latency_us + (input + output bytes) / host.link_gbps + host.op_us
// For code that reports graph breaks without simulating (`lpu compile --emit schedule`, a
// manifest's breaks between graphs): one time model, and no SystemC header to include for it.
#pragma once
#include <cstdint>

#include "config/arch_config.h"
#include "isa/program.h"

namespace lpu::sim {

// Bytes a host op moves over the host link (inputs + output), from the program's buffer table.
int64_t graph_break_bytes(const Program& p, const HostOp& h);
// The host round trip that moves `bytes`, in microseconds.
double graph_break_us(const ArchConfig& arch, int64_t bytes);

}  // namespace lpu::sim
