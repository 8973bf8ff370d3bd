// One forward step of a built-in decoder compiled and simulated on its own, through the same
// pipeline as a generation's steps (regional compilation, the exact compile cache, every
// tensor-parallel rank over arch.devices): what serving's step-cost models (workbench/servesim)
// ask for any step, a ragged one (WorkloadSpec::ragged) included. Fixed fusion policies only
// (the tuner's search simulates its candidates: far too slow per serving step).
#pragma once
#include <cstdint>
#include <string>

#include "driver/compile_cache.h"
#include "generate/symbolic_steps.h"
#include "jobs/jobs.h"

namespace lpu {

// A step's figures from the simulator (the whole replica: energy of every device).
struct StepFigures {
  uint64_t cycles = 0;
  double latency_s = 0, energy_j = 0;
  uint64_t hbm_read_bytes = 0, hbm_write_bytes = 0;
  size_t kernels = 0;
};

// Everything build_graph and compile_graph read of a step: equal keys compile to equal
// programs (the exact compile cache's key; the search policy adds the whole architecture).
std::string step_cache_key(const WorkloadSpec& s, const CompileOptions& co, const ArchConfig& arch);

// Every rank's program of step `s` (devices > 1: tensor parallelism, workload/tensor_parallel.h),
// each compiled by `compile_rank` (which fills rank 0's kernels and compulsory bytes), and
// whether devices 1.. run device 0's program rotated (sim/device_symmetry.h).
CompiledStep compile_ranks(const WorkloadSpec& s, int64_t devices,
                           const std::function<Program(const WorkloadSpec&, CompiledStep&)>& compile_rank);

// Simulates a compiled step (timing only, no per-kernel attribution: a step's totals).
SimStats simulate_compiled(const CompiledStep& e, const ArchConfig& arch);

// What a generation keeps of a step's simulation, and the wall time it took. Plain numbers, so
// a forked simulation (process/forked_work.h) sends them back byte for byte.
struct StepSimFigures {
  uint64_t cycles = 0, hbm_read_bytes = 0, hbm_write_bytes = 0;
  double latency_us = 0, energy_j = 0, wall_s = 0;
};
StepSimFigures simulate_step_figures(const CompiledStep& e, const ArchConfig& arch);
std::string encode_figures(const StepSimFigures& f);
StepSimFigures decode_figures(const std::string& bytes);  // InternalError for a wrong size

class StepRunner {
 public:
  // InputError for a policy that simulates (search, search-isu) or an unknown one.
  StepRunner(const ArchConfig& arch, const std::string& fusion, CompileCache& cache);
  // The step compiled (or taken from the cache) and simulated.
  StepFigures run(const WorkloadSpec& step);
  // The same figures from the decoder at 1 and 2 layers, extended linearly to its depth: a
  // decoder's layers are one repeated program (regional compilation rests on it), so the
  // simulated time grows by the same amount per layer (measured on lpu-asic: within 2e-6 of
  // the whole model's cycles for LLaMA-2-7B decoding 4 sequences at context 700, 3e-7 for an
  // OPT-1.3B prefill of 256 tokens; energy within 1e-15). Runs the whole model below 3 layers.
  StepFigures run_by_layers(const WorkloadSpec& step);
  // As run, for the steps of a run that follow each other (`lpu serve --exact`): the program is
  // symbolic in the contexts of the step's cached sequences, which move together while the
  // batch stays the same (symbolic_steps.h, lazy templates: the step's key holds the number of
  // sequences, each one's tokens and its context relative to the smallest cached one). A step
  // with no cached sequence is compiled, or taken from the exact cache, as by run.
  StepFigures run_in_sequence(const WorkloadSpec& step);
  // Where run_in_sequence's recompiles are explained (`--explain-recompiles`); unset: nowhere.
  void set_explain(SymbolicSteps::Explain e);
  const SymbolicCounters& symbolic_counters() const { return sym_.counters(); }
  size_t compiles() const { return compiles_; }
  size_t simulations() const { return simulations_; }
  int64_t devices() const { return devices_; }

 private:
  const ArchConfig& arch_;
  CompileCache& cache_;
  CompileOptions co_;
  int64_t devices_ = 1;
  size_t compiles_ = 0, simulations_ = 0, sequenced_ = 0;
  SymbolicSteps::Explain explain_;
  SymbolicSteps sym_;

  std::shared_ptr<const CompiledStep> compile(const WorkloadSpec& step);
  StepFigures simulate(const CompiledStep& e);
};

}  // namespace lpu
