// The loop-level IR (TorchInductor's Pointwise / Reduction, re-done in C++).
// Every core op of a graph becomes one LoopNode that computes one buffer element by element:
//   Pointwise  out[store_index(i)] = body(i)                 for i in ranges
//   Reduction  out[store_index(i)] = reduce_{r} body(i, r)    for i in ranges, r in reduction_ranges
// Loop variables are named i0, i1, ... (ranges) and r0, r1, ... (reduction ranges).
// Fusion never rewrites these nodes: a kernel is a list of them (schedule/), and code for any
// target comes from walking bodies with an ops handler (handlers/).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "loopir/expr.h"

namespace lpu {

enum class BufferRole { Input, Weight, Intermediate, Output };
const char* buffer_role_name(BufferRole r);

struct Buffer {
  std::string name;  // = the graph node that defines it
  TensorType type;
  BufferRole role = BufferRole::Intermediate;
  std::vector<int64_t> strides;  // elements; contiguous row-major for now
  int64_t offset = 0;
  int64_t bytes() const { return type.bytes(); }
};

// Every reduction a Reduction node (and the VXE, as vxe.rNAME) can do; semantics in
// loopir/reduce.h. A new type gets a line here and a case in Reducer and in each handler that
// emits reductions as text (the compiler's -Wswitch names them).
#define LPU_REDUCTION_TYPES(X) X(sum) X(max) X(min) X(mean) X(prod) X(argmax) X(var)

enum class ReductionType {
#define LPU_ENUM_RED(name) name,
  LPU_REDUCTION_TYPES(LPU_ENUM_RED)
#undef LPU_ENUM_RED
};
const char* reduction_type_name(ReductionType t);
bool parse_reduction_type(const std::string& name, ReductionType& out);

enum class LoopKind { Pointwise, Reduction };

struct LoopNode {
  std::string name;     // = its output buffer
  std::string origin;   // graph node it was lowered from
  LoopKind kind = LoopKind::Pointwise;
  std::vector<int64_t> ranges;
  std::vector<int64_t> reduction_ranges;
  ReductionType reduction = ReductionType::sum;
  Expr body;
  Index store_index;
  DType dtype = DType::f32;

  // Row/column view used by fusion legality and by tiling on the LPU: rows are the
  // flattened output dims except the innermost pointwise dim; columns are the innermost
  // pointwise dim, or the flattened reduction dims of a reduction.
  std::vector<std::string> row_vars() const;
  std::vector<int64_t> row_sizes() const;
  std::vector<std::string> col_vars() const;
  std::vector<int64_t> col_sizes() const;
  int64_t rows() const;
  int64_t cols() const;        // the iteration width (reduction width for reductions)
  int64_t out_cols() const;    // columns of the result: cols() for pointwise, 1 for reductions
  std::vector<Expr> loads() const;  // every Load in the body, in first-visit order, deduplicated
};

// How a load (or store) walks memory in a node's row/column view:
//   element(row, col) = base + row_stride * row + col_stride * col
struct AccessPattern {
  bool ok = false;
  std::string why_not;  // set when !ok
  int64_t base = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};
AccessPattern analyze_access(const LoopNode& node, const Index& index);

struct LoopProgram {
  std::string name;
  std::map<std::string, Buffer> buffers;
  std::vector<LoopNode> nodes;            // topological order
  std::vector<std::string> inputs;        // graph placeholders and parameters, in graph order
  std::vector<std::string> outputs;       // graph outputs, in order
  std::map<std::string, double> constants;  // `full` nodes, inlined as constants
  const LoopNode* producer(const std::string& buffer) const;  // nullptr for inputs
};

// Lower a core-op graph (after passes/) to loop IR. Throws InputError naming the node when an
// op has no lowering.
LoopProgram lower_to_loop_ir(const Graph& core);

std::string print_loop_node(const LoopNode& n);
std::string print_loop_ir(const LoopProgram& p);

}  // namespace lpu
