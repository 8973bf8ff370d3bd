#include "model/engine.h"

#include "isa/operands.h"
#include "model/isu.h"
#include "model/wake_order.h"
#include "support/error.h"

namespace lpu::sim {

bool processes_are_threads(const ArchConfig& arch) {
  return arch.sxe.model == ArchConfig::Sxe::Model::Rtl || arch.vxe.model == ArchConfig::Vxe::Model::Rtl;
}

Engine::Engine(sc_core::sc_module_name name, DeviceContext& ctx, Unit unit, int queue_depth, int workers)
    : sc_module(name), ctx_(ctx), depth_(queue_depth), workers_(workers), unit_(unit) {
  wakes_ = std::make_unique<sc_core::sc_event[]>(static_cast<size_t>(workers));
  if (processes_are_threads(*ctx.arch)) {
    for (size_t w = 0; w < static_cast<size_t>(workers); ++w) sc_core::sc_spawn(sc_bind(&Engine::worker, this, w));
  } else {
    method_work_.resize(static_cast<size_t>(workers));
    sc_core::sc_spawn_options o;
    o.spawn_method();
    for (size_t w = 0; w < method_work_.size(); ++w)
      sc_core::sc_spawn(sc_bind(&Engine::worker_step, this, w), nullptr, &o);
  }
  if (ctx.sync) ctx.sync->idle_waits.push_back(&pushed_);
}

void Engine::push(const IssueTicket& t) {
  queue_.push_back({t, ctx_.now_ps()});
  queued_ = static_cast<int>(queue_.size());
  pushed_.notify(sc_core::SC_ZERO_TIME);
}

void Engine::worker(size_t which) {
  for (;;) {
    while (queue_.empty()) {
      if (ctx_.sync && ctx_.sync->ended) return;  // end_simulation(): the thread terminates
      wait(pushed_);
    }
    Started s;
    if (!start_next(s)) return;
    // execute() may itself have waited (the RTL SXE runs its clocked tree meanwhile).
    const double now = ctx_.now_ps();
    if (s.end > now && ctx_.wakes) {
      ctx_.wakes->after(s.end - now, WakeOrder::worker_rank(index_, which), wakes_[which]);
      wait(wakes_[which]);
    } else if (s.end > now) {
      wait(ctx_.ps(s.end - now));
    }
    finish(s);
  }
}

// The thread's loop cut at its waits: an activation resumes where the last one waited.
void Engine::worker_step(size_t which) {
  Started& s = method_work_[which];
  if (s.running) {
    s.running = false;
    finish(s);
  }
  for (;;) {
    if (queue_.empty()) {
      if (!(ctx_.sync && ctx_.sync->ended)) next_trigger(pushed_);
      return;
    }
    if (!start_next(s)) return;
    const double now = ctx_.now_ps();
    if (s.end > now) {
      s.running = true;
      if (ctx_.wakes) {
        ctx_.wakes->after(s.end - now, WakeOrder::worker_rank(index_, which), wakes_[which]);
        next_trigger(wakes_[which]);
      } else {
        next_trigger(ctx_.ps(s.end - now));
      }
      return;
    }
    finish(s);
  }
}

bool Engine::start_next(Started& s) {
  const Queued q = queue_.front();
  s.instr = q.ticket.instr;
  queue_.pop_front();
  queued_ = static_cast<int>(queue_.size());
  s.start = ctx_.now_ps();
  if (busy_++ == 0) occupied_since_ = s.start;
  try {
    s.end = execute(q.ticket, s.start);
  } catch (const InputError& e) {
    ctx_.error = e.what();
    sc_core::sc_stop();
    return false;
  }
  isu_->started(s.instr, s.end);
  // Logged at the start, not at retirement: the log then comes nearly in time order,
  // which attribute_span's sort profits from (the order is not otherwise seen).
  auto& kc = ctx_.kernel_of(ctx_.instr(s.instr));
  if (s.start > q.pushed_ps) kc.log.push_back({q.pushed_ps, s.start, Span::Issue});
  kc.log.push_back({s.start, s.end, occupancy()});
  return true;
}

void Engine::finish(const Started& s) {
  const size_t i = s.instr;
  Counters& c = counters_;
  if (--busy_ == 0) c.occupied_ps += ctx_.now_ps() - occupied_since_;
  c.busy_ps += s.end - s.start;
  const Instruction& done = ctx_.instr(i);
  const double work = instruction_work(done);
  c.work += work;
  ++c.instructions;
  auto& kc = ctx_.kernel_of(done);
  switch (opcode_info(done.opcode).arith) {
    case Arith::SxeFlops:  // a multiply and an add per MAC; packed weights: several per lane and cycle
      kc.sxe_flops += 2 * work;
      kc.sxe_lane_flops +=
          2 * work / (done.quant.on() ? ctx_.arch->sxe.packed_lanes_of(quant_format_name(done.quant.format)) : 1);
      break;
    case Arith::VxeOps: kc.vxe_ops += work; break;
    case Arith::None: break;
  }
  if (ctx_.record_trace) {
    const Instruction& in = ctx_.instr(i);
    ctx_.trace.push_back({index_, in.kernel, i, s.start, s.end, print_instruction(in)});
  }
  isu_->retire(i);
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
