#include "model/engine.h"

#include "model/isu.h"
#include "support/error.h"

namespace lpu::sim {

// The useful work of an instruction, in its engine's unit (simulator.h: EngineStats): a
// matrix multiply's MACs, a vector instruction's element operations, the bytes a DMA moves.
double useful_work(const Instruction& in) {
  double rows = static_cast<double>(in.rows), cols = static_cast<double>(in.cols);
  switch (in.opcode) {
    case Opcode::SxeGemm: return rows * static_cast<double>(in.depth) * cols;
    case Opcode::VxeOp:
    case Opcode::VxeReduce:
    case Opcode::VxeMov: return rows * cols;
    case Opcode::DmaLoad:
    case Opcode::DmaStore:
    case Opcode::DmaGather: return rows * cols * static_cast<double>(dtype_bytes(in.dtype));
    default: return 0;
  }
}

Engine::Engine(sc_core::sc_module_name name, DeviceContext& ctx, int queue_depth, int workers)
    : sc_module(name), ctx_(ctx), depth_(queue_depth), workers_(workers) {
  index_ = static_cast<int>(ctx.engine_names.size());
  ctx.engine_names.push_back(basename());
  ctx.engines.emplace_back();
  for (int w = 0; w < workers; ++w) sc_core::sc_spawn(sc_bind(&Engine::worker, this));
  if (ctx.sync) ctx.sync->idle_waits.push_back(&pushed_);
}

void Engine::push(const IssueTicket& t) {
  queue_.push_back({t, sc_core::sc_time_stamp().to_double()});
  queued_ = static_cast<int>(queue_.size());
  pushed_.notify(sc_core::SC_ZERO_TIME);
}

void Engine::worker() {
  for (;;) {
    while (queue_.empty()) {
      if (ctx_.sync && ctx_.sync->ended) return;  // end_simulation(): the thread terminates
      wait(pushed_);
    }
    const Queued q = queue_.front();
    const size_t i = q.ticket.instr;
    queue_.pop_front();
    queued_ = static_cast<int>(queue_.size());
    double start = sc_core::sc_time_stamp().to_double();
    if (busy_++ == 0) occupied_since_ = start;
    double end;
    try {
      end = execute(q.ticket, start);
    } catch (const InputError& e) {
      ctx_.error = e.what();
      sc_core::sc_stop();
      return;
    }
    isu_->started(i, end);
    {
      // Logged at the start, not at retirement: the log then comes nearly in time order,
      // which attribute_span's sort profits from (the order is not otherwise seen).
      auto& kc = ctx_.kernel_of(ctx_.instr(i));
      if (start > q.pushed_ps) kc.log.push_back({q.pushed_ps, start, Span::Issue});
      kc.log.push_back({start, end, occupancy()});
    }
    // execute() may itself have waited (the RTL SXE runs its clocked tree meanwhile).
    double now = sc_core::sc_time_stamp().to_double();
    if (end > now) wait(sc_core::sc_time(end - now, sc_core::SC_PS));
    auto& c = ctx_.engines[static_cast<size_t>(index_)];
    if (--busy_ == 0) c.occupied_ps += sc_core::sc_time_stamp().to_double() - occupied_since_;
    c.busy_ps += end - start;
    const Instruction& done = ctx_.instr(i);
    const double work = useful_work(done);
    c.work += work;
    ++c.instructions;
    auto& kc = ctx_.kernel_of(done);
    if (done.opcode == Opcode::SxeGemm) kc.sxe_flops += 2 * work;  // a multiply and an add per MAC
    if (done.opcode == Opcode::VxeOp || done.opcode == Opcode::VxeReduce) kc.vxe_ops += work;
    if (ctx_.record_trace) {
      const Instruction& in = ctx_.instr(i);
      ctx_.trace.push_back({index_, in.kernel, i, start, end, print_instruction(in)});
    }
    isu_->retire(i);
  }
}

}  // namespace lpu::sim
