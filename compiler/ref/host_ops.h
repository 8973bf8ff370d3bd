// Host ops: ATen ops the LPU has no sensible lowering for (sort, top-k, scatter, cumulative
// sums, data-dependent indexing, pooling, convolution, random numbers, backward ops...). Each is
// a core op of category Host under its ATen name (aten.sort, ...): decomposition leaves it as
// it is, the lowering always turns it into a graph break (docs/graph-breaks.md), priced on
// the host, and the host computes it with the semantics here (also the reference executor's).
// One table in host_ops.cpp holds, per op: name, arity, type inference, semantics, doc.
// Argument conventions: graph/aten.h (attrs by schema name, `result` for multi-result ops).
#pragma once
#include <vector>

#include "graph/graph.h"
#include "ref/tensor.h"

namespace lpu {

struct OpInfo;

namespace host_ops {

std::vector<OpInfo> registry();  // the Host entries of the op registry

// Whether the op has host semantics in functional mode (a few backward and signal-processing
// ops are priced in timing runs only).
bool has_semantics(const std::string& op);

// Computes host op `n` on its inputs; InputError naming the node for bad data (an index out
// of range) or an op without functional semantics.
Tensor evaluate(const Node& n, const std::vector<const Tensor*>& in);

}  // namespace host_ops
}  // namespace lpu
