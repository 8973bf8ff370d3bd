#include "model/isu.h"

#include <algorithm>

#include "isa/operands.h"
#include "model/esl_link.h"
#include "model/layer_memo.h"
#include "model/wake_order.h"
#include "support/error.h"

namespace lpu::sim {

namespace {
Range operand_range(uint64_t addr, int64_t R, int64_t C, int64_t rs, int64_t cs, int64_t eb) {
  int64_t lo = std::min<int64_t>(0, (R - 1) * rs) + std::min<int64_t>(0, (C - 1) * cs);
  int64_t hi = std::max<int64_t>(0, (R - 1) * rs) + std::max<int64_t>(0, (C - 1) * cs);
  int64_t base = static_cast<int64_t>(addr);
  return {static_cast<uint64_t>(base + lo * eb), static_cast<uint64_t>(base + (hi + 1) * eb)};
}

// From the opcode table's operand roles (isa/operands.h); the receiver's memory of an
// esl.send is another device's, outside this scoreboard.
void add_ranges(const Instruction& in, const Program& p, Footprint& f) {
  for_each_operand(in, [&f](const OperandAccess& a) {
    if (a.memory == OperandAccess::Memory::RemoteLmu) return;
    Range r = operand_range(a.addr, a.rows, a.cols, a.rs, a.cs, a.elem_bytes);
    if (a.quant.on()) {  // packed weights: whole blocks (non-negative strides)
      int64_t lo = 0, hi = 0;
      packed_span(a.quant, 0, (a.rows - 1) * a.rs + (a.cols - 1) * a.cs, lo, hi);
      r = {a.addr + static_cast<uint64_t>(lo), a.addr + static_cast<uint64_t>(hi)};
    }
    const bool lmu = a.memory == OperandAccess::Memory::Lmu;
    (lmu ? (a.write ? f.lm_writes : f.lm_reads) : (a.write ? f.hbm_writes : f.hbm_reads)).push_back(r);
  });
  if (!has_role(in.opcode, role::HostBuffers)) return;
  if (in.host_op < 0 || in.host_op >= static_cast<int64_t>(p.host_ops.size())) return;  // Host::execute reports it
  const HostOp& h = p.host_ops[static_cast<size_t>(in.host_op)];
  auto whole = [&p](const std::string& name) {
    const BufferDecl* b = p.find_buffer(name);
    return b ? Range{b->hbm_addr, b->hbm_addr + static_cast<uint64_t>(b->bytes())} : Range{};
  };
  for (const auto& name : h.inputs) f.hbm_reads.push_back(whole(name));
  f.hbm_writes.push_back(whole(h.output));
}
}  // namespace

void footprint(const Instruction& in, const Program& p, Footprint& f) {
  f.clear();
  add_ranges(in, p, f);
  f.close_hulls();
}

uint32_t Isu::new_footprint() {
  if (free_footprints_.empty()) {
    footprints_.emplace_back();
    return static_cast<uint32_t>(footprints_.size() - 1);
  }
  const uint32_t i = free_footprints_.back();
  free_footprints_.pop_back();
  return i;
}

Isu::Isu(sc_core::sc_module_name name, DeviceContext& ctx) : sc_module(name), ctx_(ctx) {
  engines_.fill(nullptr);
  if (processes_are_threads(*ctx.arch)) {
    SC_THREAD(thread_run);
  } else {
    SC_METHOD(method_run);
  }
}

void Isu::thread_run() {
  for (Wake w = guarded_step(); !w.done; w = guarded_step()) {
    if (w.event) {
      wait(*w.event);
    } else if (ctx_.wakes) {
      ctx_.wakes->after(w.delay.to_double(), WakeOrder::kIsuRank, wake_);
      wait(wake_);
    } else {
      wait(w.delay);
    }
  }
}

void Isu::method_run() {
  if (ctx_.memo) ctx_.memo->at_isu_activation();
  const Wake w = guarded_step();
  if (w.done) return;
  if (w.event) {
    next_trigger(*w.event);
  } else if (ctx_.wakes) {
    ctx_.wakes->after(w.delay.to_double(), WakeOrder::kIsuRank, wake_);
    next_trigger(wake_);
  } else {
    next_trigger(w.delay);
  }
}

// Bad input found while running (a token for a device that does not exist) stops the
// simulation with the message; simulate() rethrows it as an InputError.
Isu::Wake Isu::guarded_step() {
  try {
    return step();
  } catch (const InputError& e) {
    ctx_.error = e.what();
    sc_core::sc_stop();
    phase_ = Phase::Done;
    return {nullptr, {}, true};
  }
}

namespace {
inline bool any_overlap(const Ranges& a, const Ranges& b) {
  if (!a.hull().overlaps(b.hull())) return false;
  if (a.size() == 1 && b.size() == 1) return true;  // each is its hull
  for (const auto& x : a)
    for (const auto& y : b)
      if (x.overlaps(y)) return true;
  return false;
}
// A memory whose hulls do not overlap has no overlapping ranges (Footprint::close_hulls).
bool conflicts(const Footprint& f, const Footprint& g) {
  const bool lm =
      f.lm_hull.overlaps(g.lm_hull) && (any_overlap(f.lm_reads, g.lm_writes) || any_overlap(f.lm_writes, g.lm_reads) ||
                                        any_overlap(f.lm_writes, g.lm_writes));
  return lm || (f.hbm_hull.overlaps(g.hbm_hull) &&
                (any_overlap(f.hbm_reads, g.hbm_writes) || any_overlap(f.hbm_writes, g.hbm_reads) ||
                 any_overlap(f.hbm_writes, g.hbm_writes)));
}
}  // namespace

Isu::InFlight* Isu::find_in_flight(size_t id) {
  for (auto& g : in_flight_)
    if (g.id == id) return &g;
  return nullptr;
}

void Isu::started(size_t instr, double end_ps) {
  if (InFlight* g = find_in_flight(instr)) g->end_ps = end_ps;
}

void Isu::retire(size_t instr) {
  if (InFlight* g = find_in_flight(instr)) {
    if (g->prefetching) --prefetching_;
    free_footprints_.push_back(g->f);
    if (g != &in_flight_.back()) *g = std::move(in_flight_.back());
    in_flight_.pop_back();
  }
  in_flight_count_ = static_cast<int>(in_flight_.size());
  auto& kc = ctx_.kernels[static_cast<size_t>(std::max(ctx_.instr(instr).kernel, 0))];
  kc.last_retire_ps = std::max(kc.last_retire_ps, ctx_.now_ps());
  if (instr >= ctx_.program->code.size()) ctx_.instances.erase(instr);
  retired_.notify(sc_core::SC_ZERO_TIME);
}

Engine* Isu::engine_for(Opcode op) const {
  Engine* e = engines_[static_cast<size_t>(opcode_unit(op))];
  if (!e) throw InternalError(strcat("isu: no engine for ", opcode_name(op)));
  return e;
}

// Fetches the next instruction into the window; false at the end of the code. Loops are
// expanded here: an instruction fetched in a later iteration is a fresh instance (its own
// issue id) with its addresses advanced by iteration x step.
bool Isu::fetch() {
  const auto& code = ctx_.program->code;
  for (; pc_ < code.size(); ++pc_) {
    // A loop whose body takes no simulated time spins here: the wall clock stops it.
    if (past_wall_deadline()) {
      wall_clock_exceeded_ = true;
      return false;
    }
    const Instruction& base = code[pc_];
    if (base.opcode == Opcode::LoopBegin) {
      loops_.push_back({pc_, base.token, 0});
      continue;
    }
    if (base.opcode == Opcode::LoopEnd) {
      if (loops_.empty())
        throw InputError(strcat("device ", ctx_.device, ": endloop without loop at instruction ", pc_));
      if (++loops_.back().iter < loops_.back().count)
        pc_ = loops_.back().begin;
      else
        loops_.pop_back();
      continue;
    }
    size_t i = pc_;
    if (!loops_.empty() && loops_.back().iter > 0) {
      Instruction inst = base;
      int64_t k = loops_.back().iter;
      inst.hbm_addr = static_cast<uint64_t>(static_cast<int64_t>(inst.hbm_addr) + inst.hbm_step * k);
      inst.lm_addr = static_cast<uint64_t>(static_cast<int64_t>(inst.lm_addr) + inst.lm_step * k);
      if (inst.acc) inst.acc_addr = static_cast<uint64_t>(static_cast<int64_t>(inst.acc_addr) + inst.lm_step * k);
      for (auto& s : inst.srcs)
        if (!s.immediate) s.addr = static_cast<uint64_t>(static_cast<int64_t>(s.addr) + inst.lm_step * k);
      inst.hbm_step = inst.lm_step = 0;
      i = next_instance_++;
      ctx_.instances.emplace(i, std::move(inst));
    }
    ++pc_;
    const Instruction& in = ctx_.instr(i);
    Pending p;
    p.id = i;
    p.fetched_ps = ctx_.now_ps();
    p.barrier = opcode_unit(in.opcode) == Unit::Isu;
    if (!p.barrier) {
      p.engine = engine_for(in.opcode);
      p.f = new_footprint();
      footprint(in, *ctx_.program, footprints_[p.f]);
      count_in_window(p.engine, 1);
    }
    window_.push_back(std::move(p));
    return true;
  }
  return false;
}

// Whether window entry `k` may issue now: no earlier unissued entry of its engine (engines
// take their instructions in program order) or in conflict with it (RAW/WAR/WAW against
// instructions before it in program order), no hazard against an in-flight instruction
// except the chaining / weight-prefetch cases, and room in its engine's queue. Sets the
// entry's `inputs_ready_ps` (chaining, prefetch) and `hazard_clear_ps`.
// A verdict remembered as Pending::blocker returns at once (still_blocked).
Isu::Verdict Isu::check(size_t k) {
  Pending& p = window_[k];
  if (p.blocker != kNobody && still_blocked(k)) return p.blocked;
  p.blocker = kNobody;
  const Footprint& pf = fp(p.f);
  for (size_t j = 0; j < k; ++j)
    if (window_[j].barrier || window_[j].engine == p.engine || conflicts(pf, fp(window_[j].f))) {
      p.blocker = window_[j].id;
      p.blocked = Verdict::Order;
      return Verdict::Order;
    }
  const bool chaining = ctx_.arch->isu.chaining, prefetch = ctx_.arch->isu.weight_prefetch;
  const Engine* vxe = engines_[static_cast<size_t>(Unit::Vxe)];
  const Engine* sxe = engines_[static_cast<size_t>(Unit::Sxe)];
  double ready = 0;
  bool prefetching = false;
  const bool in_order = p.engine->in_order();
  for (const InFlight& g : in_flight_) {
    if (g.engine == p.engine && in_order) continue;
    if (!g.lm_hull.overlaps(pf.lm_hull) && !g.hbm_hull.overlaps(pf.hbm_hull)) continue;  // as conflicts() would say
    const Footprint& gf = fp(g.f);
    if (!conflicts(pf, gf)) continue;
    bool raw_only = !any_overlap(pf.lm_writes, gf.lm_reads) && !any_overlap(pf.lm_writes, gf.lm_writes) &&
                    !any_overlap(pf.hbm_reads, gf.hbm_writes) && !any_overlap(pf.hbm_writes, gf.hbm_reads) &&
                    !any_overlap(pf.hbm_writes, gf.hbm_writes);
    // Chaining: a VXE op reading what a running sxe.gemm writes (and nothing else in
    // conflict) may issue now; it cannot finish before the producer's last result plus its
    // own latency.
    const bool may_chain = chaining && p.engine == vxe && g.engine == sxe && raw_only;
    if (may_chain && g.end_ps >= 0) {
      ready = std::max(ready, g.end_ps);
      continue;
    }
    // Weight prefetch: an sxe.gemm whose activation is still being produced (by a running
    // instruction) may start streaming its weights; its MAC work waits for the activation.
    // At most isu.prefetch_depth such gemms are in flight.
    // (Not an sxe.gemm_gather: which weights it streams depends on its row indices.)
    const bool may_prefetch =
        prefetch && p.engine == sxe && raw_only && ctx_.instr(p.id).opcode != Opcode::SxeGemmGather;
    if (may_prefetch && g.end_ps >= 0 && prefetching_ < ctx_.arch->isu.prefetch_depth) {
      ready = std::max(ready, g.end_ps);
      prefetching = true;
      continue;
    }
    // Neither can ever apply: the hazard lasts while `g` is in flight.
    if (!may_chain && !may_prefetch) {
      p.blocker = g.id;
      p.blocked = Verdict::Hazard;
    }
    return Verdict::Hazard;
  }
  if (p.hazard_clear_ps < 0) p.hazard_clear_ps = ctx_.now_ps();
  if (p.engine->full()) return Verdict::Queue;
  p.inputs_ready_ps = ready;
  p.prefetching = prefetching;
  return Verdict::Issue;
}

// Whether entry k's blocker is still there. An Order blocker stays earlier in the window
// (entries leave it, none comes before k), and with it the verdict, since entries before k
// only leave: no new Order. A Hazard blocker's conflict with k was found with every earlier
// entry of the window unable to order k, which stays so (they only leave). An id names one
// instruction: one fetched again under the same id (an inner loop's first iteration) is
// the same instruction with the same footprint and engine.
bool Isu::still_blocked(size_t k) const {
  const size_t b = window_[k].blocker;
  if (window_[k].blocked == Verdict::Order) {
    for (size_t j = 0; j < k; ++j)
      if (window_[j].id == b) return true;
    return false;
  }
  for (const InFlight& g : in_flight_)
    if (g.id == b) return true;
  return false;
}

void Isu::count_in_window(const Engine* e, int delta) {
  const size_t i = static_cast<size_t>(e->engine_index());
  window_entries_[i] = static_cast<uint16_t>(window_entries_[i] + delta);
  if (window_entries_[i])
    window_engines_ |= 1u << i;
  else
    window_engines_ &= ~(1u << i);
}

void Isu::issue(size_t k) {
  Pending p = std::move(window_[k]);
  window_.erase(window_.begin() + static_cast<std::ptrdiff_t>(k));
  count_in_window(p.engine, -1);
  const Instruction& in = ctx_.instr(p.id);
  double now = ctx_.now_ps();
  double t1 = p.hazard_clear_ps < 0 ? now : p.hazard_clear_ps;
  if (p.prefetching) ++prefetching_;
  const Footprint& f = fp(p.f);
  in_flight_.push_back({p.id, p.f, p.engine, -1.0, p.prefetching, f.lm_hull, f.hbm_hull});
  in_flight_count_ = static_cast<int>(in_flight_.size());
  ++counters_.issued;
  if (k > 0) ++counters_.issued_out_of_order;
  auto& kc = ctx_.kernel_of(in);
  if (kc.first_issue_ps < 0) kc.first_issue_ps = now;
  ++kc.instructions;
  // Waiting on the scoreboard (or behind an earlier instruction of the window) is dependency
  // time of its kernel; waiting for a queue slot and the issue slot itself are issue-path time.
  if (t1 > p.fetched_ps) kc.log.push_back({p.fetched_ps, t1, Span::Dependency});
  if (now > t1) kc.log.push_back({t1, now, Span::Issue});
  p.engine->push({p.id, p.inputs_ready_ps});
}

Isu::Wake Isu::step() {
  const size_t dev = static_cast<size_t>(ctx_.device);
  Wake w;
  for (;;) {
    switch (phase_) {
      case Phase::Start:
        issue_time_ = ctx_.cycles(ctx_.arch->isu.issue_cycles);
        window_size_ = static_cast<size_t>(ctx_.arch->isu.lookahead);
        next_instance_ = ctx_.program->code.size();
        phase_ = Phase::Run;
        break;
      case Phase::Run:
        if (run_once(w)) return w;
        break;
      case Phase::Blocked: {
        const double waited = ctx_.now_ps() - blocked_since_;
        (blocked_head_ == Verdict::Queue ? counters_.queue_stall_ps : counters_.hazard_stall_ps) += waited;
        window_.front().engine->add_stall(waited);
        phase_ = Phase::Run;
        break;
      }
      case Phase::Drain:
        if (!in_flight_.empty()) return {&retired_, {}, false};
        finish();
        phase_ = Phase::Done;
        break;
      case Phase::SignalDrain:  // a signal is a barrier: it fires once every earlier instruction retired
        if (!in_flight_.empty()) return {&retired_, {}, false};
        signal(ctx_.instr(barrier_));
        end_barrier();
        break;
      case Phase::TokenWait: {
        SyncState& s = *ctx_.sync;
        int64_t& count = s.tokens[dev][ctx_.instr(barrier_).token];
        if (count == 0 && s.deadlock.empty()) return {s.changed[dev], {}, false};
        --s.blocked;
        s.waiting[dev].clear();
        if (s.deadlock.empty()) --count;
        end_barrier();
        break;
      }
      case Phase::Done: return {nullptr, {}, true};
    }
  }
}

// The top of the ISU's loop once: true when it must then wait for `w`.
bool Isu::run_once(Wake& w) {
  // Fill the window; a barrier (halt, sync) ends it until the barrier reaches the head.
  while (window_.size() < window_size_ && (window_.empty() || !window_.back().barrier) && fetch()) {
  }
  if (wall_clock_exceeded_ || past_wall_deadline()) {
    ctx_.wall_clock_exceeded = true;
    sc_core::sc_stop();
    phase_ = Phase::Done;
    return false;
  }
  if (window_.empty()) {  // a program without halt: finish when everything retires
    phase_ = Phase::Drain;
    return false;
  }
  if (window_.front().barrier) {
    barrier_ = window_.front().id;
    window_.erase(window_.begin());
    const Instruction& in = ctx_.instr(barrier_);
    if (in.opcode == Opcode::Halt) {
      phase_ = Phase::Drain;
      return false;
    }
    // Barriers and token waits are the device waiting on sync: its kernel's Span::Sync.
    barrier_since_ = ctx_.now_ps();
    if (in.opcode == Opcode::SyncSignal)
      phase_ = Phase::SignalDrain;
    else if (token_due(in, barrier_))
      end_barrier();
    else
      phase_ = Phase::TokenWait;
    return false;
  }
  // Issue the oldest entry that may go; the head's verdict says why the ISU waits if none.
  // An entry behind a waiting one of its engine cannot go either: once every engine of the
  // window has a waiting entry, the rest of the window is not looked at.
  Verdict head = Verdict::Issue;
  size_t pick = window_.size();
  uint32_t waiting = 0;
  for (size_t k = 0; k < window_.size() && !window_[k].barrier && waiting != window_engines_; ++k) {
    const uint32_t bit = 1u << window_[k].engine->engine_index();
    if (waiting & bit) continue;
    Verdict v = check(k);
    if (k == 0) head = v;
    if (v == Verdict::Issue) {
      pick = k;
      break;
    }
    waiting |= bit;
  }
  if (pick == window_.size()) {
    blocked_since_ = ctx_.now_ps();
    blocked_head_ = head;
    phase_ = Phase::Blocked;
    w = {&retired_, {}, false};
    return true;
  }
  const int kernel = ctx_.instr(window_[pick].id).kernel;
  issue(pick);
  if (issue_time_ > sc_core::SC_ZERO_TIME) {
    double t = ctx_.now_ps();
    ctx_.kernels[static_cast<size_t>(std::max(kernel, 0))].log.push_back({t, t + issue_time_.to_double(), Span::Issue});
    w = {nullptr, issue_time_, false};
    return true;
  }
  return false;
}

// A sync barrier passed: its time is its kernel's Span::Sync (a token wait's also the ISU's
// sync_wait_ps). A wait that ended on a deadlock stops the ISU there (no finish).
void Isu::end_barrier() {
  const Instruction& in = ctx_.instr(barrier_);
  const double s1 = ctx_.now_ps();
  if (s1 > barrier_since_) ctx_.kernel_of(in).log.push_back({barrier_since_, s1, Span::Sync});
  if (in.opcode == Opcode::SyncWait) counters_.sync_wait_ps += s1 - barrier_since_;
  phase_ = in.opcode == Opcode::SyncWait && !ctx_.sync->deadlock.empty() ? Phase::Done : Phase::Run;
}

// Reading the clock costs some 20 ns, simulating an instruction a microsecond or more: every
// 256th fetch keeps the cost out of sight, and a fetch loop that spins without simulated time
// (an empty loop body) still reaches the clock within microseconds.
bool Isu::past_wall_deadline() {
  constexpr int kFetchesPerClockCheck = 256;
  if (--until_clock_check_ > 0) return false;
  until_clock_check_ = kFetchesPerClockCheck;
  return std::chrono::steady_clock::now() > ctx_.wall_deadline;
}

void Isu::finish() {
  ctx_.finished = true;
  ctx_.finish_ps = ctx_.now_ps();
  if (ctx_.sync) {
    ++ctx_.sync->finished;
    check_deadlock();
  }
  if (!ctx_.devices_running || --*ctx_.devices_running == 0) {
    if (ctx_.sync)
      end_simulation(*ctx_.sync);
    else
      sc_core::sc_stop();
  }
}

void end_simulation(SyncState& s) {
  s.ended = true;
  // Immediate notifications: the woken threads run in this evaluation phase, before the stop
  // (sc_stop's default mode finishes the delta) takes effect.
  for (sc_core::sc_event* e : s.idle_waits) e->notify();
  s.end.notify();
  sc_core::sc_stop();
}

// Sends a sync.signal's token (to this device, or over the ESL).
void Isu::signal(const Instruction& in) {
  SyncState& s = *ctx_.sync;
  int target = in.peer < 0 ? ctx_.device : static_cast<int>(in.peer);
  if (target >= s.devices)
    throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " (line ", in.line,
                            ") targets device ", target, " but the config has ", s.devices));
  if (target == ctx_.device) {
    ++s.tokens[static_cast<size_t>(target)][in.token];
    s.changed[static_cast<size_t>(target)]->notify(sc_core::SC_ZERO_TIME);
    return;
  }
  // Over the ESL: the token arrives after the link latency.
  EslLink::Transfer t;
  t.target = target;
  t.token = in.token;
  s.link->send(sc_core::sc_time(ctx_.arch->esl.latency_ns * 1000.0, sc_core::SC_PS), std::move(t));
}

// Takes a sync.wait's token if one is there (true). Else the device is blocked on it
// (Phase::TokenWait), which may complete a deadlock.
bool Isu::token_due(const Instruction& in, size_t i) {
  SyncState& s = *ctx_.sync;
  int64_t& count = s.tokens[static_cast<size_t>(ctx_.device)][in.token];
  if (count > 0) {
    --count;
    return true;
  }
  ++s.blocked;
  s.waiting[static_cast<size_t>(ctx_.device)] =
      strcat("device ", ctx_.device, " isu waits for token ", in.token, " at instruction ", i,
             in.line ? strcat(" (line ", in.line, ")") : "", " with ", in_flight_.size(), " instruction(s) in flight");
  check_deadlock();
  return false;
}

// Every device is blocked on a token or halted and no token is on the way: nothing can ever
// produce the awaited tokens. Report who waits for what and stop.
void Isu::check_deadlock() {
  SyncState& s = *ctx_.sync;
  if (s.blocked == 0 || s.blocked + s.finished < s.simulated || s.in_transit > 0 || !s.deadlock.empty()) return;
  std::string r = "deadlock: ";
  for (const auto& w : s.waiting)
    if (!w.empty()) r += w + "; ";
  s.deadlock = r + "no device can produce these tokens";
  sc_core::sc_stop();
}

}  // namespace lpu::sim
