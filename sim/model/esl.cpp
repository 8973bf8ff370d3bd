#include "model/esl.h"

#include "model/esl_link.h"
#include "support/error.h"

namespace lpu::sim {

Esl::Esl(sc_core::sc_module_name name, DeviceContext& ctx) : Engine(name, ctx, Unit::Esl, 4, 1) {}

double Esl::execute(const IssueTicket& tk, double start_ps) {
  const size_t i = tk.instr;
  const Instruction& in = ctx_.instr(i);
  SyncState& s = *ctx_.sync;
  int target = static_cast<int>(in.peer);
  if (target < 0 || target >= s.devices)
    throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " (line ", in.line,
                            ") targets device ", target, " but the config has ", s.devices));
  const int64_t R = in.rows, C = in.cols;
  uint64_t bytes = static_cast<uint64_t>(R * C * 4);  // LMU tiles are fp32
  if (in.lm_addr + bytes > static_cast<uint64_t>(ctx_.arch->lmu_bytes()))
    throw InputError(
        strcat("device ", ctx_.device, ": ", print_instruction(in), " writes beyond the receiver's local memory"));
  ctx_.energy.esl_bytes += bytes;
  ctx_.energy.lmu_read_bytes += bytes;  // the tile leaves the sender's local memory
  bytes_ += bytes;
  ++sends_;
  double link_end = start_ps + static_cast<double>(bytes) / (ctx_.arch->esl.bandwidth_gbps * 1e-3);
  double arrive = link_end + ctx_.arch->esl.latency_ns * 1000.0;
  // Functional: the tile as it is now, written into the receiver when it arrives.
  std::vector<float> tile;
  if (ctx_.functional) {
    const Operand& src = in.srcs.at(0);
    tile.resize(static_cast<size_t>(R * C));
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        int64_t off = static_cast<int64_t>(src.addr / 4) + r * src.rs + c * src.cs;
        if (off < 0 || off >= static_cast<int64_t>(ctx_.lmu_data.size()))
          throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " reads outside local memory"));
        tile[static_cast<size_t>(r * C + c)] = ctx_.lmu_data[static_cast<size_t>(off)];
      }
  }
  EslLink::Transfer t;
  t.target = target;
  t.token = in.token;
  t.dst = in.lm_addr;
  t.bytes = bytes;
  t.tile = std::move(tile);
  const double now = ctx_.now_ps();
  s.link->send(ctx_.ps(arrive - now), std::move(t));
  return link_end;
}

void Esl::add_to(DeviceStats& d) const {
  d.esl_bytes = bytes_;
  d.esl_sends = sends_;
}

}  // namespace lpu::sim
