#include "driver/compile.h"

#include "codegen/collective.h"
#include "codegen/tile_footprint.h"
#include "driver/compile_cache.h"
#include "graph/ops.h"
#include "passes/passes.h"
#include "support/error.h"

namespace lpu {

Graph normalize_graph(const Graph& g) { return run_passes(g, default_passes()); }

namespace {

// The unsupported-op switches checked against the core graph: the lowering's host nodes.
LoweringOptions lowering_options(const Graph& core, const CompileOptions& opts) {
  LoweringOptions lo;
  lo.unsupported_to_host = opts.break_on_unsupported;
  for (const auto& op : opts.unsupported_ops) {
    const OpInfo* info = find_op(op);
    if (!info) throw InputError(strcat("--unsupported-ops: unknown op '", op, "' (see lpu list ops)"));
    if (!info->core())
      throw InputError(strcat("--unsupported-ops: '", op,
                              "' is a composite op, decomposed before the back end sees it; "
                              "name one of the core ops it becomes (lpu compile --emit core shows them)"));
  }
  for (const Node& n : core.nodes()) {
    if (n.kind != NodeKind::Call || !opts.unsupported_ops.count(n.op)) continue;
    if (!opts.break_on_unsupported)
      throw InputError(strcat("node %", n.name, ": op '", n.op,
                              "' is not supported by the LPU back end "
                              "(--unsupported-ops); --on-unsupported=break runs it on the host as a graph break"));
    lo.host_nodes.insert(n.name);
  }
  return lo;
}

// Lowering and scheduling of a core graph; `access` gets the access analyses the cost model
// made (the back end's tiling uses them too).
FrontEnd front_end_of_core(const Graph& core, const CompileOptions& opts, TileAccessCache& access) {
  FrontEnd fe;
  fe.loop_ir = lower_to_loop_ir(core, lowering_options(core, opts));
  try {  // what lowering makes must hold what the passes after it rely on; if not, it is our bug
    verify_loop_ir(fe.loop_ir);
  } catch (const InputError& e) {
    throw InternalError(strcat("lowering produced invalid loop IR: ", e.what()));
  }
  // Collectives (tensor parallelism) receive in an area at the top of local memory that no
  // kernel uses (codegen/collective.h): every kernel gets what is below it.
  fe.codegen = opts.codegen;
  if (int64_t area = place_collectives(fe.loop_ir, 0, fe.codegen.lmu_bytes).bytes()) {
    fe.codegen.lmu_bytes -= area;
    fe.codegen.collective_lmu_bytes = area;
  }
  ScheduleOptions so;
  so.policy = opts.fusion;
  so.lmu_bytes = static_cast<int64_t>(static_cast<double>(fe.codegen.lmu_bytes) * opts.fusion_lmu_fraction);
  so.max_kernel_nodes = opts.max_kernel_nodes;
  so.fuse_horizontal = opts.fuse_horizontal;
  so.fuse_prologue = opts.fuse_prologue;
  so.fuse_epilogue = opts.fuse_epilogue;
  const LoopProgram& lp = fe.loop_ir;
  const CodegenOptions& cg = fe.codegen;
  // The cost model memoised by kernel content without names (compile_cache.h): a decoder's
  // layers ask for the same kernels' costs, each computed once.
  KernelCostMemo memo;
  if (opts.cost_model) {
    so.kernel_cost = opts.cost_model(lp, cg);
  } else {
    memo.prepare(lp, access);
    so.kernel_cost = [&lp, &cg, &memo](const Kernel& k, bool with_traffic) {
      return memo.cost(lp, k, cg, with_traffic);
    };
  }
  fe.schedule = schedule_program(fe.loop_ir, so);
  try {  // the kernels must be what codegen and the handlers rely on; if not, it is our bug
    verify_schedule(fe.loop_ir, fe.schedule);
  } catch (const InputError& e) {
    throw InternalError(strcat("scheduling produced an invalid schedule: ", e.what()));
  }
  return fe;
}

// Tiling and code generation into `c`.
void back_end(Compilation& c, FrontEnd&& fe, TileAccessCache& access,
              const std::vector<std::optional<KernelTiling>>* known_tiling = nullptr,
              KernelCodeReuse* reuse = nullptr) {
  c.loop_ir = std::move(fe.loop_ir);
  c.schedule = std::move(fe.schedule);
  // Tiling is decided once, on the tile-footprint analysis the fusion cost model used too, and
  // recorded in the schedule; code generation emits that tiling.
  std::vector<KernelTiling> tiling = plan_kernel_tiling(c.loop_ir, c.schedule, fe.codegen, &access, known_tiling);
  for (size_t i = 0; i < tiling.size(); ++i) c.schedule.kernels[i].tiling = tiling[i];
  c.code = generate_lpu_program(c.loop_ir, c.schedule, fe.codegen, &access, reuse);
  if (c.code.tiling.size() != c.schedule.kernels.size())
    throw InternalError("code generation tiled a different number of kernels than the schedule has");
  c.compulsory_hbm_bytes = compulsory_hbm_bytes(c.loop_ir);
}

}  // namespace

Compilation compile_graph(const Graph& g, const CompileOptions& opts) {
  Compilation c;
  c.captured = g;
  c.core = normalize_graph(g);
  // The access analyses of this loop IR, shared by every kernel the scheduler sizes, the final
  // tiling and the emitted kernels' walks (codegen/tile_walk.h).
  TileAccessCache access(opts.codegen.vector_chains);
  back_end(c, front_end_of_core(c.core, opts, access), access);
  return c;
}

FrontEnd compile_front_end(const Graph& g, const CompileOptions& opts) {
  TileAccessCache access(opts.codegen.vector_chains);
  return front_end_of_core(normalize_graph(g), opts, access);
}

Compilation compile_back_end(FrontEnd fe, const std::vector<std::optional<KernelTiling>>* known_tiling,
                             KernelCodeReuse* reuse) {
  Compilation c;
  TileAccessCache access(fe.codegen.vector_chains);
  back_end(c, std::move(fe), access, known_tiling, reuse);
  return c;
}

}  // namespace lpu
