// Graph-level normalisation passes (the AOTAutograd counterpart). Each pass takes a graph and
// returns a new one; passes keep no state between runs.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace lpu {

// Checks the graph (Graph::verify: known ops, inferred types equal the declared ones, outputs
// computed) and returns it unchanged: the pipeline's first step, so bad input fails early.
Graph verify_graph(const Graph& g);
// Rewrites every Composite op into core ops, recursively: our composites (decompose.cpp)
// and every aten.* op (aten_decompositions.cpp).
Graph decompose(const Graph& g);
// Folds constants where the result is one repeated value (so nothing big is materialised):
// a parameter marked {splat = v} becomes `full`; an op whose inputs are all `full` becomes
// `full` (pointwise ops, reshape/permute/expand/slice, cat of equal values, reductions);
// x * 1 and x / 1 become x and where() on a constant condition picks its branch. Graph
// outputs are never replaced by constants (they must be computed).
Graph fold_constants(const Graph& g);
// Merges call nodes with the same op, inputs, attributes and type.
Graph eliminate_common_subexpressions(const Graph& g);
// Removes call nodes whose results no output depends on, and inputs nothing reads.
Graph eliminate_dead_code(const Graph& g);
// Drops empty operands of cat (as torch.cat does) and then rejects, naming the node, any
// tensor with no elements that something still reads: no kernel of the LPU works on an empty
// tensor, and an empty graph output has nothing to compute. Empty slices that fed only a cat
// are left unread, for eliminate_dead_code to remove.
Graph drop_empty_tensors(const Graph& g);
// Splits reductions over several dims into single-dim ones (the LPU reduces one strided walk).
Graph split_reductions(const Graph& g);
// Consumes row selects without materialising them: a matmul operand that is, through views
// (reshape, permute, expand) and pointwise ops broadcast along the axis, where(mask, rows, cache)
// with the mask varying along one axis only and `rows` of size 1 along it (a KV cache with one
// position overwritten) is computed from `cache` and `rows` directly. Along an output axis,
// matmul(A, sel) = where(mask, A·rows, A·cache); along B's reduced axis, matmul(A, sel) =
// where(mask, 0, A)·cache + sum(where(mask, A, 0)) * rows. Done only where every use of the
// select is such a matmul (conditions: row_select.cpp, docs/core-ops.md).
Graph split_row_selects(const Graph& g);
// Small-tensor layouts (layouts.cpp), so that cheap ops run inside the kernels that use them:
// a matmul with K = 1 ([..., M, 1] x [..., 1, N]) is a broadcast mul (one product per element).
Graph outer_product_matmuls(const Graph& g);
// A matmul of one row by one column ([..., 1, K] x [..., K, 1]: a decode step's score against
// its own new key) is a dot product: sum(mul(a, b^T), -1) runs on the vector engine in the
// kernel of its users, where the matrix engine would stream one column per row with the HBM
// latency each time.
Graph dot_product_matmuls(const Graph& g);
// Gathered weights on the A side (HuggingFace's batched_mm experts: W[ids] @ x, [R, M, K] x
// [R, K, 1]) move to the B side, (x^T W[ids]^T)^T, so the matrix engine streams them straight
// from the table (sxe.gemm_gather) instead of the gather writing them to HBM to be read back.
// Only where A is, through reshapes, an embedding of a graph input and N is 1 (every transpose
// then a view).
Graph gathered_weights_as_b(const Graph& g);
// A pointwise op laid out as a column (last dim 1, several rows: one element per row) whose
// users are all the same view that only rearranges size-1 dims (a reshape inserting or removing
// them, a permute moving only them), into a shape that is not a column, is computed in that
// shape (its operands reshaped alike). Repeated until nothing changes, so a chain moves whole.
Graph simplify_unit_dims(const Graph& g);
// A unary pointwise op of a cat is the cat of the op on each operand, f(cat(a, b)) =
// cat(f(a), f(b)), when f could not run in the kernel of any of its users (none, seen through
// views, has as many rows): then f runs with the operands' producers instead of in a kernel of
// its own after the concatenation (which goes through HBM).
Graph pointwise_into_cat(const Graph& g);

// Copies a placeholder or parameter (name, type and attrs) into `out`.
NodeId copy_input_node(Graph& out, const Node& n);
// Copies any node into `out` unchanged, its inputs already mapped to `in` (passes that rebuild
// a graph copy every node they do not rewrite).
NodeId copy_node(Graph& out, const Node& n, const std::vector<NodeId>& in);

struct Pass {
  std::string name;
  std::function<Graph(const Graph&)> run;
};

// The default normalisation pipeline: decompose, split_reductions, drop_empty_tensors,
// fold_constants, cse, split_row_selects, outer_product_matmuls, dot_product_matmuls,
// gathered_weights_as_b, dce,
// simplify_unit_dims,
// pointwise_into_cat, cse (what the rewrites duplicated), dce.
// run_passes verifies the graph before the first pass and after the last; after each one too
// where assertions are on (not NDEBUG) or LPU_VERIFY_EACH_PASS is set.
std::vector<Pass> default_passes();
Graph run_passes(const Graph& g, const std::vector<Pass>& passes,
                 const std::function<void(const std::string&, const Graph&)>& after_pass = {});

}  // namespace lpu
