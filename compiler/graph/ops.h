// The op registry: every op the graph IR knows, with its category, arity and type inference
// (the aten.* entries live in graph/aten_ops.cpp). Other tables are keyed by the same names and
// together say what an op means (the core op set: docs/core-ops.md):
//   passes/decompose.cpp            our composite ops -> core ops
//   passes/aten_decompositions.cpp  aten.* ops -> core ops
//   ref/reference.cpp               reference semantics on real data (core ops)
//   loopir/lower.cpp                per-element loop IR, one lowering per category (core ops)
// A reduction op means its ReductionType (ops/reduction.h: graph_reduction_type); a movement
// op's MovementKind says whether it is a view, a concatenation or a gather.
// Adding an op = one entry here + its entry in those tables (see docs/core-ops.md "Adding an op").
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
  Composite,  // decomposed into core ops by passes/decompose.cpp (incl. the aten.* ops)
  Matmul,     // matrix engine
  Movement,   // data movement without arithmetic: reshape permute expand slice cat embedding
  Host,       // no LPU lowering (sort, cumsum, scatter, ...): always a priced graph break; the
              // host computes it with the reference semantics of ref/host_ops.cpp
  Collective, // all_reduce, all_gather: ranks of a partitioned graph exchange data over the
              // ESL (graph/collective.h); coded as esl.send + sync, never fused
};
const char* op_category_name(OpCategory c);

// What a Movement op does with its data. Together with the category it decides the op's
// lowering (loopir/lower.cpp) and what passes may assume of it; ask it instead of listing names.
enum class MovementKind {
  None,    // not a movement op
  View,    // reshape permute expand slice: an index function over the input, no data moves
  Concat,  // cat: each input copied into its slice of one buffer
  Gather,  // embedding: rows of a table picked by loaded indices
};

struct OpInfo {
  std::string name;
  OpCategory category;
  int min_inputs;
  int max_inputs;
  std::function<TensorType(const Graph&, const Node&)> infer;
  std::string doc;
  MovementKind movement = MovementKind::None;
  bool core() const { return category != OpCategory::Composite; }
  bool host() const { return category == OpCategory::Host; }
  bool view() const { return movement == MovementKind::View; }
};

const OpInfo* find_op(const std::string& name);
// An InputError naming the node when its input count is outside the op's [min, max].
void check_arity(const OpInfo& info, const Node& n);
const std::vector<OpInfo>& all_ops();
// Node `n` is a call of a view op (MovementKind::View); false for other nodes and unknown ops.
bool is_view_op(const Node& n);

// numpy-style broadcast of two shapes; throws InputError naming `node` on mismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b, const Node& node);
// Normalise reduction dims (negative -> positive, sorted, unique) for a tensor of rank r.
std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int rank, const Node& node);
// One dim in [-rank, rank) -> [0, rank); throws InputError naming `node` otherwise.
int64_t normalize_dim(int64_t dim, int rank, const Node& node);

// The canonical range of a `slice` node over a dim of size `size` (torch semantics: negative
// start/end count from the end, both clamped to [0, size]).
struct SliceRange {
  int64_t start = 0, end = 0, step = 1;
  int64_t length() const { return end > start ? (end - start + step - 1) / step : 0; }
};
SliceRange slice_range(const Node& n, int64_t size);

}  // namespace lpu
