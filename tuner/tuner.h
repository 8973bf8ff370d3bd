// The tuner (layer `tuner`, above the compiler and the simulator): the `search` policies.
// It generates candidate compilations around greedy (candidates.h), compiles each, simulates
// each in timing mode (the simulator is its cost model) and keeps the fastest.
//   search      compiler choices only: the program changes, the arch config does not
//   search-isu  also the ISU options isu.weight_prefetch and isu.chaining, tried on the best
//               compiler choice; a result that turns one on runs on another arch config, and
//               the report lists the keys it changed (SearchReport::arch_changes)
// Greedy is always candidate 0 and is never rejected, so the choice is never slower than
// greedy. Deterministic: the candidates are a fixed list and the simulator is deterministic;
// ties go to the fewer HBM bytes, then to the earlier candidate (greedy first).
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "config/arch_config.h"
#include "driver/compile.h"

namespace lpu {

// Graph breaks (--on-unsupported, --unsupported-ops): see CompileOptions.
struct BreakOptions {
  std::set<std::string> unsupported_ops;
  bool on_unsupported_break = false;
};

// The compile options an arch config implies (local memory, buffering, HBM alignment).
CompileOptions compile_options_for(const ArchConfig& arch, const std::string& fusion, const BreakOptions& b = {});

// One point of the search space: what a candidate sets, compiler knobs then ISU options.
struct TuneSettings {
  std::string fusion = "greedy";
  double lmu_fraction = 1.0;
  int64_t max_tile_rows = 0;
  bool double_buffer = true;
  int max_kernel_nodes = 64;
  bool fuse_horizontal = true, fuse_prologue = true, fuse_epilogue = true;
  bool weight_prefetch = false, chaining = false;  // isu.*: arch config keys
  CompileOptions compile_options(const ArchConfig& arch, const BreakOptions& b) const;
  ArchConfig apply_isu(const ArchConfig& arch) const;
  // "key=value" for every setting, the ISU ones as their config keys.
  std::vector<std::pair<std::string, std::string>> fields() const;
};

struct SearchCandidate {
  std::string name;
  TuneSettings settings;
  uint64_t cycles = 0;
  uint64_t hbm_bytes = 0;  // read + written
  std::string error;       // a candidate that does not compile (e.g. local memory) is skipped
  std::string rejected;    // a candidate that moves more HBM bytes than `none` is not chosen
};

struct SearchReport {
  std::string policy;  // search | search-isu
  std::vector<SearchCandidate> candidates;
  std::string chosen;
  TuneSettings chosen_settings;
  uint64_t greedy_cycles = 0, best_cycles = 0;
  // The arch config keys the choice changed ("isu.chaining=true"); empty for `search`.
  std::vector<std::string> arch_changes;
  double seconds = 0;
  int64_t gain_cycles() const { return static_cast<int64_t>(greedy_cycles) - static_cast<int64_t>(best_cycles); }
  double gain_percent() const {
    return greedy_cycles ? 100.0 * static_cast<double>(gain_cycles()) / static_cast<double>(greedy_cycles) : 0.0;
  }
};

struct TuneOptions {
  bool isu = false;  // also try the ISU options (search-isu)
};
// TuneOptions of a tuner policy name (search, search-isu); InputError otherwise.
TuneOptions tune_options_for(const std::string& policy);

struct Tuned {
  Compilation comp;
  ArchConfig arch;  // what the chosen candidate was simulated on: the given one unless ISU changed
};

Tuned tune(const Graph& g, const ArchConfig& arch, const TuneOptions& opts, SearchReport& report,
           const BreakOptions& b = {});

}  // namespace lpu
