#include "model/layer_memo.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <type_traits>

#include "model/device.h"

namespace lpu::sim {

LayerMemo::LayerMemo(DeviceContext& ctx, Device& dev, const RepeatBlocks& blocks)
    : ctx_(ctx), dev_(dev), blocks_(blocks) {}

bool LayerMemo::qualifies(const DeviceContext& ctx, const Device& dev, bool vcd) {
  const ArchConfig& a = *ctx.arch;
  return a.sim.memoize && a.devices == 1 && !ctx.functional && !ctx.record_trace && !vcd && !processes_are_threads(a) &&
         a.memory.model == ArchConfig::Memory::Model::Bandwidth && !dev.has_extensions();
}

bool LayerMemo::rerun_needed() const {
  if (!skipped_blocks_) return false;
  return ctx_.finish_ps > ctx_.arch->sim.max_us * 1e6 || !ctx_.finished;
}

// Every statistic the device accumulates while it runs, in a fixed order (f(double&) or
// f(uint64_t&)); the kernels' own are moved whole (move_kernels).
template <class F>
void LayerMemo::accumulators(F&& f) {
  IsuCounters& i = dev_.isu.counters_;
  f(i.issued);
  f(i.issued_out_of_order);
  f(i.hazard_stall_ps);
  f(i.queue_stall_ps);
  f(i.sync_wait_ps);
  for (Engine* e : dev_.engines()) {
    Engine::Counters& c = e->counters_;
    f(c.busy_ps);
    f(c.occupied_ps);
    f(c.work);
    f(c.stalled_ps);
    f(c.instructions);
  }
  f(dev_.sxe.dequantised_);
  Hbm::Counters& h = dev_.hbm.counters_;
  f(h.read_bytes);
  f(h.write_bytes);
  f(h.burst_bytes);
  EnergyEvents& e = ctx_.energy;
  f(e.hbm_read_bytes);
  f(e.hbm_write_bytes);
  f(e.sxe_macs);
  f(e.sxe_dequantised);
  for (auto& [name, v] : e.vxe_ops) f(v);
  f(e.lmu_read_bytes);
  f(e.lmu_write_bytes);
  f(e.esl_bytes);
}

// The state that decides what happens next, relative to now (times) and to block r's first
// instruction (instruction ids). False when it cannot stand for a block boundary: an
// instruction in flight from outside blocks r-1 and r, a loop or barrier under way, a time
// that is not whole picoseconds.
bool LayerMemo::capture(size_t r, Snapshot& s) {
  s.block = r;
  s.t = ctx_.now_ps();
  s.state.clear();
  s.acc.clear();
  const Isu& isu = dev_.isu;
  const double base = static_cast<double>(blocks_.start(r)), lo = static_cast<double>(blocks_.start(r - 1)),
               hi = static_cast<double>(blocks_.start(std::min(r + 1, blocks_.count)));
  const double t = s.t;
  bool ok = isu.loops_.empty() && ctx_.instances.empty() && static_cast<double>(isu.pc_) <= hi &&
            (isu.phase_ == Isu::Phase::Run || isu.phase_ == Isu::Phase::Blocked);
  auto& w = s.state;
  auto value = [&w](double x) { w.push_back(x); };
  auto id = [&](size_t i) {
    const auto x = static_cast<double>(i);
    ok = ok && x >= lo && x < hi;
    w.push_back(x - base);
  };
  auto at = [&](double x) { w.push_back(x - t); };
  auto at_or = [&](double x, double none) {  // a time, or the value that means none
    w.push_back(x == none ? 1 : 0);
    w.push_back(x == none ? 0 : x - t);
  };
  auto free_at = [&](double x) { w.push_back(std::max(0.0, x - t)); };  // a past time is now
  value(static_cast<double>(isu.phase_));
  if (isu.phase_ == Isu::Phase::Blocked) {
    at(isu.blocked_since_);
    value(static_cast<double>(isu.blocked_head_));
  }
  value(static_cast<double>(isu.pc_) - base);
  value(isu.prefetching_);
  value(static_cast<double>(isu.window_.size()));
  for (const Isu::Pending& p : isu.window_) {
    id(p.id);
    value(p.engine ? p.engine->engine_index() : -1);
    value(p.barrier);
    at(p.fetched_ps);
    at_or(p.hazard_clear_ps, -1);
    at_or(p.inputs_ready_ps, 0);
    value(p.prefetching);
    value(p.blocker == Isu::kNobody ? 1 : 0);
    value(p.blocker == Isu::kNobody ? 0 : static_cast<double>(p.blocker) - base);
    value(static_cast<double>(p.blocked));
  }
  value(static_cast<double>(isu.in_flight_.size()));
  for (const Isu::InFlight& g : isu.in_flight_) {
    id(g.id);
    value(g.engine->engine_index());
    at_or(g.end_ps, -1);
    value(g.prefetching);
  }
  std::vector<std::tuple<size_t, double, double>> running;
  for (const Engine* e : dev_.engines()) {
    value(static_cast<double>(e->queue_.size()));
    for (const Engine::Queued& q : e->queue_) {
      id(q.ticket.instr);
      at_or(q.ticket.inputs_ready_ps, 0);
      at(q.pushed_ps);
    }
    // The running instructions in order: an engine's workers are alike, and which one took
    // an instruction depends on the order they began to wait (SystemC's, not the model's).
    running.clear();
    for (const Engine::Started& s1 : e->method_work_)
      if (s1.running) running.push_back({s1.instr, s1.start, s1.end});
    std::sort(running.begin(), running.end());
    value(static_cast<double>(running.size()));
    for (const auto& [instr, start, end] : running) {
      id(instr);
      at(start);
      at(end);
    }
    value(e->busy_);
    if (e->busy_) at(e->occupied_since_);
  }
  free_at(dev_.sxe.trees_free_ps_);
  free_at(dev_.lmu.port_free_ps_);
  for (double c : dev_.hbm.channel_free_ps_) free_at(c);
  for (double x : w) ok = ok && x == std::floor(x);
  accumulators([&s, &ok](auto& x) {
    const auto v = static_cast<double>(x);
    ok = ok && v == std::floor(v) && v < 0x1p52;
    s.acc.push_back(v);
  });
  return ok && std::floor(t) == t;
}

void LayerMemo::at_isu_activation() {
  if (done_) return;
  if (next_ >= blocks_.count) {
    done_ = true;
    return;
  }
  // Not yet into block next_, or something else happens at this instant: a later activation.
  if (dev_.isu.pc_ <= blocks_.start(next_) || sc_core::sc_pending_activity_at_current_time(ctx_.kernel)) return;
  const size_t r = next_++;
  if (r == 0) return;  // block 0's boundary has the code before the blocks in flight
  std::swap(prev_, cur_);
  cur_.valid = capture(r, cur_);
  const bool periodic = prev_.valid && cur_.valid && prev_.block + 1 == r && prev_.state == cur_.state &&
                        prev_.acc.size() == cur_.acc.size();
  if (!periodic) {
    chain_ = SIZE_MAX;
    return;
  }
  if (chain_ == SIZE_MAX) chain_ = r - 1;
  // Block m = chain_ + 1, the first that ran wholly within the periodic stretch, stands for the
  // skipped blocks' kernels; it has finished once the boundary two blocks on is passed (nothing
  // of blocks before t - 1 is in flight at a valid snapshot t).
  const size_t t = r, m = chain_ + 1;
  if (t < m + 2) return;
  // Blocks t-1 and t move on by k and must stay blocks; the skipped blocks [t-1, t-2+k] run
  // like block m over t-m+1 periods, all of which must lie within the blocks.
  const auto R = static_cast<int64_t>(blocks_.count), T = static_cast<int64_t>(t), M = static_cast<int64_t>(m);
  const int64_t k = std::min(R - 1 - T, R + 1 + M - 2 * T);
  done_ = true;
  if (k >= 1) jump(t, m, static_cast<size_t>(k));
}

bool LayerMemo::jump(size_t t, size_t m, size_t k) {
  const double period = cur_.t - prev_.t, w = static_cast<double>(k) * period;
  std::vector<double> delta(cur_.acc.size());
  for (size_t i = 0; i < delta.size(); ++i) {
    delta[i] = cur_.acc[i] - prev_.acc[i];
    if (delta[i] < 0 || cur_.acc[i] + static_cast<double>(k) * delta[i] >= 0x1p52) return false;
  }
  size_t i = 0;
  accumulators([&](auto& x) {
    using T = std::remove_reference_t<decltype(x)>;
    x += static_cast<T>(static_cast<double>(k) * delta[i++]);
  });
  move_kernels(t, m, k, period, w);
  shift_state(k * blocks_.length, w);
  ctx_.time_offset_ps += w;
  skipped_blocks_ = k;
  return true;
}

// Kernels: those of blocks t-1 and t (under way) become those of blocks t-1+k and t+k; the
// kernels of the blocks in between get block m's statistics, shifted by their distance.
void LayerMemo::move_kernels(size_t t, size_t m, size_t k, double period, double w) {
  auto& kernels = ctx_.kernels;
  const auto kernel = [&](size_t block, int q) {
    return static_cast<size_t>(blocks_.first_kernel + static_cast<int>(block) * blocks_.kernels + q);
  };
  const auto shift = [](KernelCounters& c, double by) {
    if (c.first_issue_ps >= 0) c.first_issue_ps += by;
    if (c.last_retire_ps > 0) c.last_retire_ps += by;
    for (SpanInterval& s : c.log) {
      s.lo += by;
      s.hi += by;
    }
  };
  std::vector<KernelCounters> model;  // block m's kernels without their logs (log_of stands for them)
  for (int q = 0; q < blocks_.kernels; ++q) {
    const KernelCounters& c = kernels[kernel(m, q)];
    model.push_back(c);
    model.back().log.clear();
    model.back().log_of = c.log_of >= 0 ? c.log_of : static_cast<int>(kernel(m, q));
  }
  for (size_t b : {t, t - 1})
    for (int q = 0; q < blocks_.kernels; ++q) {
      KernelCounters& to = kernels[kernel(b + k, q)];
      to = std::move(kernels[kernel(b, q)]);
      shift(to, w);
      kernels[kernel(b, q)] = KernelCounters{};
    }
  for (size_t b = t - 1; b + 1 < t + k; ++b)
    for (int q = 0; q < blocks_.kernels; ++q) {
      KernelCounters& to = kernels[kernel(b, q)];
      to = model[static_cast<size_t>(q)];
      shift(to, static_cast<double>(b - m) * period);
      to.log_shift += static_cast<double>(b - m) * period;
    }
}

// Everything in flight moves on by `shift` instructions and `w` picoseconds; the scoreboard's
// footprints are those of the instructions they now are.
void LayerMemo::shift_state(size_t shift, double w) {
  Isu& isu = dev_.isu;
  isu.pc_ += shift;
  if (isu.phase_ == Isu::Phase::Blocked) isu.blocked_since_ += w;
  for (Isu::Pending& p : isu.window_) {
    p.id += shift;
    p.fetched_ps += w;
    if (p.hazard_clear_ps >= 0) p.hazard_clear_ps += w;
    if (p.inputs_ready_ps > 0) p.inputs_ready_ps += w;
    if (p.blocker != Isu::kNobody) p.blocker += shift;
    footprint(ctx_.instr(p.id), *ctx_.program, isu.footprints_[p.f]);
  }
  for (Isu::InFlight& g : isu.in_flight_) {
    g.id += shift;
    if (g.end_ps >= 0) g.end_ps += w;
    Footprint& f = isu.footprints_[g.f];
    footprint(ctx_.instr(g.id), *ctx_.program, f);
    g.lm_hull = f.lm_hull;
    g.hbm_hull = f.hbm_hull;
  }
  for (Engine* e : dev_.engines()) {
    for (Engine::Queued& q : e->queue_) {
      q.ticket.instr += shift;
      if (q.ticket.inputs_ready_ps > 0) q.ticket.inputs_ready_ps += w;
      q.pushed_ps += w;
    }
    for (Engine::Started& s : e->method_work_) {
      if (!s.running) continue;
      s.instr += shift;
      s.start += w;
      s.end += w;
    }
    e->occupied_since_ += w;
  }
  dev_.sxe.trees_free_ps_ += w;
  dev_.lmu.port_free_ps_ += w;
  for (double& c : dev_.hbm.channel_free_ps_) c += w;
}

}  // namespace lpu::sim
