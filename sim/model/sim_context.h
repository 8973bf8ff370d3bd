// Shared state of one simulated device: the program, configuration, clock, statistics and
// the functional-mode data stores. Modules get a reference; there are no globals.
#pragma once
#include <systemc>

#include <cstdint>
#include <string>
#include <vector>

#include "config/arch_config.h"
#include "isa/program.h"

namespace lpu::sim {

// Closed interval of bytes [lo, hi) in one memory space.
struct Range {
  uint64_t lo = 0, hi = 0;
  bool overlaps(const Range& o) const { return lo < o.hi && o.lo < hi; }
};

// What an instruction touches, for the scoreboard.
struct Footprint {
  std::vector<Range> lm_reads, lm_writes, hbm_reads, hbm_writes;
};

struct TraceEvent {
  int engine;      // index into DeviceContext::engine_names
  int kernel;
  size_t instr;
  double start_ps, end_ps;
};

struct EngineCounters {
  double busy_ps = 0;
  uint64_t instructions = 0;
};

struct KernelCounters {
  double first_issue_ps = -1, last_retire_ps = 0;
  uint64_t hbm_read = 0, hbm_write = 0, instructions = 0;
};

struct DeviceContext {
  int device = 0;
  const Program* program = nullptr;
  const ArchConfig* arch = nullptr;
  bool functional = false;
  bool record_trace = false;

  sc_core::sc_time period;
  sc_core::sc_time cycles(double c) const { return period * c; }

  // Functional stores: HBM bytes (in each buffer's dtype) and LMU fp32 words.
  std::vector<uint8_t> hbm_data;
  std::vector<float> lmu_data;

  // Statistics.
  std::vector<std::string> engine_names;
  std::vector<EngineCounters> engines;
  std::vector<KernelCounters> kernels;
  std::vector<TraceEvent> trace;
  uint64_t hbm_read_bytes = 0, hbm_write_bytes = 0, hbm_burst_bytes = 0;
  double isu_hazard_stall_ps = 0, isu_queue_stall_ps = 0;
  // sxe.model: rtl -- what the verilated tree did, summed over the sxe.gemm instructions.
  uint64_t sxe_rtl_gemms = 0, sxe_rtl_cycles = 0, sxe_rtl_stall_cycles = 0;
  // An error raised inside a SystemC process (bad address, malformed operand...) is recorded
  // here and the simulation stopped; simulate() rethrows it as an InputError.
  std::string error;
  bool finished = false;
  double finish_ps = 0;
};

Footprint footprint(const Instruction& in);

}  // namespace lpu::sim
