#include "driver/compile.h"

#include "passes/passes.h"

namespace lpu {

Graph normalize_graph(const Graph& g) { return run_passes(g, default_passes()); }

Compilation compile_graph(const Graph& g, const CompileOptions& opts) {
  Compilation c;
  c.captured = g;
  c.core = normalize_graph(g);
  c.loop_ir = lower_to_loop_ir(c.core);
  ScheduleOptions so;
  so.policy = opts.fusion;
  so.lmu_bytes = static_cast<int64_t>(static_cast<double>(opts.codegen.lmu_bytes) * opts.fusion_lmu_fraction);
  const LoopProgram& lp = c.loop_ir;
  bool db = opts.codegen.double_buffer;
  so.lmu_need = [&lp, db](const Kernel& k) { return kernel_min_lmu_bytes(lp, k, db); };
  c.schedule = schedule_program(c.loop_ir, so);
  c.code = generate_lpu_program(c.loop_ir, c.schedule, opts.codegen);
  c.compulsory_hbm_bytes = compulsory_hbm_bytes(c.loop_ir);
  return c;
}

}  // namespace lpu
