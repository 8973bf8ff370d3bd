#include "model/host.h"

#include <cmath>

#include "graph/attrs_json.h"
#include "model/numeric.h"
#include "ref/host_op.h"
#include "support/error.h"

namespace lpu::sim {

namespace {
const BufferDecl& buffer_of(const Program& p, const std::string& name, const HostOp& h) {
  const BufferDecl* b = p.find_buffer(name);
  if (!b) throw InputError(strcat("host op ", h.op, " (node ", h.node, ") names buffer ", name, ", which has no .buffer"));
  if (b->quant.on())  // the host reads and writes tensors in their dtype, not packed blocks
    throw InputError(strcat("host op ", h.op, " (node ", h.node, ") names buffer ", name, ", which is stored packed (",
                            quant_str(b->quant), "): only sxe.gemm and sxe.gemm_gather read packed weights"));
  return *b;
}
}  // namespace

int64_t host_op_bytes(const Program& p, const HostOp& h) {
  int64_t bytes = buffer_of(p, h.output, h).type.bytes();
  for (const auto& in : h.inputs) bytes += buffer_of(p, in, h).type.bytes();
  return bytes;
}

double host_op_us(const ArchConfig& arch, int64_t bytes) {
  return arch.host.latency_us + static_cast<double>(bytes) / (arch.host.link_gbps * 1e3) + arch.host.op_us;
}

Host::Host(sc_core::sc_module_name name, DeviceContext& ctx) : Engine(name, ctx, Unit::Host, 1, 1) {}

double Host::execute(const IssueTicket& tk, double start_ps) {
  const size_t i = tk.instr;
  const Program& p = *ctx_.program;
  const Instruction& in = ctx_.instr(i);
  if (in.host_op < 0 || in.host_op >= static_cast<int64_t>(p.host_ops.size()))
    throw InputError(strcat("device ", ctx_.device, ": host.call ", in.host_op, " has no .hostop"));
  const HostOp& h = p.host_ops[static_cast<size_t>(in.host_op)];
  int64_t bytes = host_op_bytes(p, h);
  double us = host_op_us(*ctx_.arch, bytes);
  if (ctx_.functional) {
    std::vector<Tensor> args;
    for (const auto& name : h.inputs) {
      const BufferDecl& b = buffer_of(p, name, h);
      Tensor t(b.type);
      int64_t eb = dtype_bytes(b.type.dtype);
      for (int64_t k = 0; k < t.numel(); ++k)
        t.data[static_cast<size_t>(k)] = load_element(&ctx_.hbm_data[b.hbm_addr + static_cast<uint64_t>(k * eb)], b.type.dtype);
      args.push_back(std::move(t));
    }
    std::vector<const Tensor*> ptrs;
    for (const auto& t : args) ptrs.push_back(&t);
    const BufferDecl& ob = buffer_of(p, h.output, h);
    Tensor out = run_host_op(h.op, h.node, attrs_from_json(h.attrs_json), ob.type, ptrs);
    int64_t eb = dtype_bytes(ob.type.dtype);
    for (int64_t k = 0; k < out.numel(); ++k)
      store_element(&ctx_.hbm_data[ob.hbm_addr + static_cast<uint64_t>(k * eb)], ob.type.dtype, out.data[static_cast<size_t>(k)]);
  }
  calls_.push_back({static_cast<size_t>(in.host_op), bytes, us});
  return start_ps + std::ceil(us * 1e6);  // whole picoseconds, as every duration of the model
}

void Host::add_to(SimStats& s) const {
  for (const auto& c : calls_) {
    const HostOp& h = ctx_.program->host_ops[c.host_op];
    s.graph_breaks.push_back({h.node, h.op, c.bytes, c.host_us});
  }
}

}  // namespace lpu::sim
