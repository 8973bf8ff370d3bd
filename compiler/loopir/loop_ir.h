// The loop-level IR (TorchInductor's Pointwise / Reduction, re-done in C++).
// Every core op of a graph becomes one LoopNode that computes one buffer element by element:
//   Pointwise  out[store_index(i)] = body(i)                 for i in ranges
//   Reduction  out[store_index(i)] = reduce_{r} body(i, r)    for i in ranges, r in reduction_ranges
// Loop variables are named i0, i1, ... (ranges) and r0, r1, ... (reduction ranges).
// Fusion never rewrites these nodes: a kernel is a list of them (schedule/), and code for any
// target comes from walking bodies with an ops handler (handlers/).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "loopir/expr.h"
#include "ops/reduction.h"

namespace lpu {

struct Buffer {
  std::string name;  // = the graph node that defines it
  TensorType type;
  BufferRole role = BufferRole::Intermediate;
  std::vector<int64_t> strides;  // elements; contiguous row-major for now
  int64_t offset = 0;
  Quant quant;  // a weight stored packed (graph/types.h): its bytes are the packed size
  int64_t bytes() const { return storage_bytes(type, quant); }
};

// BufferRole (graph/types.h) says what a buffer is to the program; the reductions a Reduction
// node can do (ReductionType) and their semantics are in ops/reduction.h.

// Matmul: a sum-reduction over r0 (= K) of mul(load A, load B), marked for the matrix engine
// (GEMV/GEMM template). Its output is [..., M, N]: rows are (batch..., M), the column is N;
// fused element-wise consumers form its epilogue, a fused producer of A its prologue.
// Gather: out[row, c] = table[gather_index(row) * cols + c] (embedding lookup); the row's
// table index is a loaded value, so the access is indirect (dma.gather on the LPU).
// Host: a graph break. The graph node runs on the host (reference semantics) reading its
// inputs whole from HBM and writing its output to HBM; nothing fuses with it.
// Host: a graph break, computed on the host from whole HBM buffers. Collective: all_reduce or
// all_gather over the ESL between the ranks of a partitioned graph. Neither has a loop body,
// and each is a kernel of its own (is_opaque).
enum class LoopKind { Pointwise, Reduction, Matmul, Gather, Host, Collective };
inline bool is_opaque(LoopKind k) { return k == LoopKind::Host || k == LoopKind::Collective; }

struct LoopNode {
  std::string name;     // unique node name
  std::string output;   // buffer it writes (= name, except the writers of a concatenation);
                        // empty means `name` (hand-built programs): read it through out()
  const std::string& out() const { return output.empty() ? name : output; }
  std::string origin;   // graph node it was lowered from
  LoopKind kind = LoopKind::Pointwise;
  std::vector<int64_t> ranges;
  std::vector<int64_t> reduction_ranges;
  ReductionType reduction = ReductionType::sum;
  Expr body;
  Index store_index;
  std::string gather_table;  // Gather: the table buffer ([V, cols], row-major)
  Expr gather_index;         // Gather: load of the row's table index (over row variables)
  DType dtype = DType::f32;
  // Host, Collective: the graph node's op and attributes, and the buffers of its operands in
  // order (contiguous, materialised by the lowering when the operand was a view or a constant).
  std::string host_op;
  Attrs host_attrs;
  std::vector<std::string> host_inputs;

  // Row/column view used by fusion legality and by tiling on the LPU: rows are the
  // flattened output dims except the innermost pointwise dim; columns are the innermost
  // pointwise dim, or the flattened reduction dims of a reduction.
  std::vector<LoopVar> row_vars() const;
  std::vector<int64_t> row_sizes() const;
  std::vector<LoopVar> col_vars() const;
  std::vector<int64_t> col_sizes() const;
  // Every loop variable and its range (output dims, then reduction dims): what Index::simplify
  // and Index::bounds take.
  std::map<LoopVar, int64_t> var_ranges() const;
  // The innermost output variable (the column of a pointwise/matmul/gather node).
  LoopVar column_var() const { return LoopVar::output(ranges.empty() ? 0 : ranges.size() - 1); }
  int64_t rows() const;
  int64_t cols() const;        // the iteration width (reduction width for reductions)
  int64_t out_cols() const;    // columns of the result: cols() for pointwise, 1 for reductions
  std::vector<Expr> loads() const;  // every Load in the body, in first-visit order, deduplicated
  // The buffers of loads(), without building their indices' text (compulsory traffic asks this).
  std::set<std::string> loaded_buffers() const;
};

// How a load (or store) walks memory in a node's row/column view:
//   element(row, col) = row_offset(row) + col_stride * col
// where row_offset is any function of the row variables (row_part), and, when the rows form
// one stride (row_affine), row_offset(row) = base + row_stride * row.
struct AccessPattern {
  bool ok = false;
  std::string why_not;  // set when !ok
  int64_t col_stride = 0;
  // Two-level columns (a permuted-then-merged view, e.g. heads*head_dim): column c is at
  // col_outer_stride * (c / col_split) + col_stride * (c % col_split). 0 = one level.
  int64_t col_split = 0;
  int64_t col_outer_stride = 0;
  bool row_affine = false;
  int64_t base = 0;
  int64_t row_stride = 0;
  Index row_part;                       // the index with column variables at 0
  std::vector<LoopVar> row_vars;
  std::vector<int64_t> row_sizes;
  int64_t row_offset(int64_t row) const;  // row_part at a flattened row
};
// Columns are the node's column variables; for a Matmul's A operand pass {r0}, {K}.
AccessPattern analyze_access(const LoopNode& node, const Index& index);
AccessPattern analyze_access(const LoopNode& node, const Index& index, const std::vector<LoopVar>& col_vars,
                             const std::vector<int64_t>& col_sizes);

struct LoopProgram {
  std::string name;
  std::map<std::string, Buffer> buffers;
  std::vector<LoopNode> nodes;            // topological order
  std::vector<std::string> inputs;        // graph placeholders and parameters, in graph order
  std::vector<std::string> outputs;       // graph outputs, in order
  std::map<std::string, double> constants;  // `full` nodes, inlined as constants
  std::vector<const LoopNode*> writers(const std::string& buffer) const;  // empty for inputs
};

struct LoweringOptions {
  std::set<std::string> host_nodes;  // graph nodes to run on the host (graph breaks)
  bool unsupported_to_host = false;  // an op without a lowering becomes a host node, not an error
};

// Lower a core-op graph (after passes/) to loop IR. Throws InputError naming the node when an
// op has no lowering (unless options turn it into a host node).
LoopProgram lower_to_loop_ir(const Graph& core, const LoweringOptions& opts = {});

// Text forms. print_loop_node without `buffer_dtypes` is the readable form (comments in
// generated code); print_loop_ir is exact: parse_loop_ir(print_loop_ir(p)) rebuilds p (every
// field, dtypes included), so print -> parse -> print is the identity (tests/test_loopir.cpp
// checks it on every workload). Grammar: docs/handlers.md, "Loop IR text".
std::string print_loop_node(const LoopNode& n, const std::map<std::string, DType>* buffer_dtypes = nullptr);
std::string print_loop_ir(const LoopProgram& p);
// Throws InputError naming SOURCE:LINE and what was expected; the result is verified.
LoopProgram parse_loop_ir(const std::string& text, const std::string& source = "<text>");
// parse_loop_ir(text) where `text` is print_loop_ir(base) but for the lines marked in
// `changed_lines` (one flag per line of `text`): only the buffers and nodes on those lines are
// parsed; the rest are base's. Falls back to parse_loop_ir where another line changed or the
// layout differs. Not verified (verify_loop_ir costs more than the parse): for texts a
// front-end template derives from verified programs (driver/front_end_template.h), whose
// guard is checked by compiling in full; never for text from a user.
LoopProgram reparse_loop_ir(const LoopProgram& base, const std::string& text, const std::vector<bool>& changed_lines,
                            const std::string& source = "<text>");

// Checks what every pass after lowering relies on, and throws InputError naming the program,
// the node and the broken rule: unique node names; each buffer read or written exists and
// matches the access's dtype; loop variables are those of the node's ranges (store indices
// use output variables only); every index stays inside its buffer over the ranges; readers
// come after every writer of a buffer; node kinds have the ranges they need; inputs and
// outputs name buffers of the right role. Runs after lowering (driver) and after parsing.
void verify_loop_ir(const LoopProgram& p);

}  // namespace lpu
