// Graph breaks at run time: what the host does for a `host.call` (isa/program.h HostOp).
// The host computes the node with the reference executor's semantics, so a graph with
// breaks gives the same numbers as one without (up to the LPU's own rounding elsewhere).
#pragma once
#include <string>
#include <vector>

#include "graph/attrs_json.h"  // attrs_from_json: how a host.call's attributes are stored
#include "graph/graph.h"
#include "ref/tensor.h"

namespace lpu {

// Runs one core op on given operand tensors; `out_type` is the result's type.
// Throws InputError naming `node` when the op is not a core op.
Tensor run_host_op(const std::string& op, const std::string& node, const Attrs& attrs, const TensorType& out_type,
                   const std::vector<const Tensor*>& inputs);

}  // namespace lpu
