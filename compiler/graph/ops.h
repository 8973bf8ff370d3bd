// The op registry: every op the graph IR knows, with its category, arity and type inference.
// Three other tables are keyed by the same names and together say what an op means:
//   passes/decompose.cpp   composite op -> core ops        (only for Composite ops)
//   ref/reference.cpp      reference semantics on real data (core ops)
//   loopir/lower.cpp       per-element loop IR               (core ops)
// Adding an op = one entry here + its entry in those tables (see README "Adding an op").
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace lpu {

enum class OpCategory {
  Pointwise,  // element-wise with numpy broadcasting
  Reduction,  // sum/mean/amax/amin over `dims`, optional keepdim
  Constant,   // full: a constant tensor, no inputs
  Composite,  // decomposed into core ops by passes/decompose.cpp
  Matmul,     // matrix engine
  View,       // reshape/permute/expand/slice: no data movement, an index remapping
  Concat,     // cat: producers write into slices of one buffer
  Gather,     // embedding: rows selected by an index tensor
};
const char* op_category_name(OpCategory c);

struct OpInfo {
  std::string name;
  OpCategory category;
  int min_inputs;
  int max_inputs;
  std::function<TensorType(const Graph&, const Node&)> infer;
  std::string doc;
  bool core() const { return category != OpCategory::Composite; }
};

const OpInfo* find_op(const std::string& name);
const std::vector<OpInfo>& all_ops();

// numpy-style broadcast of two shapes; throws InputError naming `node` on mismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b, const Node& node);
// Normalise reduction dims (negative -> positive, sorted, unique) for a tensor of rank r.
std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int rank, const Node& node);

}  // namespace lpu
