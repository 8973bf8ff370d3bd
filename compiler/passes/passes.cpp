#include "passes/passes.h"

#include <cstdlib>

#include "support/error.h"

namespace lpu {

NodeId copy_input_node(Graph& out, const Node& n) {
  NodeId id = n.kind == NodeKind::Placeholder ? out.add_placeholder(n.name, n.type) : out.add_parameter(n.name, n.type);
  out.node(id).attrs = n.attrs;
  return id;
}

NodeId copy_node(Graph& out, const Node& n, const std::vector<NodeId>& in) {
  switch (n.kind) {
    case NodeKind::Placeholder:
    case NodeKind::Parameter: return copy_input_node(out, n);
    case NodeKind::Call: return out.add_call_typed(n.op, in, n.attrs, n.name, n.type);
    case NodeKind::Output: return out.set_output(in);
  }
  throw InternalError("copy_node: unknown node kind");
}

Graph verify_graph(const Graph& g) {
  g.verify();
  return g;
}

Graph eliminate_dead_code(const Graph& g) {
  std::vector<bool> live(g.size(), false);
  for (size_t i = g.size(); i-- > 0;) {
    const Node& n = g.node(static_cast<NodeId>(i));
    if (n.kind == NodeKind::Output) live[i] = true;  // inputs are kept only where read: an unread
                                                      // input is no traffic (e.g. a KV cache's
                                                      // position counter whose update was dropped)
    if (!live[i]) continue;
    for (NodeId in : n.inputs) live[static_cast<size_t>(in)] = true;
  }
  Graph out(g.name());
  out.reserve(g.size());
  std::vector<NodeId> map(g.size(), -1);
  for (const Node& n : g.nodes()) {
    if (!live[static_cast<size_t>(n.id)]) continue;
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) in.push_back(map[static_cast<size_t>(i)]);
    map[static_cast<size_t>(n.id)] = copy_node(out, n, in);
  }
  return out;
}

Graph drop_empty_tensors(const Graph& g) {
  auto empty = [&](NodeId id) { return g.node(id).type.numel() == 0; };
  Graph out(g.name());
  out.reserve(g.size());
  std::vector<NodeId> map(g.size(), -1);
  for (const Node& n : g.nodes()) {
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) in.push_back(map[static_cast<size_t>(i)]);
    if (n.kind == NodeKind::Call && n.op == "cat" && !empty(n.id)) {
      std::vector<NodeId> kept;
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (!empty(n.inputs[k])) kept.push_back(in[k]);
      // One operand left: the cat is that operand (the decomposition cast it to the cat's dtype).
      if (kept.size() == 1 && out.node(kept[0]).type == n.type) {
        map[static_cast<size_t>(n.id)] = kept[0];
        continue;
      }
      in = kept;
    }
    for (size_t k = 0; k < n.inputs.size() && n.kind != NodeKind::Call; ++k)
      if (empty(n.inputs[k])) throw InputError(strcat("graph output %", g.node(n.inputs[k]).name, ": shape ",
                                                      shape_str(g.node(n.inputs[k]).type.shape), " is empty"));
    map[static_cast<size_t>(n.id)] = copy_node(out, n, in);
  }
  // Whatever still reads an empty tensor now is not a cat: name the reader and the tensor.
  for (const Node& n : out.nodes())
    for (NodeId i : n.inputs)
      if (n.kind == NodeKind::Call && out.node(i).type.numel() == 0)
        throw InputError(strcat("node %", n.name, " (", n.op, ") reads %", out.node(i).name, " of shape ",
                                shape_str(out.node(i).type.shape),
                                ", which is empty: empty tensors are supported only as operands of cat"));
  return out;
}

std::vector<Pass> default_passes() {
  // No verify pass first: run_passes verifies its input (a verify pass there checked the same
  // graph twice more and copied it).
  return {{"decompose", decompose},
          {"split_reductions", split_reductions},
          {"drop_empty_tensors", drop_empty_tensors},
          {"fold_constants", fold_constants},
          {"cse", eliminate_common_subexpressions},
          {"split_row_selects", split_row_selects},
          {"outer_product_matmuls", outer_product_matmuls},
          {"dot_product_matmuls", dot_product_matmuls},
          {"gathered_weights_as_b", gathered_weights_as_b},
          {"dce_before_layouts", eliminate_dead_code},
          {"simplify_unit_dims", simplify_unit_dims},
          {"pointwise_into_cat", pointwise_into_cat},
          {"cse_after_rewrites", eliminate_common_subexpressions},
          {"dce", eliminate_dead_code}};
}

Graph run_passes(const Graph& g, const std::vector<Pass>& passes,
                 const std::function<void(const std::string&, const Graph&)>& after_pass) {
  g.verify();
  if (passes.empty()) return g;
  // Each pass reads the previous one's graph (the input, not a copy of it, for the first).
  Graph cur;
  const Graph* in = &g;
  // Every pass's output is verified where a broken pass should be caught at the pass (builds
  // with assertions: the sanitizer build of CI; or LPU_VERIFY_EACH_PASS=1 in the environment);
  // elsewhere only the last graph is. A pass's output is the compiler's own, not input: checking
  // it after each of the 14 default passes cost 9% of a decode step's compile (callgrind).
#ifdef NDEBUG
  static const bool each = std::getenv("LPU_VERIFY_EACH_PASS") != nullptr;
#else
  constexpr bool each = true;
#endif
  for (size_t i = 0; i < passes.size(); ++i) {
    cur = passes[i].run(*in);
    in = &cur;
    if (each || i + 1 == passes.size()) cur.verify();
    if (after_pass) after_pass(passes[i].name, cur);
  }
  return cur;
}

}  // namespace lpu
