// Counting handler: what each kernel of a schedule moves and computes, from the loop IR alone
// (`lpu compile --emit counts` prints it; `counts_json` writes it as JSON). Its values are
// "does this vary per element?", so walking a body counts every op once per iteration point.
//
// Per kernel:
//   hbm_read_bytes    distinct HBM traffic: every buffer the kernel reads that it does not
//                     produce itself, once per distinct (buffer, access pattern). Two loads
//                     are the same pattern when they walk the buffer alike in the kernel's
//                     row/column view (loopir analyze_access: base, row and column stride), so
//                     x[1024*i0 + i1] in a pointwise node and x[1024*i0 + r0] in a reduction
//                     count once. A pattern moves one element per point of the loop variables
//                     its index depends on (a broadcast weight w[i1] is read once per column,
//                     not once per row): what the LPU's DMA moves for it.
//   hbm_write_bytes   every buffer the kernel writes to HBM (Kernel::hbm_outputs), once
//   naive_load_bytes  every load at every iteration point: traffic without fusion or reuse
//   naive_store_bytes every node's output elements, HBM or not
//   ops               by class: alu / transcendental / divide (the LPU_SCALAR_OPS classes in
//                     ops/scalar_ops.h) and reduction (one combine per element reduced), each op
//                     counted once per point of its node's iteration domain (ranges x
//                     reduction ranges). Ops whose operands are all constants are folded, as
//                     every code generator does; casts and index arithmetic are not counted.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loopir/kernel.h"
#include "loopir/loop_ir.h"

namespace lpu {

struct KernelCounts {
  std::string kernel;
  int64_t nodes = 0;
  int64_t iterations = 0;  // sum over nodes of the iteration domain size
  int64_t hbm_read_bytes = 0;
  int64_t hbm_write_bytes = 0;
  int64_t naive_load_bytes = 0;
  int64_t naive_store_bytes = 0;
  std::map<std::string, int64_t> ops;  // "alu", "transcendental", "divide", "reduction"
};

// One entry per kernel of `s`, in order. Throws InputError for a node kind the handlers do not
// know.
std::vector<KernelCounts> count_kernels(const LoopProgram& p, const Schedule& s);

// A text table, one row per kernel plus a total row.
std::string print_counts(const std::vector<KernelCounts>& counts);
nlohmann::json counts_to_json(const std::vector<KernelCounts>& counts);

}  // namespace lpu
