// Splits a reduction over several dims into single-dim reductions, innermost dim first
// (sum/amax/amin compose exactly; a mean of equal-count means is the mean). The LPU tiles a
// reduction as rows x one strided column walk, which a set of non-adjacent dims is not.
#include "graph/ops.h"
#include "passes/passes.h"
#include "support/error.h"

namespace lpu {

Graph split_reductions(const Graph& g) {
  Graph out(g.name());
  out.reserve(g.size());
  std::vector<NodeId> map(g.size(), -1);
  for (const Node& n : g.nodes()) {
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) in.push_back(map[static_cast<size_t>(i)]);
    const OpInfo* info = n.kind == NodeKind::Call ? find_op(n.op) : nullptr;
    if (info && info->category == OpCategory::Reduction) {
      auto dims = normalize_dims(n.attr_ints("dims"), g.node(n.inputs[0]).type.rank(), n);
      if (dims.size() > 1) {
        NodeId cur = in[0];
        for (size_t k = dims.size(); k-- > 0;) {
          Attrs a = n.attrs;
          a["dims"] = std::vector<int64_t>{dims[k]};
          a["keepdim"] = true;
          cur = out.add_call(n.op, {cur}, a, n.name + "_d" + std::to_string(dims[k]));
        }
        if (!n.attr_bool("keepdim", false))
          cur = out.add_call("reshape", {cur}, {{"shape", n.type.shape}}, n.name);
        map[static_cast<size_t>(n.id)] = cur;
        continue;
      }
    }
    map[static_cast<size_t>(n.id)] = copy_node(out, n, in);
  }
  return out;
}

}  // namespace lpu
