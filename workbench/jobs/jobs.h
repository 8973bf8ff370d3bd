// The jobs users run, shared by the CLI, the tests and the benchmarks:
// compile a workload for an architecture, simulate it, check it against the reference.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/arch_config.h"
#include "driver/compile.h"
#include "io/graph_file.h"
#include "simulator.h"
#include "support/units.h"
#include "tuner.h"  // BreakOptions, compile_options_for, SearchReport: the search policies
#include "workload/workload.h"

namespace lpu {

struct FunctionalCheck {
  double max_abs_error = 0;
  double max_rel_error = 0;
  double atol = 0, rtol = 0;   // pass iff |sim - ref| <= atol + rtol * |ref| everywhere
  bool ok = false;
  std::string worst;           // "output[index]: sim vs ref"
  std::string rule;            // the pass condition: the one description printed and written to JSON
  std::vector<double> max_abs_per_output;  // graph-file checks: one per graph output
};

struct RunOutcome {
  WorkloadSpec workload;
  ArchConfig arch;
  std::string fusion;
  Compilation comp;               // device 0's (tensor parallelism: rank 0's)
  std::vector<Compilation> rank_comps;  // devices 1, 2, ... (arch.devices > 1)
  SimResult sim;
  std::optional<FunctionalCheck> check;
  double wall_seconds = 0;     // simulation wall time
  std::optional<SearchReport> search;  // a tuner policy (search, search-isu): what it tried

  nlohmann::json to_json() const;
  // HBM bytes moved over the compulsory ones (0 without any): the JSON's traffic_ratio, which a
  // report row needs without building the whole JSON (its kernel classes cost 4% of a run).
  double traffic_ratio() const;
};

// `fusion` is any policy of the registry (policy_registry.h). A tuner policy may change the
// arch config (search-isu): `arch` of the outcome is what the program was simulated on.
RunOutcome run_job(const WorkloadSpec& w, const ArchConfig& arch, const std::string& fusion, bool functional,
                   bool trace = false, const BreakOptions& b = {}, const std::string& vcd_path = "");

// The graph breaks of a compiled program with their modelled cost on `arch` (the same model
// as the simulator's host engine), one line each, for `lpu compile --emit schedule`.
std::string describe_graph_breaks(const Program& p, const ArchConfig& arch);

// Tolerances by dtype: fp32 1e-4 (abs and rel), fp16/bf16 looser (their rounding).
FunctionalCheck check_outputs(const std::vector<Tensor>& expected, const std::vector<std::string>& names,
                              const TensorMap& actual, DType dtype);

// Graph files from PyTorch: outputs against the expected outputs recorded by the exporter.
// Element-wise pass condition |actual - expected| <= tol * max(1, |expected|), with tol by
// the output's dtype: f32 1e-4, f16/bf16 2e-2; integer and bool outputs must match exactly.
FunctionalCheck check_against_expected(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected);

// `lpu ref`: normalise a graph file's graph, run the reference executor on the sidecar's
// inputs and weights, and compare with PyTorch's expected outputs.
struct ReferenceRun {
  GraphFile file;
  Graph core;
  FunctionalCheck check;
};
ReferenceRun run_reference_check(const std::string& graph_path);

// Tokens one step of a built-in LLM workload produces (decode: one per sequence) or takes in
// (prefill: every prompt token); 0 when the workload is not a built-in LLM.
int64_t llm_tokens_per_step(const WorkloadSpec& w);

// A step's two roofs, in cycles: memory (its compulsory HBM bytes at peak bandwidth) and
// compute (its SXE MACs at the SXE's peak, sxe.mac_trees x sxe.lanes a cycle).
struct StepRoofs {
  double memory_cycles = 0, compute_cycles = 0;
};
StepRoofs step_roofs(const RunOutcome& o);

// Aligned text table.
std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

}  // namespace lpu
