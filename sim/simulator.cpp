#include "simulator.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "device_symmetry.h"
#include "model/device.h"
#include "model/esl_link.h"
#include "model/layer_memo.h"
#include "model/numeric.h"
#include "model/repeat_blocks.h"
#include "program_check.h"
#include "ref/quantise.h"
#include "sc_kernel.h"
#include "support/error.h"
#include "support/units.h"

namespace lpu {

namespace {
// Why a run stopped at sim.max_wall_s, and how far it had come.
std::string wall_clock_report(const sim::DeviceContext& c, const ArchConfig& arch) {
  uint64_t fetches = instruction_fetches(*c.program);
  return strcat("simulation of ", c.program->name, " (device ", c.device,
                ") stopped at the wall-clock limit sim.max_wall_s = ", arch.sim.max_wall_s, " s, ",
                format_duration_us(sc_core::sc_time_stamp().to_seconds() * 1e6),
                " into the simulated run; the whole run fetches ",
                fetches == UINT64_MAX ? std::string("more than 2^64") : std::to_string(fetches),
                " instructions, loops expanded (raise sim.max_wall_s to let it finish)");
}

void set_roofline(KernelStats& k, const ArchConfig& arch) {
  const double mem =
      static_cast<double>(k.hbm_read_bytes + k.hbm_write_bytes) / (arch.hbm_bytes_per_cycle() * arch.hbm.efficiency);
  const double sxe = k.sxe_lane_flops / (2.0 * arch.sxe.mac_trees * arch.sxe.lanes);
  const double vxe = k.vxe_ops / arch.vxe.lanes;
  k.roofline_cycles = std::max({mem, sxe, vxe});
  k.bound = sxe > mem && sxe >= vxe ? "sxe" : vxe > mem ? "vxe" : "hbm";
}

// Picoseconds per category to whole cycles that sum to the span exactly: each category ends
// where the running sum, rounded to a cycle, ends (the last takes what is left).
SpanBreakdown breakdown_cycles(const std::array<double, sim::kSpanKinds>& ps, double lo_ps, uint64_t start_cycle,
                               uint64_t end_cycle, double period) {
  std::array<uint64_t, sim::kSpanKinds> cyc{};
  double cum = lo_ps;
  uint64_t prev = start_cycle;
  for (int k = 0; k < sim::kSpanKinds; ++k) {
    cum += ps[static_cast<size_t>(k)];
    uint64_t cur = k == sim::kSpanKinds - 1
                       ? end_cycle
                       : std::clamp(static_cast<uint64_t>(std::llround(cum / period)), prev, end_cycle);
    cyc[static_cast<size_t>(k)] = cur - prev;
    prev = cur;
  }
  using S = sim::Span;
  auto at = [&](S s) { return cyc[static_cast<size_t>(s)]; };
  return {at(S::Bandwidth), at(S::Compute), at(S::Latency), at(S::Sync), at(S::Dependency), at(S::Issue), at(S::Other)};
}
}  // namespace

namespace {
// Functional mode: a device's input and weight buffers from `inputs`, in their HBM dtype.
void load_inputs(const Program& prog, const TensorMap* inputs, std::vector<uint8_t>& hbm) {
  for (const auto& b : prog.buffers) {
    if (b.role != BufferRole::Input && b.role != BufferRole::Weight) continue;
    if (!inputs || !inputs->count(b.name)) throw InputError("functional simulation: no data for buffer " + b.name);
    const Tensor& t = inputs->at(b.name);
    if (t.numel() != b.type.numel())
      throw InputError(strcat("functional simulation: data for ", b.name, " has ", t.numel(), " elements, expected ",
                              b.type.numel()));
    if (b.quant.on()) {  // packed blocks (ref/quantise.h): what the SXE dequantises
      pack_quantised(t.data.data(), t.numel(), b.quant, &hbm[b.hbm_addr]);
      continue;
    }
    int64_t eb = dtype_bytes(b.type.dtype);
    for (int64_t k = 0; k < t.numel(); ++k)
      sim::store_element(&hbm[b.hbm_addr + static_cast<uint64_t>(k * eb)], b.type.dtype,
                         t.data[static_cast<size_t>(k)]);
  }
}

TensorMap read_outputs(const Program& prog, const std::vector<uint8_t>& hbm) {
  TensorMap out;
  for (const auto& b : prog.buffers) {
    if (b.role != BufferRole::Output) continue;
    Tensor t(b.type);
    int64_t eb = dtype_bytes(b.type.dtype);
    for (int64_t k = 0; k < t.numel(); ++k)
      t.data[static_cast<size_t>(k)] =
          sim::load_element(&hbm[b.hbm_addr + static_cast<uint64_t>(k * eb)], b.type.dtype);
    out[b.name] = std::move(t);
  }
  return out;
}

// Every device's program must fit its own HBM.
void check_capacity(const Program& prog, const ArchConfig& arch, int device) {
  uint64_t need = prog.hbm_bytes_allocated();
  double cap = arch.hbm.capacity_gib * 1024.0 * 1024.0 * 1024.0;
  if (static_cast<double>(need) <= cap) return;
  int64_t devices = static_cast<int64_t>(std::ceil(static_cast<double>(need) / cap)) * std::max(arch.devices, 1);
  throw InputError(strcat("program ", prog.name, " of device ", device, " needs ",
                          format_bytes(static_cast<double>(need)), " (", format_binary_bytes(static_cast<double>(need)),
                          ") of HBM but one device of ", arch.name, " has hbm.capacity_gib = ", arch.hbm.capacity_gib,
                          ": it would need ", devices,
                          " devices (the compiler splits the built-in decoders: --set devices=N) or a config with more "
                          "HBM per device (e.g. --arch lpu-asic)"));
}
}  // namespace

namespace {

// Whether every buffer lies inside HBM: then so does every access that lies inside a buffer's
// region (repeat_blocks.h).
bool buffers_inside_hbm(const Program& prog, const ArchConfig& arch) {
  const auto capacity = static_cast<uint64_t>(static_cast<int64_t>(arch.hbm.capacity_gib * 1024.0 * 1024.0 * 1024.0));
  for (const BufferDecl& b : prog.buffers)
    if (b.bytes() < 0 || b.hbm_addr > capacity || static_cast<uint64_t>(b.bytes()) > capacity - b.hbm_addr)
      return false;
  return true;
}

// check_program(prog) and, for layer memoisation (`find`), the program's repeating blocks
// (repeat_blocks.h), found together. A block equivalent to block 0 has block 0's fields but
// the HBM address, and each of its HBM accesses lies inside a region at the offset of its
// counterpart's; so its memory bounds follow from block 0's and from every buffer lying inside
// HBM, and are not checked instruction by instruction (most of a decoder's). The error of a
// bad program is check_program's own: on any failure the whole program is checked again.
sim::RepeatBlocks check_finding_blocks(const Program& prog, const ArchConfig& arch, bool find) {
  const sim::RepeatBlocks candidate = find ? sim::candidate_blocks(prog) : sim::RepeatBlocks{};
  if (candidate.count < 3) {
    check_program(prog, arch);
    return find ? sim::find_repeat_blocks(prog, arch, candidate) : sim::RepeatBlocks{};
  }
  const size_t begin = candidate.start(1), end = candidate.start(candidate.count);
  try {
    check_program(prog, arch, {{begin, end}});  // all but the candidate's blocks 1.. (block 0 included)
    const sim::RepeatBlocks blocks = sim::find_repeat_blocks(prog, arch, candidate);
    const bool proven = blocks.count >= 3 && buffers_inside_hbm(prog, arch);
    const size_t from = proven ? blocks.start(1) : end, to = proven ? blocks.start(blocks.count) : end;
    // The candidate's blocks outside the equivalent ones, the first of those (its block 0) included.
    check_memory_bounds(prog, arch, {{begin, std::max(begin, from)}, {std::max(begin, to), end}});
    return blocks;
  } catch (const InputError&) {
    check_program(prog, arch);  // throws the first error in program order
    throw;
  }
}

// The checks before anything is built: every device's program fits its HBM and keeps the
// rules (program_check.h). Returns device 0's repeating blocks where layer memoisation may
// run (`find_blocks`), else none.
sim::RepeatBlocks validate(const Program& prog, const ArchConfig& arch, const SimOptions& opts, bool find_blocks) {
  check_capacity(prog, arch, 0);
  for (size_t d = 0; d < opts.other_devices.size(); ++d)
    if (opts.other_devices[d]) check_capacity(*opts.other_devices[d], arch, static_cast<int>(d + 1));
  const sim::RepeatBlocks blocks = check_finding_blocks(prog, arch, find_blocks);
  for (const Program* other : opts.other_devices)
    if (other) check_program(*other, arch);
  if (opts.others_rotate_device0 && (opts.functional || !opts.vcd_path.empty()))
    throw InternalError(
        "simulate: devices vouched for as rotations are simulated as device 0 alone, in timing mode only");
  return blocks;
}

// The top level of one run: `devices` LPUs (or device 0 alone standing for rotations of it),
// their shared synchronisation state and the ESL between them. Device 0 runs the program;
// a device without one runs an empty program.
class TopLevel {
 public:
  // `blocks`: device 0's repeating blocks for layer memoisation (none: simulate every layer).
  TopLevel(const Program& prog, const ArchConfig& arch, const SimOptions& opts, const TensorMap* inputs, bool mirror,
           const sim::RepeatBlocks& blocks);
  void run();  // throws when the run failed, got stuck or did not finish
  // Layer memoisation (layer_memo.h) skipped blocks, and the run must be simulated again
  // without it (a tie after the jump, or past sim.max_us).
  bool memo_rerun_needed() const { return memo_ && memo_->rerun_needed(); }
  uint64_t memo_skipped_blocks() const { return memo_ ? memo_->skipped_blocks() : 0; }
  void collect(SimStats& s, EnergyEvents& energy, std::vector<double>& finish_ps) const;
  const sim::DeviceContext& device0() const { return *contexts_.front(); }
  const sim::Device& device0_model() const { return *devices_.front(); }
  std::vector<TensorMap> other_outputs() const;

 private:
  void add_device(int d, const Program& p, const TensorMap* inputs);
  void trace_vcd(const std::string& path);
  void check_finished() const;
  // First: the members below (the sync state's events) belong to the context it makes.
  struct FreshContext {
    FreshContext() { fresh_systemc_context(); }
  } fresh_;
  const Program& prog_;
  const ArchConfig& arch_;
  const bool mirror_, functional_, record_trace_;
  const std::chrono::steady_clock::time_point wall_deadline_;
  int running_;
  sim::SyncState sync_;
  std::vector<std::unique_ptr<sc_core::sc_event>> token_events_;
  std::unique_ptr<sim::EslLink> link_;
  std::vector<std::unique_ptr<sim::DeviceContext>> contexts_;
  std::vector<std::unique_ptr<sim::Device>> devices_;
  std::unique_ptr<sim::LayerMemo> memo_;
  sc_core::sc_trace_file* vcd_ = nullptr;
};

const Program& idle_program() {
  static const Program idle = [] {
    Program p;
    p.name = "idle";
    Instruction halt;
    halt.opcode = Opcode::Halt;
    p.code.push_back(halt);
    return p;
  }();
  return idle;
}

TopLevel::TopLevel(const Program& prog, const ArchConfig& arch, const SimOptions& opts, const TensorMap* inputs,
                   bool mirror, const sim::RepeatBlocks& blocks)
    : prog_(prog),
      arch_(arch),
      mirror_(mirror),
      functional_(opts.functional),
      record_trace_(opts.record_trace),
      // The wall-clock limit counts from here, setup included; every device's ISU watches it.
      wall_deadline_(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(arch.sim.max_wall_s))),
      running_(mirror ? 1 : arch.devices) {
  sync_.devices = arch.devices;
  sync_.simulated = running_;
  sync_.tokens.resize(static_cast<size_t>(arch.devices));
  sync_.waiting.resize(static_cast<size_t>(arch.devices));
  for (int d = 0; d < arch.devices; ++d) {
    token_events_.push_back(std::make_unique<sc_core::sc_event>());
    sync_.changed.push_back(token_events_.back().get());
  }
  const int simulated = running_;
  link_ = std::make_unique<sim::EslLink>("esl_link", sync_, mirror);  // elaborated first, as always
  sync_.link = link_.get();
  add_device(0, prog, inputs);
  for (int d = 1; d < simulated; ++d) {
    size_t k = static_cast<size_t>(d - 1);
    const Program& p = k < opts.other_devices.size() && opts.other_devices[k] ? *opts.other_devices[k] : idle_program();
    add_device(d, p, k < opts.other_inputs.size() ? opts.other_inputs[k] : nullptr);
  }
  if (!opts.vcd_path.empty()) trace_vcd(opts.vcd_path);
  if (blocks.count && simulated == 1 &&
      sim::LayerMemo::qualifies(*contexts_[0], *devices_[0], !opts.vcd_path.empty())) {
    // A block must hold more than the ISU's window, so that one boundary is passed at a time.
    if (blocks.count >= 3 && blocks.length > 2 * static_cast<size_t>(arch.isu.lookahead) + 2) {
      memo_ = std::make_unique<sim::LayerMemo>(*contexts_[0], *devices_[0], blocks);
      contexts_[0]->memo = memo_.get();
    }
  }
}

// Room in each kernel's span log for what its instructions will log (the ISU's issue and
// dependency spans, the engine's queue and occupancy spans, HBM windows: about 4-8 per fetched
// instruction), so the logs do not grow by reallocating and copying while the run appends.
// Capped per kernel: a kernel looping past it grows as before.
void reserve_span_logs(const Program& p, std::vector<sim::KernelCounters>& kernels) {
  constexpr uint64_t kEntriesPerFetch = 8, kMaxEntries = uint64_t{1} << 15;
  std::vector<uint64_t> fetches(kernels.size(), 0), repeats{1};
  for (const Instruction& in : p.code) {
    if (in.opcode == Opcode::LoopBegin) {
      repeats.push_back(std::min(kMaxEntries, repeats.back() * static_cast<uint64_t>(std::max<int64_t>(in.token, 1))));
    } else if (in.opcode == Opcode::LoopEnd) {
      if (repeats.size() > 1) repeats.pop_back();
    } else {
      uint64_t& n =
          fetches[static_cast<size_t>(std::clamp<int64_t>(in.kernel, 0, static_cast<int64_t>(kernels.size()) - 1))];
      n = std::min(kMaxEntries, n + repeats.back());
    }
  }
  for (size_t k = 0; k < kernels.size(); ++k)
    kernels[k].log.reserve(static_cast<size_t>(std::min(kMaxEntries, fetches[k] * kEntriesPerFetch)));
}

// Device 0 has its inputs (functional mode); another device starts from zeros without them.
void TopLevel::add_device(int d, const Program& p, const TensorMap* inputs) {
  auto c = std::make_unique<sim::DeviceContext>();
  c->device = d;
  c->program = &p;
  c->arch = &arch_;
  c->functional = functional_;
  c->record_trace = d == 0 && record_trace_;
  c->period = sc_core::sc_time(arch_.period_ps(), sc_core::SC_PS);
  c->one_ps = sc_core::sc_time(1, sc_core::SC_PS);
  c->kernel = sc_core::sc_get_curr_simcontext();
  c->kernels.resize(std::max<size_t>(p.kernels.size(), 1));
  reserve_span_logs(p, c->kernels);
  c->wall_deadline = wall_deadline_;
  c->devices_running = &running_;
  c->sync = &sync_;
  if (functional_) {  // their own memories (without input data they start from zeros)
    c->hbm_data.assign(p.hbm_bytes_allocated(), 0);
    if (d > 0) c->lmu_data.assign(static_cast<size_t>(arch_.lmu_bytes() / 4), 0.0f);
    if (d == 0 || inputs) load_inputs(p, inputs, c->hbm_data);
  }
  sync_.contexts.push_back(c.get());
  devices_.push_back(std::make_unique<sim::Device>(strcat("dev", d).c_str(), *c));
  contexts_.push_back(std::move(c));
}

// VCD of the key occupancy signals of every device (sampled by SystemC as they change).
void TopLevel::trace_vcd(const std::string& path) {
  std::string base = path;
  if (base.size() > 4 && base.substr(base.size() - 4) == ".vcd") base.resize(base.size() - 4);
  // Its directories, as for every other output (SystemC's writer makes none, and dies on SIGFPE
  // when it cannot open its file).
  std::error_code ec;
  if (std::filesystem::path dir = std::filesystem::path(path).parent_path(); !dir.empty())
    std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(strcat("--vcd ", path, ": cannot create its directory: ", ec.message()));
  vcd_ = sc_core::sc_create_vcd_trace_file(base.c_str());
  if (!vcd_) throw InputError("cannot create " + path);
  vcd_->set_time_unit(1, sc_core::SC_PS);  // the kernel resolution: every time is representable
  for (const auto& d : devices_) {
    std::string p = d->basename();
    for (const sim::Engine* e : std::initializer_list<const sim::Engine*>{&d->dma, &d->vxe, &d->sxe}) {
      sc_core::sc_trace(vcd_, e->traced_queue(), p + "." + e->basename() + ".queued");
      sc_core::sc_trace(vcd_, e->traced_busy(), p + "." + e->basename() + ".busy");
    }
    sc_core::sc_trace(vcd_, d->isu.traced_in_flight(), p + ".isu.in_flight");
  }
}

void TopLevel::run() {
  struct CloseVcd {
    sc_core::sc_trace_file* f;
    ~CloseVcd() {
      if (f) sc_core::sc_close_vcd_trace_file(f);
    }
  } close_vcd{vcd_};
  try {
    sc_core::sc_start();
    // A run that ran out of events rather than stopping: the modules still report.
    if (!sc_core::sc_end_of_simulation_invoked()) sc_core::sc_stop();
  } catch (const sc_core::sc_report& r) {
    throw InternalError(strcat("SystemC: ", r.what()));
  }
  const sim::DeviceContext& ctx = device0();
  if (!ctx.error.empty()) throw InputError(ctx.error);
  for (const auto* c : sync_.contexts)
    if (c->wall_clock_exceeded) throw SimulationStuck(wall_clock_report(*c, arch_));
  if (!sync_.deadlock.empty()) throw SimulationStuck(strcat("simulation of ", prog_.name, ": ", sync_.deadlock));
  check_finished();
}

void TopLevel::check_finished() const {
  if (device0().finished) return;
  std::string report =
      strcat("simulation of ", prog_.name, " did not finish within sim.max_us = ", arch_.sim.max_us, " us; engines: ");
  for (const sim::Engine* e : device0_model().engines())
    if (e->unit() != Unit::Esl)  // (the ESL's queue is never why a device did not finish)
      report += strcat(e->basename(), " queued=", e->queued(), " busy=", e->busy_workers(), "; ");
  throw SimulationStuck(report);
}

std::vector<TensorMap> TopLevel::other_outputs() const {
  std::vector<TensorMap> out;
  for (size_t d = 1; d < contexts_.size(); ++d)
    out.push_back(read_outputs(*contexts_[d]->program, contexts_[d]->hbm_data));
  return out;
}

// Each device's figures (mirrored: device 0's for each device), the energy events summed over
// the devices, and device 0's own statistics.
void TopLevel::collect(SimStats& s, EnergyEvents& energy, std::vector<double>& finish_ps) const {
  for (int k = 0; k < arch_.devices; ++k) {
    const size_t i = mirror_ ? 0 : static_cast<size_t>(k);
    const sim::DeviceContext& c = *contexts_[i];
    const sim::Device& dev = *devices_[i];
    finish_ps.push_back(c.finish_ps);
    EnergyEvents ev = c.energy;
    DeviceStats d;
    d.hbm_read_bytes = dev.hbm.counters().read_bytes;
    d.hbm_write_bytes = dev.hbm.counters().write_bytes;
    d.sync_wait_cycles = static_cast<uint64_t>(std::llround(dev.isu.counters().sync_wait_ps / arch_.period_ps()));
    for (const sim::Engine* e : dev.engines()) {
      e->add_to(ev);
      e->add_to(d);
      d.instructions += e->report().instructions;
    }
    energy += ev;
    s.devices.push_back(d);
  }
  for (const sim::Engine* e : device0_model().engines()) e->add_to(s);
}

void set_engine_stats(SimStats& s, const sim::Device& dev, double period) {
  for (const sim::Engine* engine : dev.engines()) {
    const sim::EngineReport& r = engine->report();
    EngineStats e;
    e.name = r.name;
    e.busy_cycles = static_cast<uint64_t>(std::llround(r.busy_ps / period));
    e.stalled_cycles = static_cast<uint64_t>(std::llround(r.stalled_ps / period));
    e.instructions = r.instructions;
    e.busy_fraction = s.cycles ? static_cast<double>(e.busy_cycles) / (static_cast<double>(s.cycles) * r.workers) : 0;
    e.work = r.work;
    e.work_unit = r.work_unit;
    e.peak_work_per_cycle = r.peak_work_per_cycle;
    e.utilization = e.peak_work_per_cycle > 0
                        ? (s.cycles ? e.work / (e.peak_work_per_cycle * static_cast<double>(s.cycles)) : 0)
                        : e.busy_fraction;
    s.instructions += e.instructions;
    s.engines.push_back(e);
  }
}

void set_kernel_stats(SimStats& s, const Program& prog, const sim::DeviceContext& ctx, const ArchConfig& arch,
                      bool breakdown) {
  const double period = arch.period_ps();
  // Each kernel's span by category; a skipped block's kernel (KernelCounters::log_of) has its
  // model kernel's, the same picoseconds shifted in time, computed once.
  std::vector<std::optional<std::array<double, sim::kSpanKinds>>> spans(ctx.kernels.size());
  auto span_of = [&](size_t k) {
    const size_t from = ctx.kernels[k].log_of >= 0 ? static_cast<size_t>(ctx.kernels[k].log_of) : k;
    const auto& c = ctx.kernels[from];
    if (!spans[from]) spans[from] = attribute_span(c.log, c.first_issue_ps, c.last_retire_ps);
    return *spans[from];
  };
  for (size_t k = 0; k < prog.kernels.size(); ++k) {
    const auto& c = ctx.kernels[k];
    KernelStats ks;
    ks.name = prog.kernels[k];
    ks.start_cycle = c.first_issue_ps < 0 ? 0 : static_cast<uint64_t>(std::llround(c.first_issue_ps / period));
    ks.end_cycle = static_cast<uint64_t>(std::llround(c.last_retire_ps / period));
    ks.cycles = ks.end_cycle > ks.start_cycle ? ks.end_cycle - ks.start_cycle : 0;
    ks.hbm_read_bytes = c.hbm_read;
    ks.hbm_write_bytes = c.hbm_write;
    ks.instructions = c.instructions;
    ks.sxe_flops = c.sxe_flops;
    ks.sxe_lane_flops = c.sxe_lane_flops;
    ks.vxe_ops = c.vxe_ops;
    set_roofline(ks, arch);
    if (breakdown && c.first_issue_ps >= 0 && ks.cycles > 0)
      ks.breakdown = breakdown_cycles(span_of(k), c.first_issue_ps, ks.start_cycle, ks.end_cycle, period);
    s.kernels.push_back(ks);
  }
}

std::vector<TraceRecord> trace_records(const Program& prog, const sim::DeviceContext& ctx, const sim::Device& dev,
                                       const ArchConfig& arch) {
  int nch = arch.hbm.channels, groups = std::min(nch, 8), per_group = (nch + groups - 1) / groups;
  auto track = [&](int engine) -> std::string {
    if (engine >= 0) return dev.engines()[static_cast<size_t>(engine)]->basename();
    int g = -1 - engine;
    return strcat("hbm ch", g * per_group, "-", std::min(nch, (g + 1) * per_group) - 1);
  };
  std::vector<TraceRecord> out;
  for (const auto& ev : ctx.trace)
    out.push_back({track(ev.engine), ev.kernel >= 0 ? prog.kernels[static_cast<size_t>(ev.kernel)] : "", ev.text,
                   ev.start_ps * 1e-6, (ev.end_ps - ev.start_ps) * 1e-6});
  return out;
}

}  // namespace

namespace {
SimResult result_of(const TopLevel& top, const Program& prog, const ArchConfig& arch, const SimOptions& opts);
}  // namespace

SimResult simulate(const Program& prog, const ArchConfig& arch, const SimOptions& opts, const TensorMap* inputs) {
  // Blocks are looked for where layer memoisation may run (LayerMemo::qualifies, which the
  // devices built then confirm).
  const bool memo_may_run = arch.sim.memoize && arch.devices == 1 && !opts.functional && !opts.record_trace &&
                            opts.vcd_path.empty() && arch.memory.model == ArchConfig::Memory::Model::Bandwidth;
  const sim::RepeatBlocks blocks = validate(prog, arch, opts, memo_may_run);
  // Devices whose programs are rotations of device 0's: device 0 simulated alone stands for all.
  const bool mirror =
      arch.devices > 1 &&
      (opts.others_rotate_device0 || (opts.mirror_symmetric_devices && !opts.functional && opts.vcd_path.empty() &&
                                      rotation_asymmetry(prog, opts.other_devices, arch.devices).empty()));
  // Held until `top` (every SystemC object of the run) is destroyed, at return.
  const std::unique_lock<std::mutex> turn = systemc_turn();
  if (blocks.count) {
    TopLevel top(prog, arch, opts, inputs, mirror, blocks);
    bool rerun = false;
    try {
      top.run();
      rerun = top.memo_rerun_needed();
    } catch (...) {  // the failure of a run that skipped blocks is reported as the whole run's
      if (!top.memo_skipped_blocks()) throw;
      rerun = true;
    }
    if (!rerun) return result_of(top, prog, arch, opts);
  }
  TopLevel top(prog, arch, opts, inputs, mirror, sim::RepeatBlocks{});
  top.run();
  return result_of(top, prog, arch, opts);
}

namespace {
// The statistics (and functional outputs, trace) of a finished run.
SimResult result_of(const TopLevel& top, const Program& prog, const ArchConfig& arch, const SimOptions& opts) {
  SimResult res;
  res.memo_skipped_blocks = top.memo_skipped_blocks();
  SimStats& s = res.stats;
  EnergyEvents energy_events;  // summed over the devices
  std::vector<double> device_finish_ps;
  top.collect(s, energy_events, device_finish_ps);
  if (opts.functional) res.other_outputs = top.other_outputs();

  const sim::DeviceContext& ctx = top.device0();
  const sim::Device& dev = top.device0_model();
  const double period = arch.period_ps();
  s.cycles = static_cast<uint64_t>(std::llround(ctx.finish_ps / period));
  for (double f : device_finish_ps) s.device_cycles.push_back(static_cast<uint64_t>(std::llround(f / period)));
  if (arch.devices > 1)
    for (size_t d = 0; d < s.devices.size(); ++d) s.devices[d].cycles = s.device_cycles.at(d);
  else
    s.devices.clear();
  s.latency_us = ctx.finish_ps * 1e-6;
  s.hbm_read_bytes = dev.hbm.counters().read_bytes;
  s.hbm_write_bytes = dev.hbm.counters().write_bytes;
  s.hbm_burst_bytes = dev.hbm.counters().burst_bytes;
  if (const sim::DramBanks* banks = dev.hbm.banks()) {
    s.dram_banks = true;
    s.dram_row_hits = banks->counters().row_hits;
    s.dram_row_misses = banks->counters().row_misses;
    s.dram_refreshes = banks->counters().refreshes;
  }
  double peak_bytes = arch.hbm.bandwidth_gbps * 1e-3 * ctx.finish_ps;  // GB/s * ps
  s.hbm_bandwidth_utilization =
      peak_bytes > 0 ? static_cast<double>(s.hbm_read_bytes + s.hbm_write_bytes) / peak_bytes : 0;
  const sim::IsuCounters& isu = dev.isu.counters();
  s.isu_hazard_stall_cycles = static_cast<uint64_t>(std::llround(isu.hazard_stall_ps / period));
  s.isu_queue_stall_cycles = static_cast<uint64_t>(std::llround(isu.queue_stall_ps / period));
  s.isu_out_of_order_issues = isu.issued_out_of_order;
  set_engine_stats(s, dev, period);
  set_kernel_stats(s, prog, ctx, arch, opts.kernel_breakdown);
  // Static power is charged from the start until the last device halts, on every device.
  double run_ps = ctx.finish_ps;
  for (double f : device_finish_ps) run_ps = std::max(run_ps, f);
  s.energy = compute_energy(energy_events, arch, run_ps * 1e-12, arch.devices);
  if (opts.functional) res.outputs = read_outputs(prog, ctx.hbm_data);
  if (opts.record_trace) res.trace = trace_records(prog, ctx, dev, arch);
  return res;
}
}  // namespace

nlohmann::json stats_to_json(const SimStats& s) {
  nlohmann::json j;
  j["cycles"] = s.cycles;
  if (s.device_cycles.size() > 1) j["device_cycles"] = s.device_cycles;
  if (!s.devices.empty()) {
    nlohmann::json devs = nlohmann::json::array();
    uint64_t esl = 0, wait = 0, rd = 0, wr = 0;
    for (const auto& d : s.devices) {
      devs.push_back({{"cycles", d.cycles},
                      {"hbm_read_bytes", d.hbm_read_bytes},
                      {"hbm_write_bytes", d.hbm_write_bytes},
                      {"esl_bytes", d.esl_bytes},
                      {"esl_sends", d.esl_sends},
                      {"sync_wait_cycles", d.sync_wait_cycles},
                      {"instructions", d.instructions}});
      esl += d.esl_bytes;
      wait += d.sync_wait_cycles;
      rd += d.hbm_read_bytes;
      wr += d.hbm_write_bytes;
    }
    j["devices"] = devs;
    j["devices_total"] = {
        {"esl_bytes", esl}, {"sync_wait_cycles", wait}, {"hbm_read_bytes", rd}, {"hbm_write_bytes", wr}};
  }
  j["latency_us"] = s.latency_us;
  j["hbm_read_bytes"] = s.hbm_read_bytes;
  j["hbm_write_bytes"] = s.hbm_write_bytes;
  j["hbm_burst_bytes"] = s.hbm_burst_bytes;
  j["hbm_bandwidth_utilization"] = s.hbm_bandwidth_utilization;
  if (s.dram_banks) {
    const uint64_t visits = s.dram_row_hits + s.dram_row_misses;
    j["dram"] = {{"row_hits", s.dram_row_hits},
                 {"row_misses", s.dram_row_misses},
                 {"row_hit_rate", visits ? static_cast<double>(s.dram_row_hits) / static_cast<double>(visits) : 0.0},
                 {"refreshes", s.dram_refreshes}};
  }
  j["instructions"] = s.instructions;
  j["isu_hazard_stall_cycles"] = s.isu_hazard_stall_cycles;
  j["isu_queue_stall_cycles"] = s.isu_queue_stall_cycles;
  if (s.isu_out_of_order_issues) j["isu_out_of_order_issues"] = s.isu_out_of_order_issues;
  if (s.sxe_rtl_gemms)
    j["sxe_rtl"] = {{"gemms", s.sxe_rtl_gemms}, {"cycles", s.sxe_rtl_cycles}, {"stall_cycles", s.sxe_rtl_stall_cycles}};
  if (s.vxe_rtl_instructions)
    j["vxe_rtl"] = {
        {"instructions", s.vxe_rtl_instructions}, {"cycles", s.vxe_rtl_cycles}, {"elements", s.vxe_rtl_elements}};
  nlohmann::json eng = nlohmann::json::object();
  for (const auto& e : s.engines)
    eng[e.name] = {{"busy_cycles", e.busy_cycles},     {"stalled_cycles", e.stalled_cycles},
                   {"instructions", e.instructions},   {"work", e.work},
                   {"work_unit", e.work_unit},         {"peak_work_per_cycle", e.peak_work_per_cycle},
                   {"busy_fraction", e.busy_fraction}, {"utilization", e.utilization}};
  j["engines"] = eng;
  nlohmann::json ks = nlohmann::json::array();
  for (const auto& k : s.kernels) {
    const SpanBreakdown& b = k.breakdown;
    ks.push_back({{"name", k.name},
                  {"start_cycle", k.start_cycle},
                  {"end_cycle", k.end_cycle},
                  {"cycles", k.cycles},
                  {"hbm_read_bytes", k.hbm_read_bytes},
                  {"hbm_write_bytes", k.hbm_write_bytes},
                  {"instructions", k.instructions},
                  {"sxe_flops", k.sxe_flops},
                  {"vxe_ops", k.vxe_ops},
                  {"roofline_cycles", k.roofline_cycles},
                  {"bound", k.bound},
                  {"roofline_fraction", k.cycles ? k.roofline_cycles / static_cast<double>(k.cycles) : 0.0},
                  {"breakdown_cycles",
                   {{"bandwidth", b.bandwidth},
                    {"compute", b.compute},
                    {"latency", b.latency},
                    {"sync", b.sync},
                    {"dependency", b.dependency},
                    {"issue", b.issue},
                    {"other", b.other}}}});
  }
  j["kernels"] = ks;
  nlohmann::json gb = nlohmann::json::array();
  for (const auto& b : s.graph_breaks)
    gb.push_back({{"node", b.node}, {"op", b.op}, {"bytes", b.bytes}, {"host_us", b.host_us}});
  j["graph_breaks"] = gb;
  j["graph_breaks_host_us"] = s.host_us();
  if (s.energy.configured) j["energy"] = energy_to_json(s.energy);
  return j;
}

double SimStats::host_us() const {
  double t = 0;
  for (const auto& b : graph_breaks) t += b.host_us;
  return t;
}

// Trace-event JSON. Slices on one thread must nest, but an engine with several workers (DMA)
// or a pipelined one runs overlapping instructions: each engine gets one track per in-flight
// slot ("dma #0", "dma #1", ...), a slice going to the lowest slot free at its start. Tracks
// are numbered in a fixed engine order (ISU-fed engines, then the host link, then HBM
// channel groups), so lanes keep their order from trace to trace.
nlohmann::json trace_to_json(const std::vector<TraceRecord>& t) {
  static const std::vector<std::string> order = {"sxe", "vxe", "dma", "host", "esl"};
  auto rank = [&](const std::string& engine) {
    auto it = std::find(order.begin(), order.end(), engine);
    if (it != order.end()) return static_cast<int>(it - order.begin());
    return static_cast<int>(order.size()) + (engine.rfind("hbm", 0) == 0 ? 1 : 0);
  };
  std::vector<size_t> by_start(t.size());
  for (size_t i = 0; i < t.size(); ++i) by_start[i] = i;
  std::stable_sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) { return t[a].start_us < t[b].start_us; });
  std::map<std::string, std::vector<double>> slot_end;  // engine -> when each slot is free
  std::vector<int> slot(t.size(), 0);
  for (size_t i : by_start) {
    auto& ends = slot_end[t[i].engine];
    size_t s = 0;
    while (s < ends.size() && ends[s] > t[i].start_us + 1e-9) ++s;  // 1e-9 us: rounding of start + dur
    if (s == ends.size()) ends.push_back(0);
    ends[s] = t[i].start_us + t[i].dur_us;
    slot[i] = static_cast<int>(s);
  }
  // Track ids: engines by rank, then name; slots in order.
  std::vector<std::string> engines;
  for (const auto& [e, ends] : slot_end) engines.push_back(e);
  std::stable_sort(engines.begin(), engines.end(), [&](const std::string& a, const std::string& b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a < b;
  });
  std::map<std::pair<std::string, int>, int> tid;
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"pid", 0}, {"name", "process_name"}, {"args", {{"name", "LPU device 0"}}}});
  for (const auto& e : engines) {
    size_t n = slot_end[e].size();
    for (size_t s = 0; s < n; ++s) {
      int id = static_cast<int>(tid.size()) + 1;
      tid[{e, static_cast<int>(s)}] = id;
      std::string name = n > 1 ? strcat(e, " #", s) : e;
      events.push_back({{"ph", "M"}, {"pid", 0}, {"tid", id}, {"name", "thread_name"}, {"args", {{"name", name}}}});
      events.push_back(
          {{"ph", "M"}, {"pid", 0}, {"tid", id}, {"name", "thread_sort_index"}, {"args", {{"sort_index", id}}}});
    }
  }
  for (size_t i = 0; i < t.size(); ++i) {
    const auto& r = t[i];
    events.push_back({{"ph", "X"},
                      {"pid", 0},
                      {"tid", tid.at({r.engine, slot[i]})},
                      {"name", r.text.substr(0, r.text.find(' '))},
                      {"cat", r.kernel},
                      {"ts", r.start_us},
                      {"dur", r.dur_us},
                      {"args", {{"kernel", r.kernel}, {"instr", r.text}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

}  // namespace lpu
