// The simulator's entry point: run an LPU program on an architecture config and return
// statistics (and, in functional mode, the output tensors).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/arch_config.h"
#include "energy.h"
#include "isa/program.h"
#include "ref/tensor.h"

namespace lpu {

struct SimOptions {
  bool functional = false;   // move and compute real values
  bool record_trace = false; // keep one event per instruction (for --trace)
  std::string vcd_path;      // write a VCD of queue occupancy, busy workers and in-flight count
  // Programs of devices 1, 2, ... (device 0 runs `prog`); devices without one stay idle.
  std::vector<const Program*> other_devices;
  // Functional mode: their input and weight data (other_inputs[d-1] for device d; a device
  // without one starts from zeros).
  std::vector<const TensorMap*> other_inputs;
  // Timing mode, every device given a program: when they are rotations of device 0's
  // (device_symmetry.h: tensor-parallel ranks), simulate device 0 alone and give the other
  // devices its figures; the statistics are those of simulating every device (tested).
  // Off: every device simulated (functional mode and --vcd always simulate every device).
  bool mirror_symmetric_devices = true;
  // The caller vouches that devices 1, 2, ... run `prog` rotated (rotation_asymmetry was ""
  // for the programs this one is instantiated from, as lpu generate checks once per template):
  // device 0 is simulated alone and `other_devices` may be empty. Timing mode only.
  bool others_rotate_device0 = false;
  // Attribute each kernel's span to bandwidth, compute, latency ... (KernelStats::breakdown).
  // lpu generate reads only a step's totals and turns it off (about 7% of a step's time).
  bool kernel_breakdown = true;
};

// Utilisation is useful work over the work the engine could have done at its peak in the
// run's cycles: SXE MACs / (mac_trees x lanes x cycles); VXE element operations / (lanes x
// cycles); DMA bytes / (HBM peak bytes per cycle x cycles) (the SXE streams its weights
// itself, so DMA bytes are a part of the HBM traffic). Busy time is reported separately:
// an engine can be busy all the time and still use a small part of its peak (a GEMV with
// half the MAC trees idle). The host and ESL have no peak rate: their utilisation is their
// busy fraction.
struct EngineStats {
  std::string name;
  uint64_t busy_cycles = 0;
  uint64_t stalled_cycles = 0;  // cycles its next instruction waited at the ISU for a hazard or queue slot
  uint64_t instructions = 0;
  double work = 0;              // useful work done, in `work_unit`
  std::string work_unit;        // "MACs" | "element_ops" | "bytes" | "" (no peak rate)
  double peak_work_per_cycle = 0;
  double utilization = 0;       // work / (peak_work_per_cycle x cycles)
  double busy_fraction = 0;     // busy_cycles / (cycles x workers)
};

// Where a kernel's span went (docs/sim-model.md, "Per-kernel attribution"): each cycle of
// [start_cycle, end_cycle) in exactly one category, by priority; they sum to `cycles`.
struct SpanBreakdown {
  uint64_t bandwidth = 0;   // some HBM channel moves the kernel's bytes
  uint64_t compute = 0;     // else its VXE op or its SXE's MAC work runs
  uint64_t latency = 0;     // else a DMA or SXE stream of it is in flight (setup, HBM latency, queued channels, drain)
  uint64_t sync = 0;        // else sync barrier/token wait, ESL send or host call of it
  uint64_t dependency = 0;  // else its next instruction waits at the ISU on the scoreboard
  uint64_t issue = 0;       // else its instructions wait in an engine queue, for a queue slot or the issue slot
  uint64_t other = 0;       // none of these (zero when the attribution log is complete)
};

// A kernel's roofline on the config: the longest of its HBM bytes at the sustained bandwidth
// (hbm.bandwidth_gbps x hbm.efficiency), its SXE FLOPs at sxe.mac_trees x sxe.lanes x 2 per
// cycle (x sxe.packed_lanes for a gemm of packed weights: sxe_lane_flops) and its VXE element
// operations at vxe.lanes per cycle; `bound` names the longest.
struct KernelStats {
  std::string name;
  uint64_t start_cycle = 0, end_cycle = 0, cycles = 0;
  uint64_t hbm_read_bytes = 0, hbm_write_bytes = 0;
  uint64_t instructions = 0;
  double sxe_flops = 0, vxe_ops = 0;
  double sxe_lane_flops = 0;  // sxe_flops over each gemm's packed lanes: the roofline's SXE work (not in the JSON)
  double roofline_cycles = 0;
  std::string bound;        // "hbm" | "sxe" | "vxe" (the longest of the three times; "hbm" when all are zero)
  SpanBreakdown breakdown;
};

// A graph break as run: the node the host computed, its op, bytes over the host link and
// host time (latency + bytes / link + op time).
struct GraphBreakStats {
  std::string node, op;
  int64_t bytes = 0;
  double host_us = 0;
};

// One device of a multi-device run (tensor parallelism): its own counters.
struct DeviceStats {
  uint64_t cycles = 0;                   // when it halted
  uint64_t hbm_read_bytes = 0, hbm_write_bytes = 0;
  uint64_t esl_bytes = 0, esl_sends = 0;  // what it sent over the ESL
  uint64_t sync_wait_cycles = 0;          // its ISU blocked at sync.wait: exposed synchronisation
  uint64_t instructions = 0;
};

struct SimStats {
  uint64_t cycles = 0;                     // device 0
  std::vector<uint64_t> device_cycles;     // when each device halted
  double latency_us = 0;
  uint64_t hbm_read_bytes = 0, hbm_write_bytes = 0;
  uint64_t hbm_burst_bytes = 0;            // bytes the channels actually moved (burst-rounded)
  double hbm_bandwidth_utilization = 0;    // (read + write) / (peak bandwidth x latency): bytes over peak bytes
  // Under memory.model: banks (device 0): row buffer hits and misses of its row visits, and
  // refreshes; `dram` in the JSON, absent under the bandwidth model.
  bool dram_banks = false;
  uint64_t dram_row_hits = 0, dram_row_misses = 0, dram_refreshes = 0;
  uint64_t instructions = 0;
  uint64_t isu_hazard_stall_cycles = 0, isu_queue_stall_cycles = 0;
  // Instructions the ISU issued past an older one still waiting in its window (isu.lookahead
  // > 1; JSON "isu_out_of_order_issues" when non-zero).
  uint64_t isu_out_of_order_issues = 0;
  // sxe.model: rtl only (JSON "sxe_rtl" when non-zero): sxe.gemm instructions the verilated
  // tree ran, its cycles and its stall cycles (weight stream slower than the tree), summed.
  uint64_t sxe_rtl_gemms = 0, sxe_rtl_cycles = 0, sxe_rtl_stall_cycles = 0;
  // vxe.model: rtl only (JSON "vxe_rtl" when non-zero): exp / div / reciprocal instructions the
  // verilated special-function pipelines ran, their cycles and elements, summed.
  uint64_t vxe_rtl_instructions = 0, vxe_rtl_cycles = 0, vxe_rtl_elements = 0;
  std::vector<EngineStats> engines;
  std::vector<KernelStats> kernels;
  std::vector<GraphBreakStats> graph_breaks;  // in execution order
  std::vector<DeviceStats> devices;           // every device, when the config has more than one
  double host_us() const;                     // their total host time
  // Energy of the whole run (every device; sim/energy.h), when the config has an energy
  // section (JSON "energy" then, absent otherwise).
  EnergyStats energy;
};

struct TraceRecord {
  std::string engine;
  std::string kernel;
  std::string text;
  double start_us, dur_us;
};

struct SimResult {
  SimStats stats;
  TensorMap outputs;                 // functional mode: every output buffer, by name
  std::vector<TensorMap> other_outputs;  // functional mode, devices 1, 2, ...: theirs
  std::vector<TraceRecord> trace;    // when record_trace
  // Blocks of repeating instructions (decoder layers) the run skipped rather than simulated
  // (sim/model/layer_memo.h; the statistics are the same either way).
  uint64_t memo_skipped_blocks = 0;
};

// `inputs` (functional mode) holds data for every input and weight buffer, by name.
// Throws InputError (bad program, weights that do not fit) or SimulationStuck.
SimResult simulate(const Program& prog, const ArchConfig& arch, const SimOptions& opts, const TensorMap* inputs = nullptr);

nlohmann::json stats_to_json(const SimStats& s);
// Chrome / Perfetto trace-event JSON: one track per engine, one slice per instruction.
nlohmann::json trace_to_json(const std::vector<TraceRecord>& t);

}  // namespace lpu
