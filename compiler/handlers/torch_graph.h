// The eager PyTorch spelling of a core graph (`lpu compile --emit torch` writes it as
// torch_graph.py): one torch call per core op, in graph order, in the graph's dtypes. It is what
// a user would have written in PyTorch for the computation lpu compiled, so a GPU harness can
// run it eagerly, hand it to torch.compile (Inductor) and compare both with lpu's own kernels on
// the same inputs (scripts/triton_check.py).
//
// The module (Python 3, imports only torch):
//   INPUTS   [(name, dtype, shape)] of the graph's placeholders and parameters, graph order
//   OUTPUTS  the result names, in order (the loop program's output buffers, as BUFFER_PLAN's)
//   forward(*args) -> tuple of results; args in INPUTS order, already on the device and in
//            their dtype (what torch.compile is given)
//   prepare(inputs, device="cuda") -> args: {name: tensor} moved and converted for forward
//   run(inputs, device="cuda") -> {output name: tensor}
// Element-wise ops and host ops go through torch_python.h's tables (the Triton launcher's graph
// breaks use the same ones); the others are spelled here, following ref/reference.cpp.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace lpu {

// `output_names[i]` names the graph's output i. Throws InputError for an op with no core
// semantics (a composite left in the graph) or a count of names that differs from the outputs.
std::string emit_torch_graph_module(const Graph& core, const std::vector<std::string>& output_names);

}  // namespace lpu
