// The compiler driver: workload graph -> normalised core graph -> loop IR -> schedule ->
// LPU program. Each stage's result is kept so it can be printed (`lpu compile --emit`).
#pragma once
#include <functional>
#include <set>
#include <string>

#include "codegen/lpu_codegen.h"
#include "graph/graph.h"
#include "isa/program.h"
#include "loopir/loop_ir.h"
#include "schedule/schedule.h"

namespace lpu {

struct CompileOptions {
  std::string fusion = "greedy";
  CodegenOptions codegen;
  // Fraction of local memory a fused kernel may claim with one row per tile; below 1 the
  // greedy scheduler keeps kernels smaller so their tiles hold more rows (a search knob).
  double fusion_lmu_fraction = 1.0;
  // Greedy's kernel size cap and fusion kinds (ScheduleOptions): search knobs of the tuner.
  int max_kernel_nodes = 64;
  bool fuse_horizontal = true;
  bool fuse_prologue = true;
  bool fuse_epilogue = true;
  // Graph breaks. `unsupported_ops` (a test switch) removes core ops from what the back end
  // supports: a core-graph node with such an op is unsupported (composite ops decompose
  // first, so name their core ops: gelu -> erf). `break_on_unsupported` runs unsupported
  // nodes, and ops without a lowering, on the host (LoopKind::Host) instead of failing.
  std::set<std::string> unsupported_ops;
  bool break_on_unsupported = false;
  // Replaces the fusion cost model (default: codegen's kernel_cost on this compile's loop IR),
  // e.g. by a memo shared across compiles (lpu generate). Called once per compile, before
  // scheduling, with the loop IR; what it returns must give what kernel_cost would.
  std::function<std::function<KernelCost(const Kernel&, bool)>(const LoopProgram&, const CodegenOptions&)> cost_model;
};

struct Compilation {
  Graph captured;
  Graph core;
  LoopProgram loop_ir;
  Schedule schedule;
  CodegenResult code;
  int64_t compulsory_hbm_bytes = 0;
};

// Graph -> normalised core-op graph (passes/default_passes: verify, decompose to core ops,
// constant folding, CSE, row-select splitting, DCE). The front half of compile_graph.
Graph normalize_graph(const Graph& g);

Compilation compile_graph(const Graph& g, const CompileOptions& opts);

// compile_graph in two halves, for a compile whose front half is known another way (a decode
// step's front end instantiated from a template, driver/front_end_template.h):
// compile_back_end(compile_front_end(g, o)) gives compile_graph(g, o)'s program, schedule and
// loop IR (its `captured` and `core` graphs stay empty).
struct FrontEnd {
  LoopProgram loop_ir;      // lowered and verified
  Schedule schedule;        // as scheduled: kernels without their tiling
  CodegenOptions codegen;   // the compile's, less the collectives' area at the top of local memory
};
FrontEnd compile_front_end(const Graph& g, const CompileOptions& opts);
// `known_tiling`: kernels whose tiling is known (plan_kernel_tiling's `known`); `reuse`: kernels
// whose code is known or to be recorded (generate_lpu_program's).
Compilation compile_back_end(FrontEnd fe, const std::vector<std::optional<KernelTiling>>* known_tiling = nullptr,
                             KernelCodeReuse* reuse = nullptr);

}  // namespace lpu
