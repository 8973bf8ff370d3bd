#include "host_pricing.h"

#include "model/host.h"

namespace lpu::sim {

int64_t graph_break_bytes(const Program& p, const HostOp& h) { return host_op_bytes(p, h); }

double graph_break_us(const ArchConfig& arch, int64_t bytes) { return host_op_us(arch, bytes); }

}  // namespace lpu::sim
