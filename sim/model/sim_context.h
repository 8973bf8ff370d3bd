// Shared state of one simulated device: the program, configuration, clock, statistics and
// the functional-mode data stores. Modules get a reference; there are no globals.
#pragma once
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <systemc>
#include <unordered_map>
#include <vector>

#include "config/arch_config.h"
#include "energy.h"
#include "isa/program.h"
#include "model/attribution.h"

namespace lpu::sim {

// Closed interval of bytes [lo, hi) in one memory space.
struct Range {
  uint64_t lo = 0, hi = 0;
  bool overlaps(const Range& o) const { return lo < o.hi && o.lo < hi; }
};

// A few ranges in place (no allocation per instruction: the scoreboard builds one footprint
// per fetched instruction); a host.call with more inputs than that moves them to the heap.
class Ranges {
 public:
  void clear() {
    n_ = 0;
    heap_.clear();
    hull_ = {};
  }
  void push_back(const Range& r) {
    hull_ = n_ == 0 ? r : Range{std::min(hull_.lo, r.lo), std::max(hull_.hi, r.hi)};
    if (n_ < kInline) {
      inline_[n_] = r;
    } else {
      if (n_ == kInline) heap_.assign(inline_.begin(), inline_.end());
      heap_.push_back(r);
    }
    ++n_;
  }
  const Range* begin() const { return n_ > kInline ? heap_.data() : inline_.data(); }
  const Range* end() const { return begin() + n_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  // The smallest range around them all ({0, 0}, which overlaps nothing, when empty): lists
  // whose hulls do not overlap have no overlapping ranges.
  const Range& hull() const { return hull_; }

 private:
  static constexpr size_t kInline = 3;  // a vxe.op's sources
  std::array<Range, kInline> inline_{};
  std::vector<Range> heap_;  // all of them, once there are more than kInline
  size_t n_ = 0;
  Range hull_;
};

// What an instruction touches, for the scoreboard.
struct Footprint {
  Ranges lm_reads, lm_writes, hbm_reads, hbm_writes;
  // The hull of each memory's ranges, read or written (close_hulls()): two footprints whose
  // hulls overlap in neither memory cannot conflict, which settles most of the pairs the
  // scoreboard compares with two tests instead of six list comparisons.
  Range lm_hull, hbm_hull;
  void clear() {
    lm_reads.clear();
    lm_writes.clear();
    hbm_reads.clear();
    hbm_writes.clear();
    lm_hull = hbm_hull = {};
  }
  // Sets the hulls once the ranges are in.
  void close_hulls() {
    lm_hull = join(lm_reads, lm_writes);
    hbm_hull = join(hbm_reads, hbm_writes);
  }

 private:
  // The hull of both lists ({0, 0}, which overlaps nothing, when both are empty).
  static Range join(const Ranges& a, const Ranges& b) {
    if (a.empty()) return b.hull();
    if (b.empty()) return a.hull();
    return {std::min(a.hull().lo, b.hull().lo), std::max(a.hull().hi, b.hull().hi)};
  }
};

struct TraceEvent {
  int engine;  // index into the device's engines (Device::engines); -1 - g for HBM channel group g
  int kernel;
  size_t instr;
  double start_ps, end_ps;
  std::string text;  // the instruction as executed (loop instances differ from the program text)
};

struct KernelCounters {
  double first_issue_ps = -1, last_retire_ps = 0;
  uint64_t hbm_read = 0, hbm_write = 0, instructions = 0;
  double sxe_flops = 0, vxe_ops = 0;  // 2 x MACs of its sxe.gemm; elements of its vxe.op/reduce
  double sxe_lane_flops = 0;          // sxe_flops, each gemm's over its packed lanes (sxe.packed_lanes)
  std::vector<SpanInterval> log;      // what the engines and the ISU did for it (attribution.h)
  // A kernel of a block that layer memoisation skipped (layer_memo.h): its log is kernel
  // `log_of`'s, `log_shift` ps later, and is not copied (its attribution is that kernel's).
  int log_of = -1;
  double log_shift = 0;
  // Its sums (bytes, instructions, flops) plus `sign` times o's: the one list of them, by which
  // layer memoisation moves a kernel's statistics.
  void add_sums(const KernelCounters& o, int sign = 1) {
    const auto s = static_cast<uint64_t>(static_cast<int64_t>(sign));  // modular: -1 subtracts
    hbm_read += s * o.hbm_read;
    hbm_write += s * o.hbm_write;
    instructions += s * o.instructions;
    sxe_flops += sign * o.sxe_flops;
    vxe_ops += sign * o.vxe_ops;
    sxe_lane_flops += sign * o.sxe_lane_flops;
  }
};

// Tokens of every device and what their ISUs are blocked on: shared by all devices, so a
// program that can never finish is recognised (every device blocked or halted, no signal in
// flight) and reported instead of running until the time limit.
struct SyncState {
  int devices = 1;
  int simulated = 1;  // devices instantiated: `devices`, or 1 when device 0 stands for them all
  int blocked = 0, finished = 0, in_transit = 0;
  std::vector<std::map<int64_t, int64_t>> tokens;  // per device: token -> count
  std::vector<sc_core::sc_event*> changed;         // per device: a token arrived
  std::vector<std::string> waiting;                // per device: what its ISU waits for ("" = running)
  std::string deadlock;                            // the report, once recognised
  std::vector<struct DeviceContext*> contexts;     // every device (ESL transfers write into them)
  class EslLink* link = nullptr;                   // delivers what is in flight between devices
  // The end of a run (end_simulation()): every engine worker waiting for work and the
  // watchdogs are woken to return, so their threads terminate and SystemC frees their stacks
  // (a thread left waiting at sc_stop keeps its stack mapped for the life of the process:
  // about 28 mappings a run, which a 4000-step generation ran out of).
  bool ended = false;
  sc_core::sc_event end;
  std::vector<sc_core::sc_event*> idle_waits;  // the events idle engine workers wait on
};

// Called by the ISU of the last device to halt: wakes the idle threads to return, then stops
// at the end of this delta (so they run first).
void end_simulation(SyncState& s);

struct DeviceContext {
  int device = 0;
  const Program* program = nullptr;
  // Instances of instructions issued inside loops (their addresses advanced per iteration),
  // by issue id >= program->code.size(); released when they retire.
  std::unordered_map<size_t, Instruction> instances;
  const Instruction& instr(size_t id) const { return id < program->code.size() ? program->code[id] : instances.at(id); }
  const ArchConfig* arch = nullptr;
  bool functional = false;
  bool record_trace = false;

  sc_core::sc_time period;
  sc_core::sc_time cycles(double c) const { return period * c; }
  // sc_time(v, SC_PS) without its library call (a simcontext lookup per wait, a few percent of
  // a run). SystemC's constructor computes int64(v x scale + 0.5), scale the unit over the
  // time resolution; sc_time's inline `*` computes int64(value x v + 0.5). Under the default
  // resolution of 1 ps, which the simulator keeps, `one_ps` has value 1 = scale and the two
  // are the same; any other resolution takes the constructor. Set with `period`.
  sc_core::sc_time one_ps;
  // The current time without sc_time_stamp()'s library call (which looks the global context
  // up: 2% of a run's instructions). Set where the modules are built, after the context is.
  const sc_core::sc_simcontext* kernel = nullptr;
  // The model's time: SystemC's plus the layers skipped so far (layer_memo.h). The modules
  // read the time here only and wait by relative delays, so SystemC's clock may lag it.
  double time_offset_ps = 0;
  double now_ps() const { return kernel->time_stamp().to_double() + time_offset_ps; }
  // Decoder layers simulated once for all (layer_memo.h); null when the run does not qualify.
  class LayerMemo* memo = nullptr;
  // Wakes the SC_METHOD processes' timed waits in a fixed order (wake_order.h).
  class WakeOrder* wakes = nullptr;
  sc_core::sc_time ps(double v) const { return one_ps.value() == 1 ? one_ps * v : sc_core::sc_time(v, sc_core::SC_PS); }

  // Functional stores: HBM bytes (in each buffer's dtype) and LMU fp32 words.
  std::vector<uint8_t> hbm_data;
  std::vector<float> lmu_data;

  // Statistics shared by the modules (each engine, the ISU and the HBM count their own).
  std::vector<KernelCounters> kernels;
  KernelCounters& kernel_of(const Instruction& in) {
    return kernels[static_cast<size_t>(in.kernel < 0 ? 0 : in.kernel)];
  }
  // The channel windows [start, end) of the HBM transactions just served (one joined with
  // the last when they overlap or touch): Hbm::b_transport fills it, the DMA or SXE that sent
  // the transactions takes their union into its kernel's log.
  std::vector<std::pair<double, double>> hbm_windows;
  std::vector<TraceEvent> trace;
  EnergyEvents energy;  // what costs energy (sim/energy.h); the engines add theirs at the end (Engine::add_to)
  // An error raised inside a SystemC process (bad address, malformed operand...) is recorded
  // here and the simulation stopped; simulate() rethrows it as an InputError.
  std::string error;
  bool finished = false;
  // Wall-clock watchdog (sim.max_wall_s): when the run must stop; the ISU that finds it
  // passed sets `wall_clock_exceeded` and stops the simulation.
  std::chrono::steady_clock::time_point wall_deadline = std::chrono::steady_clock::time_point::max();
  bool wall_clock_exceeded = false;
  // Devices still running; the last one to halt stops the simulation (shared by all devices).
  int* devices_running = nullptr;
  SyncState* sync = nullptr;
  double finish_ps = 0;
};

// Into `f` (cleared first). `p` resolves a host.call's buffers (it touches its inputs and
// output whole, in HBM).
void footprint(const Instruction& in, const Program& p, Footprint& f);

}  // namespace lpu::sim
