#include "passes/passes.h"

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
    if (n.kind != NodeKind::Call) live[i] = true;  // inputs and the output are always kept
    if (!live[i]) continue;
    for (NodeId in : n.inputs) live[static_cast<size_t>(in)] = true;
  }
  Graph out(g.name());
  std::vector<NodeId> map(g.size(), -1);
  for (const Node& n : g.nodes()) {
    if (!live[static_cast<size_t>(n.id)]) continue;
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) in.push_back(map[static_cast<size_t>(i)]);
    map[static_cast<size_t>(n.id)] = copy_node(out, n, in);
  }
  return out;
}

std::vector<Pass> default_passes() {
  return {{"verify", verify_graph},
          {"decompose", decompose},
          {"split_reductions", split_reductions},
          {"fold_constants", fold_constants},
          {"cse", eliminate_common_subexpressions},
          {"dce", eliminate_dead_code}};
}

Graph run_passes(const Graph& g, const std::vector<Pass>& passes,
                 const std::function<void(const std::string&, const Graph&)>& after_pass) {
  Graph cur = g;
  cur.verify();
  for (const auto& p : passes) {
    cur = p.run(cur);
    cur.verify();
    if (after_pass) after_pass(p.name, cur);
  }
  return cur;
}

}  // namespace lpu
