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

#include "codegen/tile_footprint.h"
#include "isa/program_template.h"
#include "jobs.h"
#include "regional.h"

namespace lpu {

// The fusion cost model (codegen kernel_cost) memoised across compiles by the candidate
// kernel's whole content: its fields, every loop node as printed, and every buffer its nodes
// touch (name, type, strides, offset, role). kernel_cost reads nothing else of the program
// (no addresses: codegen/lpu_codegen.cpp), so a hit returns what it would compute. Decode
// steps at different contexts share every kernel outside attention, which is most of the
// scheduler's work; within one compile the scheduler already caches per group.
class KernelCostMemo {
 public:
  // Before scheduling `p`: gives each of its loop nodes the id of its content (the node as
  // printed, its origin, the buffers it touches), the same id in every program, so that a
  // lookup is a vector compare instead of printing the kernel for every call.
  void prepare(const LoopProgram& p);
  KernelCost cost(const LoopProgram& p, const Kernel& k, const CodegenOptions& cg, bool with_traffic);
  size_t hits() const { return hits_; }
  size_t misses() const { return misses_; }
  size_t size() const { return memo_.size(); }

 private:
  int64_t intern(const std::string& s);
  size_t hits_ = 0, misses_ = 0;
  // Entries carry the epoch (compile) that last used them; prepare() drops those the previous
  // compile did not use: a decode step's attention kernels never recur at another context,
  // and kept they would grow the memo by ~1000 entries a step. Ids are never reused.
  uint64_t epoch_ = 0;
  int64_t next_id_ = 0;
  std::map<std::string, std::pair<int64_t, uint64_t>> ids_;
  std::vector<int64_t> node_ids_;  // of the program prepared last
  std::map<std::vector<int64_t>, std::pair<KernelCost, uint64_t>> memo_;
  std::unique_ptr<TileAccessCache> access_;  // the access analyses of the program prepared last
};

// compile_graph with its cost model replaced by `memo` (CompileOptions::cost_model): the same
// pipeline, so the same program (test_generate compares them over a range of contexts).
Compilation compile_with_memo(const Graph& g, const CompileOptions& opts, KernelCostMemo& memo);

// A compiled step: device 0's program and, with tensor parallelism, the other devices'.
struct CompiledStep {
  Program program;              // device 0's
  std::vector<Program> others;  // devices 1, 2, ... (tensor parallelism)
  // Devices 1, 2, ... run `program` rotated (sim/device_symmetry.h): the simulator runs device
  // 0 alone, and an instantiated step leaves `others` empty.
  bool rotations = false;
  size_t kernels = 0;  // device 0's
  int64_t compulsory_hbm_bytes = 0;
};

// A step's programs symbolic in the context, one template per device (isa/program_template.h):
// its guard is where every device's template holds.
class RankTemplates {
 public:
  static std::optional<RankTemplates> make(const CompiledStep& a, int64_t sa, const CompiledStep& b, int64_t sb,
                                           int64_t hbm_alignment, std::string& why);
  bool holds(int64_t s) const;
  int64_t lo() const;
  int64_t hi() const;
  Program instantiate(int64_t s) const;                      // device 0's
  std::vector<Program> instantiate_others(int64_t s) const;  // devices 1, 2, ...
  // Verifies every device's template against `e` compiled at `s` (each guard grows where it
  // holds); false with the first difference when one does not.
  bool verify(const CompiledStep& e, int64_t s, std::string& why);
  // Every instantiation is device 0's rotated on the other devices: their bases are rotations
  // of device 0's and their symbolic parts are the same (checked once, at make()).
  bool rotations() const { return rotations_; }

 private:
  std::vector<ProgramTemplate> ranks_;
  bool rotations_ = false;
};

// Compiled programs by an exact key: everything the graph builder and the compiler read (the
// step's workload fields, fusion policy, codegen options from the config, graph-break
// options). Equal keys compile to equal programs, so a hit is exact. Bounded: once `capacity`
// programs are held, new ones are compiled but not kept (a 2048-step generation would
// otherwise hold every program).
class CompileCache {
 public:
  using Entry = CompiledStep;
  explicit CompileCache(size_t capacity = 64) : capacity_(capacity) {}
  // The entry for `key`, or nullptr (counted as a hit or a miss).
  std::shared_ptr<const Entry> find(const std::string& key);
  void insert(const std::string& key, std::shared_ptr<const Entry> e);
  size_t hits() const { return hits_; }
  size_t misses() const { return misses_; }
  size_t size() const { return entries_.size(); }

 private:
  size_t capacity_;
  size_t hits_ = 0, misses_ = 0;
  std::map<std::string, std::shared_ptr<const Entry>> entries_;

 public:
  KernelCostMemo cost_memo;  // shared by every compile through this cache

  // Decode-step programs symbolic in the context (isa/program_template.h): a template per
  // key (the exact key with the context left out) and guard interval. A step whose context is
  // inside a template's guard instantiates it; one just past a guard first tries to extend the
  // guard by compiling a further context and verifying the template there (doubling the
  // interval each time, so a stretch of L contexts costs about log2(L) compiles); when that
  // fails (a guard failure: the tiling, the LMU allocation or the instruction stream changed),
  // the step is compiled and a new template made from it and the next context. At most
  // `capacity` templates are kept.
  struct Symbolic {
    std::string key;
    RankTemplates program;
    size_t kernels = 0;
    int64_t compulsory_hbm_bytes = 0;
  };
  std::vector<Symbolic> symbolic;
  // Per key: {context below which no template is made, the length of that pause} (generate.cpp).
  std::map<std::string, std::pair<int64_t, int64_t>> symbolic_backoff;
  size_t symbolic_capacity() const { return capacity_; }
};

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
  int64_t devices = 1;  // tensor parallelism: the devices every step runs on (arch devices; 1 for a graph file)
  size_t cost_memo_hits = 0, cost_memo_misses = 0;  // kernel_cost calls answered by the memo, computed
  size_t simulations = 0;  // simulate() calls (a step with the previous step's program reuses its statistics)
  // A graph file (one decode step against a static KV cache): every step runs its program, the
  // prefill once per prompt token; unset for a built-in LLM.
  std::optional<StaticKvCache> static_kv_cache;
  double wall_s = 0;

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
