// Scheduling: grouping loop-IR nodes into kernels (fusion).
//   none    one kernel per loop-IR node; every intermediate goes through HBM
//   greedy  Inductor-like: candidate pairs ranked by HBM bytes saved, fused greedily when legal
//           and when the cost model says the fused kernel moves no more HBM bytes than the two
//           kernels it replaces (so no policy built on it can add traffic)
// Every candidate pair considered is recorded with its score, the decision and, for a
// rejection, the reason (the "why not fused" log).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loopir/kernel.h"  // Kernel, FusionDecision, Schedule: what this produces
#include "loopir/loop_ir.h"

namespace lpu {

// What a kernel costs: HBM bytes moved and local memory its smallest tile needs (one whole
// row, or when that does not fit, one row of the narrowest column tile).
struct KernelCost {
  int64_t hbm_bytes = 0;
  int64_t lmu_bytes = 0;
  int64_t tile_rows = 0;
  bool fits = true;        // its tiles fit local memory with the configured buffering
  bool col_tiled = false;  // tiled in columns: a whole row does not fit
  std::string no_columns;  // when it does not fit: why it cannot be tiled in columns
};

// Without a code generator to ask: each buffer the kernel reads from HBM read once, each
// buffer it writes to HBM written once (no tiling, so no re-reads).
int64_t untiled_hbm_bytes(const LoopProgram& p, const Kernel& k);

struct ScheduleOptions {
  std::string policy = "greedy";
  // Local memory a fused kernel may claim (0 = unlimited): fusions whose smallest tile would
  // need more are declined with reason "local-memory overflow".
  int64_t lmu_bytes = 0;
  // The cost model (set by the driver from the code generator: codegen/kernel_cost). Every
  // fusion is checked against it: a fused kernel that would move more HBM bytes than the two
  // kernels it replaces is declined ("adds traffic"). Unset: untiled_hbm_bytes, no LMU limit.
  // `with_traffic` false: only the local memory is wanted (see schedule.cpp for when).
  std::function<KernelCost(const struct Kernel&, bool with_traffic)> kernel_cost;
  // Most loop nodes in one fused kernel (0 = no limit). Like Inductor's max_fusion_size, it
  // bounds what each fusion decision costs (the cost model emits the candidate kernel), so
  // scheduling stays near-linear in the graph size.
  int max_kernel_nodes = 64;
  // Fusion kinds greedy may use (all by default). The tuner (tuner/) turns kinds off to try
  // other kernel groupings, since the byte-saving order of greedy is not always the fastest:
  // horizontal = siblings sharing a read; prologue = a non-matmul producer into a matmul
  // consumer (a norm before a projection); epilogue = a matmul into a non-matmul consumer.
  // A pair of a disabled kind is declined with reason "disabled: ...".
  bool fuse_horizontal = true;
  bool fuse_prologue = true;
  bool fuse_epilogue = true;
};

Schedule schedule_program(const LoopProgram& p, const ScheduleOptions& opts);
const std::vector<std::string>& fusion_policies();

// Graph inputs + weights read once, graph outputs written once: the traffic lower bound. A
// table read only by gathers counts the rows its indices can pick (min(rows, indices)).
int64_t compulsory_hbm_bytes(const LoopProgram& p);

// Checks, naming the kernel: every node is in exactly one kernel; a node reads only inputs,
// weights, what earlier nodes of its kernel wrote, or what an earlier kernel wrote to HBM
// (listed in its hbm_outputs); hbm_outputs are written by their kernel; a host node is alone;
// every graph output reaches HBM. The driver runs it after every scheduling (InternalError).
void verify_schedule(const LoopProgram& p, const Schedule& s);

std::string print_schedule(const LoopProgram& p, const Schedule& s);
// The fusion report as JSON: kernels (with the graph nodes they came from) and every
// candidate pair with score, decision and reason.
std::string schedule_to_json(const LoopProgram& p, const Schedule& s);

}  // namespace lpu
