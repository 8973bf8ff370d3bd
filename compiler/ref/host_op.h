// Graph breaks at run time: what the host does for a `host.call` (isa/program.h HostOp).
// The host computes the node with the reference executor's semantics, so a graph with
// breaks gives the same numbers as one without (up to the LPU's own rounding elsewhere).
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ref/tensor.h"

namespace lpu {

// Node attributes <-> compact JSON (the .hostop directive and the binary host-op table).
std::string attrs_to_json(const Attrs& a);
Attrs attrs_from_json(const std::string& json);  // throws InputError on malformed text

// Runs one core op on given operand tensors; `out_type` is the result's type.
// Throws InputError naming `node` when the op is not a core op.
Tensor run_host_op(const std::string& op, const std::string& node, const Attrs& attrs, const TensorType& out_type,
                   const std::vector<const Tensor*>& inputs);

}  // namespace lpu
