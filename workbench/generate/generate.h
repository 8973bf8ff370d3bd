// `lpu generate` (docs/generate.md): a whole generation of a built-in LLM, or of a graph file
// that is one decode step against a static KV cache, on one device or N (tensor parallelism),
// batch 1..256: the prefill and then one decode step per further token with the context growing
// by one each, each step compiled (regionally, or taken from the compile cache, or instantiated
// from a symbolic program) and simulated. Step k (1-based) produces generated token k, at
// position prompt_len + k - 1: step 1 is the prefill of the prompt (its LM head produces token
// 1), step k >= 2 decodes the token at position prompt_len + k - 2 against that many cached
// tokens. Steps run back to back: sampling and host time between them are not modelled.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "driver/compile_cache.h"  // CompileCache, KernelCostMemo
#include "generate/regional.h"
#include "jobs/jobs.h"

namespace lpu {

struct GenerateStep;

// The static KV cache of a graph file's decode step (generate.cpp: static_kv_cache_of).
struct StaticKvCache {
  std::string buffer;  // the first cache buffer the graph writes (meta.buffer_writes)
  size_t buffers = 0;  // cache buffers written (a key and a value per layer)
  int64_t max_cache_len = 0;
};

struct GenerateOptions {
  // From flags; unset: the workload's keys, then the defaults below.
  std::optional<int64_t> prompt_len, gen_len;
  static constexpr int64_t kDefaultPromptLen = 32, kDefaultGenLen = 32;
  std::string fusion = "greedy";
  BreakOptions breaks;
  // Decode steps through symbolic programs with guards (CompileCache::Symbolic); off: every
  // step compiled (or taken from the exact cache). Policies that simulate (search) never are.
  bool symbolic = true;
  // Each compile through regional compilation (regional.h: the repeated decoder layer compiled
  // once, at 3 and 4 layers, and instantiated per layer); off: the whole model every time.
  bool regional = true;
  std::ostream* explain = nullptr;  // --explain-recompiles: why each recompile happened
  // Called with every step and the program it simulated (tests compare it with a plain compile).
  std::function<void(const GenerateStep&, const Program&)> on_step;
  std::ostream* progress = nullptr;  // progress lines (or a bar) go here when set
  bool progress_bar = false;
  // Processes simulating steps at once: > 1 forks that many copies of this process per batch of
  // steps (process/forked_work.h) while this one compiles the next batch; the figures are the
  // same. 1: every step in this process (the library's default: a caller with threads, such as
  // Python, should not fork; `lpu generate --jobs` defaults to the machine's cores).
  int jobs = 1;
};

struct GenerateStep {
  int64_t step = 0;      // 1-based: the generated token this step produces
  std::string phase;     // prefill | decode
  int64_t position = 0;  // position of the token it produces
  int64_t context = 0;   // cached tokens it attends to (0 for the prefill)
  int64_t seq_len = 0;   // tokens it processes
  uint64_t cycles = 0;
  double latency_s = 0;
  uint64_t hbm_read_bytes = 0, hbm_write_bytes = 0;
  size_t kernels = 0;
  double energy_j = 0;        // the step's energy (sim/energy.h); 0 when the config has no energy section
  bool cached = false;        // its program came from the compile cache (exact)
  bool instantiated = false;  // ... from a symbolic program whose guard holds
  // Its statistics were those of the step before (the same program: a graph file's static
  // step, or a cached one), not simulated again.
  bool simulation_reused = false;
  // Calls of the program the step stands for: a graph file's prefill runs the decode-step graph
  // once per prompt token (its figures are that many times one call's); else 1.
  int64_t graph_calls = 1;
  double compile_wall_s = 0, simulate_wall_s = 0;
};

struct LatencySummary {
  size_t count = 0;
  double mean = 0, p50 = 0, p99 = 0, min = 0, max = 0;
};
// Nearest-rank percentiles (p-th: the ceil(p/100 * n)-th smallest), exact values of steps.
LatencySummary summarize_latencies(std::vector<double> v);

struct GenerateResult {
  WorkloadSpec workload;
  ArchConfig arch;
  std::vector<std::string> arch_overrides;
  std::string fusion;
  int64_t prompt_len = 0, gen_len = 0;
  std::vector<GenerateStep> steps;
  size_t compiles = 0, cache_hits = 0;  // compiles: every compile_graph call, probes included
  bool symbolic = false;
  bool regional = false;         // compiles went through regional compilation where it applies
  size_t regional_compiles = 0;  // compiles that were regional (the others compiled whole)
  // Symbolic decode programs: steps instantiated (part of cache_hits), guards extended by a
  // verifying compile, guard failures (recompiles), templates made.
  size_t instantiated = 0, guard_extensions = 0, guard_failures = 0, templates = 0;
  // Front-end templates (generate/front_end_steps.h): compiles (at one depth) whose front half
  // was instantiated, front halves compiled in full (probes included).
  size_t front_ends_instantiated = 0, front_ends_compiled = 0;
  int64_t devices = 1;  // tensor parallelism: the devices every step runs on (arch devices; 1 for a graph file)
  size_t cost_memo_hits = 0, cost_memo_misses = 0;  // kernel_cost calls answered by the memo, computed
  size_t simulations = 0;  // simulate() calls (a step with the previous step's program reuses its statistics)
  // A graph file (one decode step against a static KV cache): every step runs its program, the
  // prefill once per prompt token; unset for a built-in LLM.
  std::optional<StaticKvCache> static_kv_cache;
  double wall_s = 0;
  int simulation_processes = 1;  // processes that simulated steps at once (GenerateOptions::jobs)

  double ttft_s() const { return steps.empty() ? 0 : steps.front().latency_s; }
  // Generated tokens of every sequence: one per step and sequence of the batch.
  int64_t tokens() const { return static_cast<int64_t>(steps.size()) * workload.batch; }
  double total_latency_s() const;
  uint64_t total_cycles() const;
  uint64_t hbm_bytes() const;
  double energy_j() const;           // every step's energy (arch.energy.configured: else 0)
  LatencySummary per_token() const;  // the decode steps (2 .. gen_len)
  nlohmann::json to_json() const;    // everything; wall times only under "wall"
  std::string to_csv() const;        // one row per step, no wall times (deterministic)
  std::string summary() const;       // the terminal report
};

// Resolves the lengths (flags over workload keys over defaults) and checks them against the
// model's max_position and, for the largest steps, one device's HBM: InputError naming the key.
GenerateResult run_generate(const WorkloadSpec& w, const ArchConfig& arch, const GenerateOptions& o,
                            CompileCache& cache);

}  // namespace lpu
