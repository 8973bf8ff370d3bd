// Internal to passes/: the builder that decomposition entries use, and the two tables
//   composite_decompositions()  our own composite ops (layer_norm, gelu, ...)  decompose.cpp
//   aten_decompositions()       every aten.* op                               aten_decompositions.cpp
// An entry builds core ops (or other composites, expanded recursively) into the new graph
// from the node's already-mapped inputs and returns the node holding the result, which must
// have the decomposed node's exact type.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace lpu {

struct Builder {
  Graph& g;
  const Node& src;  // the node being expanded: its attrs and type; new nodes are named after it

  // Adds `op`; a Composite op is expanded on the spot (recursively).
  NodeId call(const std::string& op, std::vector<NodeId> in, Attrs attrs = {}, const std::string& suffix = "");
  NodeId scalar(double v);           // a zero-dim `full` of the result's dtype
  NodeId scalar(double v, DType t);  // a zero-dim `full` of dtype t
  NodeId cast(NodeId x, DType t);    // to_dtype, or x itself when it already is t
  NodeId reshape(NodeId x, const Shape& s);  // reshape, or x itself when the shape is already s
  NodeId mean_last(NodeId x);        // mean over the last dim, keepdim
  const TensorType& type(NodeId x) const { return g.node(x).type; }
};

using Expander = std::function<NodeId(Builder&, const std::vector<NodeId>&)>;

const std::map<std::string, Expander>& composite_decompositions();
const std::map<std::string, Expander>& aten_decompositions();

// Expands node `n` (from another graph) into `out`, its inputs already mapped to `in`.
// Throws InputError when `n.op` has no decomposition.
NodeId expand_node(Graph& out, const Node& n, const std::vector<NodeId>& in);

// A host op's core form where it has one in this use (host_decompositions.cpp: topk, index),
// else nullopt and the op stays a graph break.
std::optional<NodeId> decompose_host_op(Graph& out, const Node& n, const std::vector<NodeId>& in);

}  // namespace lpu
