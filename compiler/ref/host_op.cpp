#include "ref/host_op.h"

#include "ref/reference.h"
#include "support/error.h"

namespace lpu {

Tensor run_host_op(const std::string& op, const std::string& node, const Attrs& attrs, const TensorType& out_type,
                   const std::vector<const Tensor*>& inputs) {
  // A one-node graph through the reference executor: the semantics stay in one place.
  Graph g("host_op");
  std::vector<NodeId> ids;
  TensorMap feed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = strcat("host_in", i);
    ids.push_back(g.add_placeholder(name, inputs[i]->type));
    feed[name] = *inputs[i];
  }
  NodeId id = g.add_call_typed(op, ids, attrs, node, out_type);
  g.set_output({id});
  return run_reference(g, feed).at(0);
}

}  // namespace lpu
