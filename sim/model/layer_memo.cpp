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

size_t LayerMemo::kernel(size_t block, int q) const {
  return static_cast<size_t>(blocks_.first_kernel + static_cast<int>(block) * blocks_.kernels + q);
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
  s.kernels.clear();
  for (size_t b : {r - 1, r})
    for (int q = 0; q < blocks_.kernels; ++q) {
      const KernelCounters& c = ctx_.kernels[kernel(b, q)];
      s.kernels.push_back(c);
      s.kernels.back().log.clear();
      s.kernels.back().log_shift = static_cast<double>(c.log.size());  // the log's length then
    }
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
  if (!periodic) return;
  // The period [S(r-1), S(r)) is the reference (move_kernels). Blocks r-1 and r move on by k and
  // must stay blocks, and each skipped block's three periods must lie within the blocks.
  done_ = true;
  const size_t t = r;
  if (t + 3 <= blocks_.count) jump(t, blocks_.count - 1 - t);
}

bool LayerMemo::jump(size_t t, size_t k) {
  const double period = cur_.t - prev_.t, w = static_cast<double>(k) * period;
  std::vector<double> delta(cur_.acc.size());
  for (size_t i = 0; i < delta.size(); ++i) {
    delta[i] = cur_.acc[i] - prev_.acc[i];
    if (delta[i] < 0 || cur_.acc[i] + static_cast<double>(k) * delta[i] >= 0x1p52) return false;
  }
  if (!move_kernels(t, k, period)) return false;
  size_t i = 0;
  accumulators([&](auto& x) {
    using T = std::remove_reference_t<decltype(x)>;
    x += static_cast<T>(static_cast<double>(k) * delta[i++]);
  });
  shift_state(k * blocks_.length, w);
  ctx_.time_offset_ps += w;
  skipped_blocks_ = k;
  return true;
}

namespace {
// What a kernel's counters gained between a snapshot (`then`: its log by length, log_shift) and
// now: sums, the first issue and last retirement if they fell in between, the log's new entries.
KernelCounters gained(const KernelCounters& then, const KernelCounters& now) {
  KernelCounters d;
  d.add_sums(now);
  d.add_sums(then, -1);
  d.first_issue_ps = then.first_issue_ps < 0 ? now.first_issue_ps : -1;
  d.last_retire_ps = now.last_retire_ps > then.last_retire_ps ? now.last_retire_ps : 0;
  d.log.assign(now.log.begin() + static_cast<std::ptrdiff_t>(then.log_shift), now.log.end());
  return d;
}
// `d`, `by` ps later, added to `c`: what that period does to that block's kernel.
void add(KernelCounters& c, const KernelCounters& d, double by) {
  c.add_sums(d);
  if (d.first_issue_ps >= 0 && c.first_issue_ps < 0) c.first_issue_ps = d.first_issue_ps + by;
  if (d.last_retire_ps > 0) c.last_retire_ps = std::max(c.last_retire_ps, d.last_retire_ps + by);
  for (const SpanInterval& s : d.log) c.log.push_back({s.lo + by, s.hi + by, s.what});
}
bool whole(double x) { return x == std::floor(x) && std::abs(x) < 0x1p52; }
bool whole(const KernelCounters& c) {
  return whole(c.sxe_flops) && whole(c.vxe_ops) && whole(c.sxe_lane_flops) && whole(c.first_issue_ps) &&
         whole(c.last_retire_ps);
}
}  // namespace

// The kernels. In the reference period [S(t-1), S(t)), block t had its first phase (fetched,
// some issued), block t-1 its second, block t-2 its last (nothing of a block is in flight two
// boundaries on). A block b's kernels get those three gains shifted by (b - t), (b - t + 1) and
// (b - t + 2) periods. Blocks t-1 and t keep what they did and get the phases still to come;
// blocks t-1+k and t+k (where the instructions in flight move) get the phases they would have
// had by then; blocks after t+1 share block t+1's log (KernelCounters::log_of). False when a
// sum is not whole (its additions grouped otherwise might round otherwise).
bool LayerMemo::move_kernels(size_t t, size_t k, double period) {
  auto& kernels = ctx_.kernels;
  const auto pk = static_cast<size_t>(blocks_.kernels);
  std::vector<KernelCounters> first(pk), second(pk), last(pk);
  for (size_t q = 0; q < pk; ++q) {
    const int qi = static_cast<int>(q);
    first[q] = gained(KernelCounters{}, kernels[kernel(t, qi)]);
    second[q] = gained(prev_.kernels[pk + q], kernels[kernel(t - 1, qi)]);
    last[q] = gained(prev_.kernels[q], kernels[kernel(t - 2, qi)]);
    if (!whole(first[q]) || !whole(second[q]) || !whole(last[q]) || !whole(kernels[kernel(t, qi)]) ||
        !whole(kernels[kernel(t - 1, qi)]))
      return false;
  }
  const auto periods = [period](size_t b, size_t from) {
    return (static_cast<double>(b) - static_cast<double>(from)) * period;
  };
  for (size_t q = 0; q < pk; ++q) {
    const int qi = static_cast<int>(q);
    KernelCounters& moved = kernels[kernel(t + k, qi)];  // block t as it is, k periods on
    moved = KernelCounters{};
    add(moved, kernels[kernel(t, qi)], periods(t + k, t));
    KernelCounters& moved1 = kernels[kernel(t - 1 + k, qi)];  // block t-1's first two phases, k on
    moved1 = KernelCounters{};
    add(moved1, first[q], periods(t - 1 + k, t));
    add(moved1, second[q], periods(t - 1 + k, t - 1));
    add(kernels[kernel(t - 1, qi)], last[q], period);
    add(kernels[kernel(t, qi)], second[q], period);
    add(kernels[kernel(t, qi)], last[q], 2 * period);
    for (size_t b = t + 1; b + 1 < t + k; ++b) {
      KernelCounters& c = kernels[kernel(b, qi)];
      c = KernelCounters{};
      if (b == t + 1) {
        add(c, first[q], periods(b, t));
        add(c, second[q], periods(b, t - 1));
        add(c, last[q], periods(b, t - 2));
        continue;
      }
      const KernelCounters& model = kernels[kernel(t + 1, qi)];
      c.add_sums(model);
      c.log_shift = periods(b, t + 1);
      c.first_issue_ps = model.first_issue_ps >= 0 ? model.first_issue_ps + c.log_shift : -1;
      c.last_retire_ps = model.last_retire_ps > 0 ? model.last_retire_ps + c.log_shift : 0;
      c.log_of = static_cast<int>(kernel(t + 1, qi));
    }
  }
  return true;
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
