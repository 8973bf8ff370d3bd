// The compile caches of a long generation (workbench/generate): the fusion cost model memoised
// across compiles, compiled steps by an exact key, and decode-step programs symbolic in the
// context (isa/program_template.h). Compiler data only: what runs the programs lives above.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/tile_footprint.h"
#include "driver/compile.h"
#include "isa/program_template.h"

namespace lpu {

// The fusion cost model (codegen kernel_cost) memoised by the candidate kernel's content
// without its names: every loop node's content under local names ($0, $1, ... for its
// buffers; anonymous_key in compile_cache.cpp), every buffer it touches (type, strides, offset, role, packing) and
// which of the kernel's buffers each local name is. kernel_cost reads nothing else of the program (no addresses, no
// names but in the no-columns explanation, which is computed again), so a hit returns what it would compute: the 32
// layers of a decoder share their kernels' costs within one compile, and decode steps at different contexts share every
// kernel outside attention. LPU_CHECK_COST_MEMO=1 in the environment computes every hit again and fails on a
// difference.
class KernelCostMemo {
 public:
  // Before scheduling `p`: gives each of its loop nodes the id of its content without names
  // (and of the buffers it touches), the same id in every layer and program, so that a lookup
  // is a vector compare instead of printing the kernel for every call.
  // `access`: the access analyses to use and fill (compile_graph shares its own with the final
  // tiling); none: the memo keeps its own for this program, marking vector chains when
  // `vector_chains` (CodegenOptions::vector_chains of the compile).
  void prepare(const LoopProgram& p, TileAccessCache& access);
  void prepare(const LoopProgram& p, bool vector_chains);
  KernelCost cost(const LoopProgram& p, const Kernel& k, const CodegenOptions& cg, bool with_traffic);
  size_t hits() const { return hits_; }
  size_t misses() const { return misses_; }
  size_t size() const { return memo_.size(); }

 private:
  void prepare_with(const LoopProgram& p, TileAccessCache* access);
  int64_t intern(const std::string& s);
  size_t hits_ = 0, misses_ = 0;
  // Entries carry the epoch (compile) that last used them; prepare() drops those the previous
  // compile did not use: a decode step's attention kernels never recur at another context,
  // and kept they would grow the memo by ~1000 entries a step. Ids are never reused.
  uint64_t epoch_ = 0;
  int64_t next_id_ = 0;
  std::unordered_map<std::string, std::pair<int64_t, uint64_t>> ids_;
  std::vector<int64_t> node_ids_;  // of the program prepared last
  // Each node's buffers in local-name order, as numbers within the program prepared last
  // (buffer_numbers_), so that a lookup numbers a kernel's buffers without comparing names.
  std::vector<std::vector<int>> node_buffers_;
  std::unordered_map<std::string, int> buffer_numbers_;
  int buffer_number(const std::string& name);
  // Scratch of cost(): per buffer number, the kernel (stamp) that last numbered it and its local id.
  std::vector<uint64_t> local_stamp_;
  std::vector<int64_t> local_id_;
  uint64_t stamp_ = 0;
  bool check_hits_ = std::getenv("LPU_CHECK_COST_MEMO") != nullptr;
  std::map<std::vector<int64_t>, std::pair<KernelCost, uint64_t>> memo_;
  std::unique_ptr<TileAccessCache> own_access_;  // the access analyses of the program prepared last,
  TileAccessCache* access_ = nullptr;            // or the caller's (prepare)
};

// compile_graph with its cost model replaced by `memo` (CompileOptions::cost_model): the same
// pipeline, so the same program (test_generate compares them over a range of contexts).
Compilation compile_with_memo(const Graph& g, const CompileOptions& opts, KernelCostMemo& memo);
// compile_front_end (driver/compile.h) with the same cost model.
FrontEnd front_end_with_memo(const Graph& g, const CompileOptions& opts, KernelCostMemo& memo);

// A compiled step: device 0's program and, with tensor parallelism, the other devices'.
struct CompiledStep {
  Program program;              // device 0's
  std::vector<Program> others;  // devices 1, 2, ... (tensor parallelism)
  // Devices 1, 2, ... run `program` rotated (sim/device_symmetry.h): the simulator runs device
  // 0 alone, and an instantiated step leaves `others` empty.
  bool rotations = false;
  size_t kernels = 0;  // device 0's
  int64_t compulsory_hbm_bytes = 0;
  // An instantiated step of one device, when asked for (SymbolicSteps::set_encode_templates):
  // the template it came from, encoded once (ProgramTemplate::encode), and the symbol's value, so
  // that another process instantiates it in place instead of decoding the whole program. Then
  // `program` may be empty (SymbolicSteps::set_encode_templates says when).
  struct Source {
    uint64_t template_id = 0;
    std::shared_ptr<const std::string> encoded_template;
    int64_t at = 0;
  };
  std::optional<Source> source;
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
  // of device 0's and their symbolic parts are the same (checked once, by whoever makes the
  // templates: the check is the simulator's, sim/device_symmetry.h).
  bool rotations() const { return rotations_; }
  void set_rotations(bool r) { rotations_ = r; }
  // Device d's base program (d = 0 .. devices - 1).
  const Program& base(size_t d) const { return ranks_.at(d).base(); }
  size_t devices() const { return ranks_.size(); }
  bool same_symbolic_part_everywhere() const;
  const ProgramTemplate& rank(size_t d) const { return ranks_.at(d); }

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
    uint64_t last_used = 0;                      // a clock of the steps served: which template to drop when full
    uint64_t id = 0;                             // unique in this cache (CompiledStep::Source)
    std::shared_ptr<const std::string> encoded;  // device 0's template, once asked for
  };
  uint64_t next_symbolic_id = 1;
  std::vector<Symbolic> symbolic;
  // Per key: the contexts [from, until) where no template is made, and the length of that pause
  // (workbench/generate/symbolic_steps.cpp). A serving run's contexts jump back when another
  // request's step comes: a pause covers only the contexts after the one that began it.
  struct Backoff {
    int64_t from = 0, until = 0, length = 0;
    bool covers(int64_t x) const { return x >= from && x < until; }
  };
  std::map<std::string, Backoff> symbolic_backoff;
  size_t symbolic_capacity() const { return capacity_; }
};

}  // namespace lpu
