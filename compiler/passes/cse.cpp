// Common-subexpression elimination: a call with the same op, (already merged) inputs,
// attributes and type as an earlier one is replaced by it. Decompositions emit a fresh
// zero-dim `full` per use of a constant, and native_layer_norm's results each recompute the
// mean; this pass is what shares them.
#include <unordered_map>

#include "passes/passes.h"

namespace lpu {

Graph eliminate_common_subexpressions(const Graph& g) {
  Graph out(g.name());
  out.reserve(g.size());
  std::vector<NodeId> map(g.size(), -1);
  std::unordered_map<std::string, NodeId> seen;
  for (const Node& n : g.nodes()) {
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) in.push_back(map[static_cast<size_t>(i)]);
    NodeId id = -1;
    switch (n.kind) {
      case NodeKind::Placeholder:
      case NodeKind::Parameter: id = copy_input_node(out, n); break;
      case NodeKind::Output: id = out.set_output(in); break;
      case NodeKind::Call: {
        // The key spells out everything that decides the value; attrs print canonically.
        std::string key = n.op + "|" + type_str(n.type) + "|";
        for (NodeId i : in) key += std::to_string(i) + ",";
        for (const auto& [k, v] : n.attrs) key += "|" + k + "=" + format_attr(v);
        auto it = seen.find(key);
        if (it != seen.end()) {
          id = it->second;
        } else {
          id = out.add_call_typed(n.op, in, n.attrs, n.name, n.type);
          seen.emplace(key, id);
        }
        break;
      }
    }
    map[static_cast<size_t>(n.id)] = id;
  }
  return out;
}

}  // namespace lpu
