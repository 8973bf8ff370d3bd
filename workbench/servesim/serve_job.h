// `lpu serve` (docs/serving.md): a served model's requests through a simulated cluster of LPU
// replicas (or a GPU prefill pool and LPU decode replicas), every step priced by the compiled
// program on the cycle model: simulated step by step (`exact`), or by the model FittedStepCost
// builds from simulated points, whose error against exact simulation the run measures on a
// sample of its own steps.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "config/arch_config.h"
#include "generate/symbolic_steps.h"
#include "serve/capacity.h"
#include "serve/cluster.h"
#include "serve/generator.h"
#include "servesim/deployment.h"
#include "workload/workload.h"

namespace lpu {

struct ServeJobOptions {
  std::string fusion = "greedy";
  std::string trace_file;  // the requests; empty: the generator below
  serve::GeneratorSpec generator;
  serve::SchedulerConfig scheduler;  // kv_capacity_blocks: from the deployment (plan_deployment)
  int64_t replicas = 1;              // unified replicas, or the decode pool's when disaggregated
  serve::RouterKind router = serve::RouterKind::RoundRobin;
  serve::Slo slo;
  serve::Watchdog watchdog;
  // Prefill/decode disaggregation: prefill_replicas > 0 puts the prefill on its own pool of
  // LPU replicas (the same devices and scheduler keys) and hands each KV cache over `link`.
  int64_t prefill_replicas = 0;
  // The prefill pool on GPUs instead (a config path, or a name in configs/gpus/): HyperAccel's
  // serving mode, GPU prefill + LPU decode. Needs prefill_replicas > 0.
  std::string prefill_gpu;
  serve::LinkConfig link;
  bool exact = false;          // compile and simulate every step
  int64_t error_samples = 8;   // steps re-simulated exactly to measure the model's error (0: none)
  int64_t context_step = 256;  // the model's context grid
  std::string cost_cache;      // the model's on-disk memo (a JSON file; "" for none)
  bool find_rate = false;      // search the highest rate meeting the SLOs (needs the generator)
  serve::CapacitySearch search;
  std::ostream* progress = nullptr;  // a line per phase
  // --explain-recompiles: why each exact step's program was compiled rather than instantiated
  // from a symbolic one (StepRunner::run_in_sequence).
  std::ostream* explain = nullptr;
};

struct StepCostError {
  int64_t samples = 0;
  double p50 = 0, max = 0;  // |model - exact| / exact of the step time
  double energy_max = 0;
};

struct ServeJobResult {
  WorkloadSpec workload;
  ArchConfig arch;
  Deployment deployment;
  serve::RequestList requests;
  serve::ClusterConfig cluster;
  serve::ServeResult result;
  std::optional<serve::CapacityResult> capacity;
  StepCostError error;
  bool exact = false;
  std::string prefill_gpu;  // the GPU prefill pool's config name ("" : LPUs)
  size_t points_simulated = 0, points_loaded = 0, exact_steps = 0;
  // Compiles of every step program (probes, samples and exact steps), and how the exact steps'
  // programs came from symbolic ones (--exact).
  size_t compiles = 0;
  SymbolicCounters symbolic;
  double wall_s = 0, model_wall_s = 0, error_wall_s = 0;
  // Deterministic: the same inputs give the same bytes. `with_wall` adds "wall": wall times and
  // where the model's points came from (simulated now or the memo), which differ between runs.
  nlohmann::ordered_json to_json(bool with_wall = false, bool with_steps = true) const;
  std::string summary() const;  // the terminal report
};

// What `lpu serve`'s text flags say (--arrivals, --rate, --prompt, --output, --router; empty
// lengths: the defaults), for the CLI and the Python module alike.
struct ServeTextOptions {
  std::string arrivals = "poisson", prompt, output, router = "round-robin";
  double rate = 1;
};
// Into `o`: the generator's arrivals and lengths (unless o.trace_file names the requests) and the
// router. Default lengths: the chat trace's log-normals (workloads/traces/README.md), clamped so
// that a prompt and its output fit the model's positions. InputError naming the flag.
void apply_serve_text(ServeJobOptions& o, const WorkloadSpec& w, const ServeTextOptions& t);

// InputError for bad options, requests the model cannot take (longer than its max_position)
// or that can never fit the KV cache (naming the bytes and devices they would need).
ServeJobResult run_serve_job(const WorkloadSpec& w, const ArchConfig& arch, const ServeJobOptions& o);

}  // namespace lpu
