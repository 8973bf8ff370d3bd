#include "model/engine.h"

#include "isa/operands.h"
#include "model/isu.h"
#include "support/error.h"

namespace lpu::sim {

Engine::Engine(sc_core::sc_module_name name, DeviceContext& ctx, Unit unit, int queue_depth, int workers)
    : sc_module(name), ctx_(ctx), depth_(queue_depth), workers_(workers), unit_(unit) {
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
    if (end > now) wait(ctx_.ps(end - now));
    Counters& c = counters_;
    if (--busy_ == 0) c.occupied_ps += sc_core::sc_time_stamp().to_double() - occupied_since_;
    c.busy_ps += end - start;
    const Instruction& done = ctx_.instr(i);
    const double work = instruction_work(done);
    c.work += work;
    ++c.instructions;
    auto& kc = ctx_.kernel_of(done);
    switch (opcode_info(done.opcode).arith) {
      case Arith::SxeFlops:  // a multiply and an add per MAC; packed weights: several per lane and cycle
        kc.sxe_flops += 2 * work;
        kc.sxe_lane_flops += 2 * work / ctx_.arch->sxe.packed_lanes_of(quant_format_name(done.quant.format));
        break;
      case Arith::VxeOps: kc.vxe_ops += work; break;
      case Arith::None: break;
    }
    if (ctx_.record_trace) {
      const Instruction& in = ctx_.instr(i);
      ctx_.trace.push_back({index_, in.kernel, i, start, end, print_instruction(in)});
    }
    isu_->retire(i);
  }
}

EngineReport Engine::make_report() const {
  EngineReport r;
  r.name = basename();
  r.busy_ps = counters_.busy_ps;
  r.stalled_ps = counters_.stalled_ps;
  r.work = counters_.work;
  r.instructions = counters_.instructions;
  r.workers = workers_;
  return r;
}

}  // namespace lpu::sim
